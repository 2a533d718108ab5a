"""Generate a table shaped like a telecom's customer-churn data: 7,000 rows, 20 columns.

Made-up customers (no real person is in it) with what makes such a table hard for a marginal
method: many yes/no service columns that depend on one another (no internet service means
"no internet service" in six add-on columns), a tenure in months from 0 to 72 piled up at
both ends, a monthly charge that follows the services taken, a total charge that is about
tenure × monthly charge (blank for the customers in their first month), and a churn flag
(about 28 %) that follows the contract, tenure, fibre and the payment method.

The public schema is written from the generator's vocabularies and bounds, never from the
rows; :func:`categories_public` is the schema of a steward without a codebook (categories
known, every numeric bound to be learned privately).

    python scripts/make_churn_data.py [--rows 7000] [--seed 0] [--out-dir DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script or loaded by path
from generated_tables import main as cli
from generated_tables import pick, without_bounds

YES_NO = ("No", "Yes")
LINES = ("No", "Yes", "No phone service")
INTERNET = ("DSL", "Fiber optic", "No")
ADD_ON = ("No", "Yes", "No internet service")
ADD_ONS = ("OnlineSecurity", "OnlineBackup", "DeviceProtection", "TechSupport", "StreamingTV",
           "StreamingMovies")
CONTRACT = ("Month-to-month", "One year", "Two year")
PAYMENT = ("Electronic check", "Mailed check", "Bank transfer (automatic)",
           "Credit card (automatic)")
BOUNDS = {"tenure": (0, 72), "MonthlyCharges": (18.0, 120.0), "TotalCharges": (18.0, 9000.0)}
ORDER = ["gender", "SeniorCitizen", "Partner", "Dependents", "tenure", "PhoneService",
         "MultipleLines", "InternetService", *ADD_ONS, "Contract", "PaperlessBilling",
         "PaymentMethod", "MonthlyCharges", "TotalCharges", "Churn"]


def generate(rows: int = 7_000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = rows
    gender = pick(rng, ("Female", "Male"), np.tile([0.5, 0.5], (n, 1)))
    senior = (rng.random(n) < 0.16).astype(int)
    partner = pick(rng, YES_NO, np.tile([0.52, 0.48], (n, 1)))
    dependents = pick(rng, YES_NO, np.where((partner == "Yes")[:, None], [0.5, 0.5],
                                             [0.9, 0.1]))
    contract = pick(rng, CONTRACT, np.where((partner == "Yes")[:, None], [0.45, 0.25, 0.30],
                                             [0.65, 0.18, 0.17]))
    # tenure piles up at both ends: new month-to-month customers, two-year ones at the cap
    long = np.select([contract == "Two year", contract == "One year"], [0.55, 0.3], 0.08)
    tenure = np.where(rng.random(n) < long, 72 - np.round(rng.gamma(1.2, 8.0, n)),
                      np.round(rng.gamma(0.9, 14.0, n)))
    tenure = np.clip(tenure, 0, 72).astype(int)
    phone = pick(rng, YES_NO, np.tile([0.1, 0.9], (n, 1)))
    lines = np.where(phone == "No", "No phone service",
                     pick(rng, YES_NO, np.column_stack([np.full(n, 0.6), 0.2 + tenure / 90])))
    internet = pick(rng, INTERNET, np.where((senior == 1)[:, None], [0.2, 0.7, 0.1],
                                             [0.36, 0.42, 0.22]))
    frame = {"gender": gender, "SeniorCitizen": senior, "Partner": partner,
             "Dependents": dependents, "tenure": tenure, "PhoneService": phone,
             "MultipleLines": lines, "InternetService": internet}
    charge = 20 + 5 * (lines == "Yes") + np.select(
        [internet == "Fiber optic", internet == "DSL"], [50.0, 25.0], 0.0)
    for k, name in enumerate(ADD_ONS):
        takes = 0.25 + 0.004 * tenure + (0.15 if k >= 4 else 0.0) * (internet == "Fiber optic")
        value = np.where(internet == "No", "No internet service",
                         pick(rng, YES_NO, np.column_stack([1 - takes, takes])))
        frame[name] = value
        charge = charge + (value == "Yes") * (5.0 + 2.5 * (k >= 4))
    monthly = np.round(np.clip(charge + rng.normal(0, 1.5, n), 18.25, 118.75), 2)
    paperless = pick(rng, YES_NO, np.where((internet == "Fiber optic")[:, None], [0.3, 0.7],
                                            [0.5, 0.5]))
    payment = pick(rng, PAYMENT, np.where((contract == "Month-to-month")[:, None],
                                           [0.5, 0.2, 0.15, 0.15], [0.15, 0.25, 0.3, 0.3]))
    total = np.round(monthly * tenure * rng.normal(1.0, 0.03, n), 2)
    logit = (-2.9 + 3.0 * (contract == "Month-to-month") - 1.5 * (contract == "Two year")
             - 0.06 * tenure + 1.2 * (internet == "Fiber optic")
             + 0.5 * (payment == "Electronic check") + 0.3 * senior
             - 0.4 * (frame["TechSupport"] == "Yes"))
    churn = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), "Yes", "No")
    frame.update({"Contract": contract, "PaperlessBilling": paperless, "PaymentMethod": payment,
                  "MonthlyCharges": monthly,
                  "TotalCharges": np.where(tenure == 0, np.nan, np.clip(total, 18.8, 8_700)),
                  "Churn": churn})
    return pd.DataFrame(frame)[ORDER]


def public_schema() -> dict:
    """Every domain public: the generator's vocabularies and the codebook's bounds."""
    vocab = {"gender": ["Female", "Male"], "Partner": list(YES_NO), "Dependents": list(YES_NO),
             "PhoneService": list(YES_NO), "MultipleLines": list(LINES),
             "InternetService": list(INTERNET), **{a: list(ADD_ON) for a in ADD_ONS},
             "Contract": list(CONTRACT), "PaperlessBilling": list(YES_NO),
             "PaymentMethod": list(PAYMENT), "Churn": list(YES_NO)}
    columns = []
    for name in ORDER:
        if name == "SeniorCitizen":
            columns.append({"name": name, "kind": "categorical", "categories": [0, 1],
                            "public": True})
        elif name in BOUNDS:
            lo, hi = BOUNDS[name]
            columns.append({"name": name, "kind": "numeric", "lower": lo, "upper": hi,
                            "integer": name == "tenure", "public": True,
                            "missing": "indicator" if name == "TotalCharges" else "none"})
        else:
            columns.append({"name": name, "kind": "categorical", "categories": vocab[name],
                            "public": True})
    return {"target": "Churn", "columns": columns}


def categories_public() -> dict:
    """The schema of a steward without a codebook: categories public, bounds to be learned."""
    return without_bounds(public_schema())


def main(argv: list[str] | None = None) -> None:
    cli(__doc__, generate, public_schema, 7_000, "churn_like", argv)


if __name__ == "__main__":
    main()
