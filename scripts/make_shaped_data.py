"""Generate tables with the shapes real tables have and codebooks rarely describe (issue 48).

Five made-up tables (no real person or flight is in them), each built around one shape
that learning numeric bounds privately must keep:

* ``flights`` (20,000 rows): ``dep_delay``, 57 % in [−20, 0], 40 % late by 1–1,000 minutes
  with a power tail, 3 % blank (cancelled); ``arr_delay`` follows it; calendar parts whose
  domains their names give (month, day, weekday, hour); carriers and airports.
* ``bank`` (20,000 rows): ``pdays``, a sentinel plus a spread, −1 for the 82 % never called
  before and 1–871 days for the rest; ages, balances both ways, calls.
* ``claims`` (20,000 rows): ``claim_amount``, zero-inflated, 0 for 85 % of policies and a
  log-normal amount into six figures for the rest; premiums, ages, vehicles.
* ``customers`` (2,000 rows): ``monthly_income`` with 4 % blanks, log-normal; ages, tenure,
  spend, visits.
* ``timetable`` (20,000 rows, 19 columns): ``dep_time``, a clock time written as HHMM (517
  is 05:17), scheduled and actual departures and arrivals past midnight; delays as in
  ``flights``, longer late in the day and in peak months; a hundred airports each way
  (the distance is the route's) and a hundred aircraft (tail numbers), each of one carrier.

:func:`generate` returns the table; :func:`schema_for` the schema a steward without a
codebook declares (``schema confirm --public categories,known``): categories and the domains
a name gives public, every other bound learned privately.

    python scripts/make_shaped_data.py [--out-dir DIR] [--seed 0]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

ROWS = {"flights": 20_000, "bank": 20_000, "claims": 20_000, "customers": 2_000,
        "timetable": 20_000}
# the column each table is built around
SHAPED = {"flights": "dep_delay", "bank": "pdays", "claims": "claim_amount",
          "customers": "monthly_income", "timetable": "dep_time"}


def _pick(rng: np.random.Generator, names: list[str], n: int, skew: float = 1.0) -> np.ndarray:
    weights = 1.0 / np.arange(1, len(names) + 1) ** skew
    return rng.choice(names, n, p=weights / weights.sum())


def _delay(rng: np.random.Generator, n: int) -> np.ndarray:
    """57 % early or on time (−20 … 0), 40 % late by 1–1,000 minutes (a power tail), 3 %
    blank."""
    early = rng.integers(-20, 1, n).astype(float)
    late = np.minimum(np.ceil(rng.pareto(1.1, n) * 12), 1_000)
    u = rng.random(n)
    return np.where(u < 0.57, early, np.where(u < 0.97, late, np.nan))


def flights(n: int, rng: np.random.Generator) -> pd.DataFrame:
    dep = _delay(rng, n)
    arr = np.where(np.isnan(dep), np.nan, np.round(dep + rng.normal(-4, 12, n)))
    distance = np.round(np.exp(rng.normal(6.6, 0.6, n))).clip(60, 4_900)
    hour = rng.choice(np.arange(5, 24), n)
    return pd.DataFrame({
        "month": rng.integers(1, 13, n), "day": rng.integers(1, 32, n),
        "weekday": rng.integers(0, 7, n), "dep_hour": hour,
        "carrier": _pick(rng, ["AA", "DL", "UA", "WN", "B6", "AS", "NK", "F9", "HA"], n),
        "origin": _pick(rng, [f"O{i:02d}" for i in range(40)], n),
        "dest": _pick(rng, [f"D{i:02d}" for i in range(40)], n),
        "dep_delay": dep, "arr_delay": arr, "distance": distance,
        "air_time": np.round(distance / 8 + rng.normal(20, 8, n)).clip(15, None),
        "taxi_out": np.round(rng.gamma(2.0, 8.0, n)) + 1,
        "seats": rng.choice([50, 76, 140, 160, 180, 220, 300], n),
        "cancelled_reason": np.where(np.isnan(dep), rng.choice(["weather", "crew", "other"], n),
                                     "none"),
        "aircraft_age": np.round(rng.gamma(3.0, 4.0, n)),
    })


def bank(n: int, rng: np.random.Generator) -> pd.DataFrame:
    called = rng.random(n) < 0.18
    pdays = np.where(called, np.minimum(np.ceil(rng.gamma(1.2, 180, n)), 871), -1)
    balance = np.round(np.exp(rng.normal(6.5, 1.6, n)) * np.where(rng.random(n) < 0.08, -0.3, 1))
    return pd.DataFrame({
        "age": rng.integers(18, 96, n),
        "job": _pick(rng, ["admin", "blue-collar", "technician", "services", "management",
                           "retired", "student", "unemployed"], n),
        "marital": _pick(rng, ["married", "single", "divorced"], n),
        "education": _pick(rng, ["primary", "secondary", "tertiary", "unknown"], n),
        "default": _pick(rng, ["no", "yes"], n, 5.0),
        "balance": balance, "housing": _pick(rng, ["yes", "no"], n),
        "loan": _pick(rng, ["no", "yes"], n, 2.0), "day": rng.integers(1, 32, n),
        "month": rng.integers(1, 13, n),
        "duration": np.round(np.exp(rng.normal(5.2, 0.9, n))),
        "campaign": np.minimum(rng.geometric(0.4, n), 63),
        "pdays": pdays, "previous": np.where(called, rng.geometric(0.35, n), 0),
        "y": _pick(rng, ["no", "yes"], n, 3.0),
    })


def claims(n: int, rng: np.random.Generator) -> pd.DataFrame:
    claimed = rng.random(n) < 0.15
    amount = np.where(claimed, np.round(np.exp(rng.normal(7.5, 1.5, n)), 2), 0.0)
    return pd.DataFrame({
        "policy_type": _pick(rng, ["basic", "standard", "premium"], n),
        "region": _pick(rng, [f"R{i}" for i in range(12)], n),
        "driver_age": rng.integers(18, 90, n), "vehicle_year": rng.integers(1995, 2025, n),
        "vehicle_value": np.round(np.exp(rng.normal(9.8, 0.6, n)), -2),
        "annual_premium": np.round(np.exp(rng.normal(6.9, 0.4, n)), 2),
        "deductible": rng.choice([250, 500, 1_000, 2_000], n),
        "claim_amount": amount, "claims_count": np.where(claimed, rng.geometric(0.7, n), 0),
        "tenure_years": rng.integers(0, 30, n), "fuel": _pick(rng, ["petrol", "diesel", "ev"], n),
        "garage": _pick(rng, ["yes", "no"], n), "month": rng.integers(1, 13, n),
        "pct_no_claims": rng.integers(0, 101, n),
        "channel": _pick(rng, ["agent", "online", "phone"], n),
    })


def customers(n: int, rng: np.random.Generator) -> pd.DataFrame:
    income = np.round(np.exp(rng.normal(8.3, 0.7, n)), 2)
    income[rng.random(n) < 0.04] = np.nan
    return pd.DataFrame({
        "age": rng.integers(18, 90, n), "segment": _pick(rng, ["A", "B", "C", "D"], n),
        "region": _pick(rng, ["north", "south", "east", "west"], n),
        "monthly_income": income, "tenure_months": rng.integers(0, 240, n),
        "spend_last_year": np.round(np.exp(rng.normal(6.0, 1.0, n)), 2),
        "visits": rng.poisson(6, n), "signup_month": rng.integers(1, 13, n),
        "channel": _pick(rng, ["web", "store", "phone"], n),
        "newsletter": _pick(rng, ["yes", "no"], n), "children": rng.poisson(0.8, n),
        "credit_score": np.round(rng.normal(680, 60, n)).clip(300, 850),
        "pct_online": rng.integers(0, 101, n), "churned": _pick(rng, ["no", "yes"], n, 2.0),
        "support_calls": rng.poisson(1.2, n),
    })


def _hhmm(minutes: np.ndarray) -> np.ndarray:
    """Minutes after a midnight (any number of days on) as the clock reads them, HHMM
    (whole numbers; a blank where ``minutes`` is)."""
    day = np.mod(minutes, 24 * 60)
    return pd.array((day // 60) * 100 + day % 60, dtype="Int64")


def timetable(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """Flights between a hundred airports on a plane (the distance is the route's, the
    airports busier by rank), flown by a hundred aircraft each of one of twelve carriers;
    later and peak-month departures run later; an arrival is its departure plus the block time,
    past midnight on some rows."""
    places = rng.uniform(0, 2_400, (100, 2))  # miles
    airports = np.array([f"A{i:02d}" for i in range(100)])
    busy = 1.0 / np.arange(1, 101) ** 0.8
    origin = rng.choice(100, n, p=busy / busy.sum())
    dest = (origin + 1 + rng.choice(99, n, p=busy[1:] / busy[1:].sum())) % 100
    distance = np.round(np.hypot(*(places[origin] - places[dest]).T)).clip(60, None)
    fleet = np.arange(100) % 12  # aircraft i belongs to carrier i mod 12
    tail = rng.choice(100, n, p=busy / busy.sum())
    carriers = np.array(["AA", "DL", "UA", "WN", "B6", "AS", "NK", "F9", "HA", "G4", "SY",
                         "MQ"])
    scheduled = rng.integers(5 * 60, 24 * 60, n) // 5 * 5  # departures on the five minutes
    month = rng.integers(1, 13, n)
    late_day = 1 + (scheduled - 5 * 60) / (19 * 60) + 0.5 * np.isin(month, [12, 1, 2, 7])
    dep = _delay(rng, n)
    dep = np.where(dep > 0, np.minimum(np.ceil(dep * late_day), 1_000), dep)
    arr = np.where(np.isnan(dep), np.nan, np.round(dep + rng.normal(-4, 12, n)))
    air = np.round(distance / 8 + rng.normal(20, 8, n)).clip(15, None)
    taxi_out, taxi_in = np.round(rng.gamma(2.0, 8.0, n)) + 1, np.round(rng.gamma(2.0, 4.0, n)) + 1
    block = (air + taxi_out + taxi_in + 15) // 5 * 5
    flown = ~np.isnan(dep)
    return pd.DataFrame({
        "month": month, "day_of_month": rng.integers(1, 32, n),
        "day_of_week": rng.integers(1, 8, n), "carrier": carriers[fleet[tail]],
        "tail_number": np.array([f"N{i:03d}XY" for i in range(100)])[tail],
        "origin": airports[origin], "dest": airports[dest],
        "crs_dep_time": _hhmm(scheduled),
        "dep_time": _hhmm(np.where(flown, scheduled + dep, np.nan)),
        "dep_delay": dep, "taxi_out": np.where(flown, taxi_out, np.nan),
        "crs_arr_time": _hhmm(scheduled + block),
        "arr_time": _hhmm(np.where(flown, scheduled + block + arr, np.nan)),
        "arr_delay": arr, "taxi_in": np.where(flown, taxi_in, np.nan),
        "air_time": np.where(flown, air, np.nan), "distance": distance,
        "cancelled": np.where(flown, "no", "yes"),
        "diverted": np.where(flown & (rng.random(n) < 0.003), "yes", "no"),
    })


MAKERS = {"flights": flights, "bank": bank, "claims": claims, "customers": customers,
          "timetable": timetable}


def generate(name: str, seed: int = 0, rows: int | None = None) -> pd.DataFrame:
    """Table ``name`` (one of :data:`ROWS`), ``rows`` rows (its default if None)."""
    return MAKERS[name](rows or ROWS[name], np.random.default_rng(seed))


def schema_for(table: pd.DataFrame):
    """What ``schema confirm --public categories,known`` declares: every category list the
    shortcut may publish and every domain a column's name gives; the rest is learned."""
    from synth.declarations import by_shortcut
    from synth.schema import infer_schema

    schema = infer_schema(table)
    kept, _ = by_shortcut(schema, table, ["categories", "known"])
    return schema.confirm().declare_public(kept)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=Path("shaped_data"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for name in ROWS:
        path = args.out_dir / f"{name}.csv"
        generate(name, args.seed).to_csv(path, index=False)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
