"""Generate the bundled person-month panel sample_data/panel_demo.csv and its public schema.

A labour-force-survey-like panel of made-up people (no real person is in it): about 1,500
persons, each observed for a spell of 1 to 24 consecutive months, one row per person-month.
Spells are skewed as in a rotating panel: many people answer a month or three, some a year,
a few all 24 months. Person-level traits (age, sex, region, a usual working week, a wage
level) persist over a person's rows; employment is a monthly Markov chain (losing a job is
rare, finding one likelier for the young), hours are 0 when not employed (and in the odd
month of leave) and cluster at 40 otherwise, and the monthly income band follows hours,
age, sex and region. So one person's rows are alike, and a long spell weighs on every
marginal: the table exists to show and test the **unit of protection** (``--privacy-unit
person_id --max-rows-per-unit K``), where record-level DP would protect a row, not a person.

The schema is written from the generator's own vocabularies and bounds, never from the rows,
so it is public knowledge by construction. It leaves out ``person_id``: the unit column is
never synthesised (a run drops it after keeping at most K rows per person).

    python scripts/make_panel_data.py [--persons 1500] [--seed 0] [--out-dir sample_data]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

MONTHS = 24
FULL = 0.12  # share of persons observed in all 24 months; the others' spells are shorter,
SPELL_DECAY = 5.0  # a spell of L < 24 months weighing exp(-L / 5): many short, some long
SEX = ("Female", "Male")
REGION = {"Capital": 0.22, "North": 0.14, "South": 0.20, "East": 0.16, "West": 0.18,
          "Islands": 0.10}
EMPLOYED = ("no", "yes")
INCOME = ("none", "under-1k", "1k-2k", "2k-3.5k", "3.5k+")  # monthly earnings band
CUTS = (1000.0, 2000.0, 3500.0)  # where the earning bands meet
LEAVE = 0.03  # share of employed months with no hours worked (leave, sickness)
BOUNDS = {"month": (1, MONTHS), "age": (16, 90), "hours_per_week": (0, 99)}
ORDER = ["person_id", "month", "age", "sex", "region", "employed", "hours_per_week",
         "income_band"]
UNIT = "person_id"
TARGET = "employed"


def _pick(rng: np.random.Generator, options, weights) -> np.ndarray:
    """One draw per row from per-row weights (rows of ``weights`` are normalised here)."""
    w = np.asarray(weights, dtype=float)
    w = w / w.sum(axis=-1, keepdims=True)
    u = rng.random(w.shape[0])[:, None]
    idx = (u > np.cumsum(w, axis=1)).sum(axis=1)
    return np.asarray(options, dtype=object)[np.minimum(idx, len(options) - 1)]


def _spells(rng: np.random.Generator, n: int) -> np.ndarray:
    """Months each person is observed: 24 for a share FULL, else 1 … 23, shorter likelier."""
    short = np.exp(-np.arange(1, MONTHS) / SPELL_DECAY)
    weights = np.r_[(1 - FULL) * short / short.sum(), FULL]
    return rng.choice(np.arange(1, MONTHS + 1), size=n, p=weights)


def generate(persons: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = persons
    # ---- per person --------------------------------------------------------------------
    length = _spells(rng, n)
    start = 1 + np.floor(rng.random(n) * (MONTHS - length + 1)).astype(int)
    age0 = np.clip(np.round(16 + rng.gamma(2.2, 12.0, n)), 16, 88).astype(int)
    birth = rng.integers(0, 12, n)  # months to the next birthday at month 1
    sex = _pick(rng, SEX, np.tile([0.51, 0.49], (n, 1)))
    region = _pick(rng, list(REGION), np.tile(list(REGION.values()), (n, 1)))
    male = sex == "Male"
    capital = region == "Capital"
    weak_region = np.isin(region, ["Islands", "South"])

    # each person's long-run chance of working: by age, sex and region, and their own
    prime = (age0 >= 25) & (age0 <= 59)
    mean_work = np.where(age0 >= 67, 0.06, np.where(age0 >= 60, 0.45, np.where(
        age0 < 20, 0.30, np.where(age0 < 25, 0.55, 0.80))))
    mean_work = np.clip(mean_work + 0.05 * male - 0.08 * weak_region + 0.03 * capital,
                        0.02, 0.95)
    p_work = rng.beta(6 * mean_work, 6 * (1 - mean_work))
    # monthly turnover (the young change status most), split so that p_work is the
    # chain's stationary share: finding a job at turnover·p, losing one at turnover·(1 − p)
    turnover = np.where(age0 < 25, 0.15, np.where(prime, 0.05, 0.08))
    find_rate, leave_rate = turnover * p_work, turnover * (1 - p_work)

    full_time = rng.random(n) < np.where(male, 0.62, 0.48)
    part_time = (age0 < 23) | (age0 >= 62) | (rng.random(n) < np.where(male, 0.05, 0.18))
    usual = np.where(full_time, 40, np.round(rng.normal(np.where(male, 44, 38), 9, n)))
    usual = np.where(part_time & ~full_time, np.round(rng.normal(22, 7, n)), usual)
    usual = np.clip(usual, 4, 80).astype(int)
    # hourly wage: rises to the mid-40s, higher for men and in the capital, person-specific
    experience = np.minimum(age0, 48) - 16
    log_wage = (2.35 + 0.035 * experience - 0.00045 * experience ** 2 + 0.12 * male
                + 0.15 * capital - 0.10 * weak_region + rng.normal(0, 0.32, n))

    # ---- per person-month --------------------------------------------------------------
    person = np.repeat(np.arange(n), length)
    offset = np.arange(len(person)) - np.repeat(np.cumsum(length) - length, length)
    month = start[person] + offset
    age = np.minimum(age0[person] + (offset + 12 - birth[person]) // 12, BOUNDS["age"][1])

    rows = len(person)
    employed = np.zeros(rows, dtype=bool)
    draws = rng.random(rows)
    first = offset == 0
    employed[first] = draws[first] < p_work[person[first]]
    for i in np.flatnonzero(~first):  # a Markov chain along each spell
        p = person[i]
        employed[i] = (draws[i] >= leave_rate[p]) if employed[i - 1] else (
            draws[i] < find_rate[p])

    wobble = rng.random(rows)
    hours = np.where(wobble < 0.75, usual[person],  # most months: the usual week
                     np.where(wobble < 0.85, 40, usual[person]
                              + np.round(rng.normal(0, 6, rows))))
    hours = np.clip(hours, 1, 80).astype(int)
    on_leave = rng.random(rows) < LEAVE
    hours = np.where(employed & ~on_leave, hours, 0)

    earnings = np.exp(log_wage[person] + rng.normal(0, 0.08, rows)) * hours * 4.33
    band = np.searchsorted(CUTS, earnings) + 1  # 1 … 4 for any pay
    benefits = rng.random(rows) < np.where(age >= 65, 0.85, 0.30)  # pension or benefit
    band = np.where(hours > 0, band, np.where(benefits, 1, 0))
    income = np.asarray(INCOME, dtype=object)[band]

    table = pd.DataFrame({
        "person_id": [f"P{p + 1:05d}" for p in person], "month": month, "age": age,
        "sex": sex[person], "region": region[person],
        "employed": np.asarray(EMPLOYED, dtype=object)[employed.astype(int)],
        "hours_per_week": hours, "income_band": income})
    return table[ORDER]


def public_schema() -> dict:
    """The panel's schema, from the generator's vocabularies: every domain is public, and the
    unit column (person_id) is not among the columns."""
    categories = {"sex": SEX, "region": tuple(REGION), "employed": EMPLOYED,
                  "income_band": INCOME}
    columns = []
    for name in ORDER:
        if name == UNIT:
            continue
        if name in BOUNDS:
            lo, hi = BOUNDS[name]
            columns.append({"name": name, "kind": "numeric", "lower": lo, "upper": hi,
                            "integer": True, "public": True})
        else:
            columns.append({"name": name, "kind": "categorical",
                            "categories": list(categories[name]), "public": True})
    return {"target": TARGET, "columns": columns}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--persons", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-dir", type=Path,
                        default=Path(__file__).parent.parent / "sample_data")
    args = parser.parse_args(argv)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    table = generate(args.persons, args.seed)
    table.to_csv(args.out_dir / "panel_demo.csv", index=False)
    (args.out_dir / "panel_demo.schema.json").write_text(
        json.dumps(public_schema(), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {len(table)} rows of {args.persons} persons to "
          f"{args.out_dir / 'panel_demo.csv'}")


if __name__ == "__main__":
    main()
