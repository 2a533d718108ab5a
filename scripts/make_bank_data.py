"""Generate a table shaped like UCI's Bank Marketing data, for checking private domains.

Made-up clients of a bank's telephone campaign (no real person is in it), with what makes
learning numeric domains privately hard: ages from 18 to 95 with a thin tail past 60, a
balance that is negative for about one client in twelve and heavy-tailed above (into six
figures), the day of the month, a call's duration and the number of calls (both
heavy-tailed), days since an earlier campaign's call (blank for the four in five never called
before) and how many calls that campaign made. The target ``y`` (did the client subscribe) is
rare, about 12 %, and follows duration, an earlier success, age, balance and the month, so
accuracy alone misleads as it does on the real table. Months are written as ``jan`` … ``dec``,
whose calendar order a schema declares.

The public schema is written from the generator's vocabularies and bounds, never from the
rows; :func:`categories_public` is the schema a steward without a codebook has (categories
known, every numeric bound to be learned privately).

    python scripts/make_bank_data.py [--rows 45000] [--seed 0] [--out-dir DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script or loaded by path
from generated_tables import main as cli
from generated_tables import pick, without_bounds

JOBS = {"management": 0.21, "blue-collar": 0.22, "technician": 0.17, "admin.": 0.11,
        "services": 0.09, "retired": 0.05, "self-employed": 0.035, "entrepreneur": 0.033,
        "unemployed": 0.029, "housemaid": 0.027, "student": 0.021, "unknown": 0.006}
MARITAL = ("married", "single", "divorced")
EDUCATION = ("primary", "secondary", "tertiary", "unknown")
YES_NO = ("no", "yes")
CONTACT = ("cellular", "telephone", "unknown")
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
MONTH_SHARE = (0.03, 0.06, 0.01, 0.065, 0.30, 0.12, 0.15, 0.14, 0.013, 0.016, 0.09, 0.005)
OUTCOMES = ("failure", "other", "success", "unknown")
# public bounds, as a codebook would give them
BOUNDS = {"age": (18, 100), "balance": (-10_000, 150_000), "day": (1, 31),
          "duration": (0, 5_000), "campaign": (1, 70), "pdays": (1, 900), "previous": (0, 300)}
ORDER = ["age", "job", "marital", "education", "default", "balance", "housing", "loan",
         "contact", "day", "month", "duration", "campaign", "pdays", "previous", "poutcome",
         "y"]


def generate(rows: int = 45_000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = rows
    job = pick(rng, list(JOBS), np.tile(list(JOBS.values()), (n, 1)))
    retired, student = job == "retired", job == "student"
    # ages: a working-age bulk, students young, the retired old (the tail to 95)
    age = 24 + rng.gamma(4.0, 4.2, n)
    age[student] = 18 + rng.gamma(2.0, 2.5, student.sum())
    age[retired] = 55 + rng.gamma(2.5, 4.5, retired.sum())
    age = np.clip(np.round(age), 18, 95).astype(int)
    married = np.clip(0.2 + 0.012 * (age - 20), 0.05, 0.8)
    marital = pick(rng, MARITAL, np.column_stack([married, 1 - married - 0.12,
                                                   np.full(n, 0.12)]).clip(0.01))
    tertiary = np.isin(job, ["management", "self-employed", "entrepreneur"])
    education = pick(rng, EDUCATION, np.where(tertiary[:, None], [0.05, 0.25, 0.66, 0.04],
                                               [0.18, 0.60, 0.18, 0.04]))
    default = pick(rng, YES_NO, np.tile([0.982, 0.018], (n, 1)))
    # balances: a lognormal bulk, one in twelve overdrawn, a heavy upper tail
    balance = rng.lognormal(6.3, 1.5, n) * (1 + 0.01 * (age - 40).clip(0))
    overdrawn = rng.random(n) < np.where(default == "yes", 0.6, 0.075)
    balance[overdrawn] = -rng.lognormal(5.3, 1.2, overdrawn.sum())
    balance = np.round(np.clip(balance, -8_019, 102_127)).astype(int)
    housing = pick(rng, YES_NO, np.where((age < 60)[:, None], [0.4, 0.6], [0.8, 0.2]))
    loan = pick(rng, YES_NO, np.tile([0.84, 0.16], (n, 1)))
    contact = pick(rng, CONTACT, np.tile([0.65, 0.06, 0.29], (n, 1)))
    day = np.clip(np.round(rng.normal(16, 8.3, n)), 1, 31).astype(int)
    month = pick(rng, MONTHS, np.tile(MONTH_SHARE, (n, 1)))
    duration = np.clip(np.round(rng.lognormal(5.2, 0.8, n)), 0, 4_918).astype(int)
    campaign = np.clip(1 + np.round(rng.pareto(1.6, n) * 1.5), 1, 63).astype(int)
    called = rng.random(n) < 0.18
    pdays = np.where(called, np.clip(np.round(rng.gamma(2.0, 110.0, n)), 1, 871), np.nan)
    previous = np.where(called, np.clip(1 + np.round(rng.pareto(1.3, n) * 2), 1, 275), 0)
    poutcome = np.where(called, pick(rng, ("failure", "other", "success"),
                                      np.tile([0.55, 0.22, 0.23], (n, 1))), "unknown")
    logit = (-3.4 + 0.0045 * duration + 2.3 * (poutcome == "success")
             + 0.9 * np.isin(month, ["mar", "sep", "oct", "dec"])
             + 0.025 * (age - 60).clip(0) + 0.7 * student + 0.00004 * balance.clip(0, 20_000)
             - 0.5 * (housing == "yes") - 0.06 * (campaign - 1))
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), "yes", "no")
    frame = pd.DataFrame({"age": age, "job": job, "marital": marital, "education": education,
                          "default": default, "balance": balance, "housing": housing,
                          "loan": loan, "contact": contact, "day": day, "month": month,
                          "duration": duration, "campaign": campaign,
                          "pdays": pd.array(pdays, dtype="Int64"),
                          "previous": previous.astype(int), "poutcome": poutcome, "y": y})
    return frame[ORDER]


def public_schema() -> dict:
    """Every domain public: the generator's vocabularies and the codebook's bounds."""
    vocab = {"job": list(JOBS), "marital": list(MARITAL), "education": list(EDUCATION),
             "default": list(YES_NO), "housing": list(YES_NO), "loan": list(YES_NO),
             "contact": list(CONTACT), "month": list(MONTHS), "poutcome": list(OUTCOMES),
             "y": list(YES_NO)}
    columns = []
    for name in ORDER:
        if name in BOUNDS:
            lo, hi = BOUNDS[name]
            columns.append({"name": name, "kind": "numeric", "lower": lo, "upper": hi,
                            "integer": True, "public": True,
                            "missing": "indicator" if name == "pdays" else "none"})
        else:
            columns.append({"name": name, "kind": "categorical", "categories": vocab[name],
                            "public": True})
    return {"target": "y", "columns": columns}


def categories_public() -> dict:
    """The schema of a steward without a codebook: categories public, bounds to be learned."""
    return without_bounds(public_schema())


def main(argv: list[str] | None = None) -> None:
    cli(__doc__, generate, public_schema, 45_000, "bank_like", argv)


if __name__ == "__main__":
    main()
