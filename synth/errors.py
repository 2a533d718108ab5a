"""Errors whose message is meant for the user: one line that names the column or parameter."""

import math


class SynthError(ValueError):
    """Base class: the CLI prints these as a one-line cause, the app as a message."""


class DataError(SynthError):
    """A table cannot be read, or is not usable as a table."""


class SchemaError(SynthError):
    """A schema is malformed or disagrees with a table."""


class BudgetError(SynthError):
    """A privacy budget is invalid, or a mechanism would spend more than it allows."""


class ParameterError(SynthError):
    """A method or mechanism got a parameter it cannot use."""


class Cancelled(Exception):
    """Raised inside a fit when the caller's should_stop() turned true."""


def check_int(value, name: str, low: int = 1) -> int:
    """``value`` as an int ≥ ``low`` (whole floats pass), or a ParameterError naming it."""
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value) or int(value) != value or value < low:
        raise ParameterError(f"{name} must be an integer ≥ {low}, got {value!r}")
    return int(value)
