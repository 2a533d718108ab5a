"""A table's schema: what each column is, which domain it may take, and how a table is read
in its terms.

* :mod:`~synth.schema.model`: columns, their kinds and domains, and the schema file (JSON);
* :mod:`~synth.schema.infer`: a schema proposed from a table's values (never public
  until a steward declares it), and a column re-read as the kind the steward chooses;
* :mod:`~synth.schema.prepare`: the one place where a table meets its schema, for a fit
  or a release (``synth.schema.prepare`` is its function, as imported here; the module is
  reached by ``from synth.schema.prepare import ...``).
"""

from synth.dates import DATETIME
from synth.schema.infer import (
    as_numbers,
    edit_column,
    flags_for,
    infer_schema,
    numbers_as_text,
    read_as_numbers,
    read_domain,
)
from synth.schema.model import (
    CATEGORICAL,
    DATE_FIELDS,
    DATE_VALUES,
    DIGITS,
    KINDS,
    MISSING,
    MISSING_POLICIES,
    NUMERIC,
    OTHER,
    Column,
    Schema,
    category_values,
    check_schema,
    repeated,
)
from synth.schema.prepare import check_columns, check_target, prepare, validate

__all__ = [
    "CATEGORICAL", "DATETIME", "DATE_FIELDS", "DATE_VALUES", "DIGITS", "KINDS", "MISSING",
    "MISSING_POLICIES", "NUMERIC", "OTHER", "Column", "Schema", "as_numbers", "category_values",
    "check_columns", "check_schema", "check_target", "edit_column", "flags_for", "infer_schema",
    "numbers_as_text", "prepare", "read_as_numbers", "read_domain", "repeated", "validate",
]
