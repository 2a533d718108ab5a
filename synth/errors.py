"""Errors whose message is meant for the user: one line that names the column or parameter."""

import math
import numbers
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Fix:
    """One way out of a refusal that the app can take in one click: ``changes`` to make
    (``epsilon``, ``domain_share``, ``leave_out`` (column names), ``method``, or a method
    parameter's name, with its new value), said as a button would say it."""

    label: str
    changes: tuple[tuple[str, Any], ...]
    caveat: str = ""  # what it leaves: it clears the refusal, not every risk


class SynthError(ValueError):
    """Base class: the CLI prints these as a one-line cause, the app as a message (with a
    button for each of its ``fixes``). A ``brief`` says it in a few words where the message
    carries figures a page folds away; it defaults to the message."""

    def __init__(self, *args: Any, fixes: Iterable[Fix] = (), brief: str | None = None):
        super().__init__(*args)
        self.fixes = tuple(fixes)
        self.brief = brief or (str(args[0]) if args else "")


class DataError(SynthError):
    """A table cannot be read, or is not usable as a table."""


class SchemaError(SynthError):
    """A schema is malformed or disagrees with a table."""


class BudgetError(SynthError):
    """A privacy budget is invalid, or a mechanism would spend more than it allows."""


class AccountError(SynthError):
    """The persistent privacy account cannot be read or written (a full disk, say)."""


class ParameterError(SynthError):
    """A method or mechanism got a parameter it cannot use."""


class Cancelled(Exception):
    """Raised inside a fit when the caller's should_stop() turned true."""


def is_number(value: Any) -> bool:
    """Whether ``value`` is a real number: Python's or numpy's int and float scalars, never a
    bool (``True`` is not read as 1). The one rule every check of a number follows."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (for messages and JSON); others as given."""
    return value.item() if isinstance(value, np.generic) else value


def check_int(value, name: str, low: int = 1) -> int:
    """``value`` as an int ≥ ``low`` (whole floats pass), or a ParameterError naming it."""
    if not is_number(value) or not math.isfinite(value) or int(value) != value or value < low:
        raise ParameterError(f"{name} must be an integer ≥ {low}, got {plain(value)!r}")
    return int(value)


def as_float(value: Any, name: str, error: type[Exception], kind: str = "a number") -> float:
    """``value`` as a float, or ``error`` saying "``name`` must be ``kind``": a bool or text
    is not a number here (``True`` is refused, not read as 1, and ``"1"`` not read as 1.0:
    the caller meant something else, or a form passed text on)."""
    try:
        if isinstance(value, bool | np.bool_ | str | bytes):
            raise TypeError
        return float(value)
    except (TypeError, ValueError):
        raise error(f"{name} must be {kind}, got {plain(value)!r}") from None


def check_positive(value: float, name: str, error: type[Exception] = BudgetError) -> float:
    """``value`` as a finite float > 0, or ``error`` naming the parameter."""
    number = as_float(value, name, error, "a number > 0")
    if not (number > 0 and math.isfinite(number)):
        raise error(f"{name} must be a finite number > 0, got {value!r}")
    return number


def check_epsilon(epsilon: float, name: str = "epsilon") -> float:
    return check_positive(epsilon, name)


def check_delta(delta: float, name: str = "delta", allow_zero: bool = True) -> float:
    """δ in [0, 1) (or (0, 1) without ``allow_zero``), or a BudgetError naming it."""
    interval = "[0, 1)" if allow_zero else "(0, 1)"
    value = as_float(delta, name, BudgetError, f"a number in {interval}")
    if not (0 <= value < 1) or (value == 0 and not allow_zero):
        raise BudgetError(f"{name} must lie in {interval}, got {delta!r}")
    return value


_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_EXAMPLES = re.compile(r"\(e\.g\. [^)]*\)")  # a message's examples are values, quoted or not


def without_values(exc: BaseException, names: Iterable[str] = ()) -> str:
    """A failure as a record kept after the run says it (the run store, a stopped run's
    ledger): our message with its examples and every quoted text that is not a column name
    (``names``) replaced by '…', so it names columns and counts, never a value of the
    table (the examples of values that are not numbers, say); an unexpected error by
    its type alone, as its message may quote anything. The steward's own terminal and page
    still show the whole message when it happens."""
    if not isinstance(exc, SynthError):
        return f"{type(exc).__name__} (an unexpected error: its message is not kept)"
    keep = {repr(n)[1:-1] for n in names}
    text = _EXAMPLES.sub("(e.g. …)", str(exc))
    return _QUOTED.sub(lambda m: m.group(0) if m.group(0)[1:-1] in keep else "'…'", text)
