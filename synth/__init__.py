"""Differentially private synthetic tabular data: the plain package behind the app and CLI.

Typical use from a notebook::

    from synth import Budget, FitContext, load_sample, make
    table, schema = load_sample()
    model = make("independent").fit(table, schema, Budget(1.0, 1e-5, {"measure": 1.0}))
    synthetic = model.sample()
    model.ledger_.to_dict()

A table larger than memory is fitted where it lies: ``fit(TableFile("big.parquet"), ...)``.
"""

from synth.data import load_sample, read_table
from synth.methods import METHODS, FitContext, make
from synth.privacy.budget import Budget, Ledger
from synth.schema import Schema, infer_schema
from synth.source import TableFile

__all__ = ["METHODS", "Budget", "FitContext", "Ledger", "Schema", "TableFile", "infer_schema",
           "load_sample", "make", "read_table"]
