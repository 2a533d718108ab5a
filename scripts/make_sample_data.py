"""Generate the bundled demo table sample_data/census_demo.csv and its public schema.

A census-like table of people with real dependencies: education sets years of schooling and
shapes occupation; age drives marital status, which with sex sets the household relationship;
hours cluster at 40; capital gains are mostly zero; income (the binary target) follows a
logistic model of all of these. The schema is written from the generator's own vocabularies
and bounds, never from the rows, so it is public knowledge by construction.

    python scripts/make_sample_data.py [--rows 4000] [--seed 0] [--out-dir sample_data]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

EDUCATION = {  # level: (years of schooling, share of adults)
    "Some-HS": (9, 0.09), "HS-grad": (10, 0.32), "Some-college": (11, 0.22),
    "Assoc": (12, 0.08), "Bachelors": (13, 0.17), "Masters": (14, 0.08),
    "Prof-school": (15, 0.02), "Doctorate": (16, 0.02),
}
RACE = {"White": 0.80, "Black": 0.10, "Asian-Pac-Islander": 0.06, "Amer-Indian": 0.02,
        "Other": 0.02}
REGION = {"Northeast": 0.18, "Midwest": 0.21, "South": 0.38, "West": 0.23}
WORKCLASS = ("Private", "Self-employed", "Government", "Without-pay")
OCCUPATIONS = ("Professional", "Managerial", "Clerical", "Sales", "Service", "Craft",
               "Transport", "Farming")
MARITAL = ("Never-married", "Married", "Divorced", "Widowed")
RELATIONSHIP = ("Husband", "Wife", "Own-child", "Not-in-family", "Unmarried")
SEX = ("Female", "Male")
INCOME = ("<=50K", ">50K")
SHARPNESS = 2.0  # scales the income model: clear enough signal for a depth-10 tree
BOUNDS = {"age": (17, 90), "education_years": (1, 16), "hours_per_week": (1, 99),
          "capital_gain": (0, 99_999)}
ORDER = ["age", "sex", "race", "region", "education", "education_years", "marital_status",
         "relationship", "workclass", "occupation", "hours_per_week", "capital_gain", "income"]


def _pick(rng: np.random.Generator, options, weights) -> np.ndarray:
    """One draw per row from per-row weights (rows of ``weights`` are normalised here)."""
    w = np.asarray(weights, dtype=float)
    w = w / w.sum(axis=-1, keepdims=True)
    u = rng.random(w.shape[0])[:, None]
    idx = (u > np.cumsum(w, axis=1)).sum(axis=1)
    return np.asarray(options, dtype=object)[np.minimum(idx, len(options) - 1)]


def generate(rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = rows
    age = np.clip(np.round(17 + rng.gamma(3.0, 7.0, n)), 17, 90).astype(int)
    sex = _pick(rng, SEX, np.tile([0.48, 0.52], (n, 1)))
    race = _pick(rng, list(RACE), np.tile(list(RACE.values()), (n, 1)))
    region = _pick(rng, list(REGION), np.tile(list(REGION.values()), (n, 1)))

    levels = list(EDUCATION)
    base = np.array([share for _, share in EDUCATION.values()])
    young = (age < 23)[:, None]  # the young have not finished degrees yet
    edu_w = np.where(young, base * np.array([2.0, 1.6, 1.8, 0.5, 0.3, 0.05, 0.01, 0.01]), base)
    education = _pick(rng, levels, edu_w)
    years = np.array([EDUCATION[e][0] for e in education])

    p_married = 1 / (1 + np.exp(-(age - 30) / 5)) * 0.75
    p_widowed = np.clip((age - 55) / 120, 0, 0.3)
    p_divorced = np.where(age > 28, 0.14, 0.02)
    marital_w = np.column_stack([1 - p_married - p_widowed - p_divorced, p_married,
                                 p_divorced, p_widowed]).clip(0.01)
    marital = _pick(rng, MARITAL, marital_w)

    male = sex == "Male"
    married = marital == "Married"
    rel = np.where(married, np.where(male, "Husband", "Wife"), "")
    single_w = np.column_stack([np.where(age < 25, 0.6, 0.08), np.full(n, 0.6),
                                np.where(marital == "Never-married", 0.1, 0.5)])
    single = _pick(rng, ["Own-child", "Not-in-family", "Unmarried"], single_w)
    relationship = np.where(married, rel, single)

    skill = (years - 9) / 7  # 0 … 1
    occ_w = np.column_stack([
        0.05 + 0.6 * skill, 0.05 + 0.3 * skill, 0.15 + 0.1 * ~male, np.full(n, 0.12),
        0.18 - 0.1 * skill + 0.05 * ~male, 0.2 * (1 - skill) * (0.3 + male),
        0.1 * (1 - skill) * (0.3 + male), 0.03 + 0.02 * (region == "Midwest")]).clip(0.005)
    occupation = _pick(rng, OCCUPATIONS, occ_w)
    work_w = np.column_stack([np.full(n, 0.72), 0.06 + 0.1 * (age > 40), np.full(n, 0.14),
                              np.full(n, 0.01)])
    workclass = _pick(rng, WORKCLASS, work_w).astype(object)
    workclass[rng.random(n) < 0.04] = np.nan  # missing answers: a category of their own

    full_time = rng.random(n) < np.where(male, 0.55, 0.45)
    spread = np.round(rng.normal(np.where(male, 43, 37), 11)).astype(int)
    hours = np.clip(np.where(full_time, 40, spread), 1, 99)
    part_time = (age < 22) & (rng.random(n) < 0.5)  # students
    hours[part_time] = np.clip(np.round(rng.normal(22, 8, part_time.sum())), 1, 99)
    has_gain = rng.random(n) < 0.03 + 0.08 * skill + 0.04 * (age > 45)
    gain = np.where(has_gain, np.round(np.exp(rng.normal(8.3, 1.0, n))), 0)
    gain = np.clip(gain, 0, 99_999).astype(int)

    logit = (-10.7 + 0.42 * years + 0.085 * np.minimum(age, 55) - 0.0012 * np.maximum(age - 55, 0)
             ** 2 + 0.03 * (hours - 40) + 1.6 * married + 0.35 * male
             + 0.9 * np.isin(occupation, ["Professional", "Managerial"])
             + 2.5 * (gain > 5000) + 0.3 * (workclass == "Self-employed"))
    income = np.where(rng.random(n) < 1 / (1 + np.exp(-SHARPNESS * logit)), INCOME[1], INCOME[0])

    table = pd.DataFrame({
        "age": age, "sex": sex, "race": race, "region": region, "education": education,
        "education_years": years, "marital_status": marital, "relationship": relationship,
        "workclass": workclass, "occupation": occupation, "hours_per_week": hours,
        "capital_gain": gain, "income": income})
    return table[ORDER]


def public_schema() -> dict:
    """The demo's schema, from the generator's vocabularies: every domain is public."""
    categories = {"sex": SEX, "race": tuple(RACE), "region": tuple(REGION),
                  "education": tuple(EDUCATION), "marital_status": MARITAL,
                  "relationship": RELATIONSHIP, "workclass": (*WORKCLASS, "<missing>"),
                  "occupation": OCCUPATIONS, "income": INCOME}
    columns = []
    for name in ORDER:
        if name in BOUNDS:
            lo, hi = BOUNDS[name]
            columns.append({"name": name, "kind": "numeric", "lower": lo, "upper": hi,
                            "integer": True, "public": True})
        else:
            columns.append({"name": name, "kind": "categorical",
                            "categories": list(categories[name]), "public": True})
    return {"target": "income", "columns": columns}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-dir", type=Path,
                        default=Path(__file__).parent.parent / "sample_data")
    args = parser.parse_args(argv)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    generate(args.rows, args.seed).to_csv(args.out_dir / "census_demo.csv", index=False)
    (args.out_dir / "census_demo.schema.json").write_text(
        json.dumps(public_schema(), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.rows} rows to {args.out_dir / 'census_demo.csv'}")


if __name__ == "__main__":
    main()
