"""The tables the benchmarks compare methods on, each with the schema a steward would declare.

* ``adult``: ../shared/data/adult.csv with the protocol's codebook schema;
* ``census``: the bundled sample with its schema;
* ``panel``: the bundled person-month sample with its schema, protected per person as the
  app protects it by default (``UNITS``: ``person_id``, at most 3 rows each); whole people are
  held out, a fixed draw (``default_rng(0)``) so every run reads the same rows;
* ``bank`` (45,000 rows) and ``churn`` (7,000 rows, 20 columns): scripts/make_bank_data.py
  and scripts/make_churn_data.py. Bank's bounds are learned (no codebook, categories public);
  churn keeps its codebook's bounds: a stand-in at ε = 0.1 or 0.2 cannot learn its three
  bounds from 7,000 rows (its plan refuses it, naming ε = 0.31);
* ``churn-learned``: the churn table with its bounds learned, as a steward without a
  codebook brings it;
* ``timetable`` (20,000 rows, 19 columns): scripts/make_shaped_data.py's, with HHMM clock
  times, heavy-tailed delays and three columns of about 100 categories; categories and the
  domains names give public, every other bound learned.

Generated tables are made from seed 0 on each call (no file is kept).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from synth.privacy.unit import PrivacyUnit
    from synth.schema import Schema

REPO = Path(__file__).resolve().parent.parent
TABLES = ("adult", "census", "panel", "bank", "churn", "churn-learned", "timetable")
UNITS = {"panel": ("person_id", 3)}  # table → (unit column, k), as the app declares it
# table → (script, rows, the script's function giving the declared schema)
GENERATED = {"bank": ("make_bank_data", 45_000, "categories_public"),
             "churn": ("make_churn_data", 7_000, "public_schema"),
             "churn-learned": ("make_churn_data", 7_000, "categories_public")}


def script(name: str):
    """scripts/``name``.py as a module (the scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(name, REPO / f"scripts/{name}.py")
    made = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(made)
    return made


def table(name: str):
    """(rows, declared schema) of benchmark table ``name``."""
    from synth.data import load_sample, read_table
    from synth.protocol import adult_schema
    from synth.schema import Schema

    if name in ("census", "panel"):
        return load_sample(name)
    if name == "adult":
        rows = read_table(REPO.parent / "shared/data/adult.csv")
        return rows, adult_schema(rows)
    if name in GENERATED:
        maker, rows, declared = GENERATED[name]
        made = script(maker)
        return made.generate(rows, 0), Schema.from_dict(getattr(made, declared)())
    if name == "timetable":
        made = script("make_shaped_data")
        rows = made.generate(name)
        return rows, made.schema_for(rows)
    raise SystemExit(f"unknown table {name!r}; choose from {TABLES}")


def unit(name: str) -> PrivacyUnit:
    """Whom a run on benchmark table ``name`` protects: a person where the table has one."""
    from synth.privacy.unit import PrivacyUnit

    return PrivacyUnit(*UNITS[name]) if name in UNITS else PrivacyUnit()


def train_test(name: str) -> tuple[pd.DataFrame, pd.DataFrame | None, Schema]:
    """(rows to synthesize, held-out test rows or None, schema), as a run in the app splits
    them (Adult: the protocol's train split alone, DESIGN.md's measuring protocol). The rows
    are as read: a fit prepares them, once (a clock time prepared is no longer HHMM)."""
    import numpy as np

    from synth.protocol import protocol_split
    from synth.runs import split

    rows, schema = table(name)
    if name == "adult":
        train, _, test = protocol_split(rows)
    else:
        train, test = split(rows, schema, unit=unit(name), rng=np.random.default_rng(0))
    return train, test, schema
