"""Declarative parameter constraints: one table per method, read by ``fit``, the CLI and the app.

Each constructor parameter of a method is described once by a :class:`Param`: its type, its
interval or choices, whether None means "the method chooses", a sentence of help and whether
the app shows it up front. ``fit`` checks every value against it before anything is spent,
``synth run --set`` parses by it, and the Synthesize page draws its widgets from it (ranges,
select boxes, help). Rules that tie several parameters together (parents ≤ population) stay
as a few explicit lines in the method, after these. After sklearn's ``_parameter_constraints``.

One rule for numbers everywhere: numpy integer and float scalars pass wherever Python's do
(``fit`` then reads them as the Python numbers they hold), a whole float passes as an
integer (JSON's 16.0), and a bool is never a number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from synth.errors import ParameterError, is_number, plain

_KIND_WORDS = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


@dataclass(frozen=True)
class Param:
    """What one parameter accepts: ``kind`` (int, float, bool or str), for numbers an interval
    (either end open or absent), for strings a tuple of ``choices``; ``optional`` lets None
    through (the method's own choice). ``symbol`` is the paper's name, shown beside ours in
    messages; ``label`` and ``help`` are words for the app, which shows only the parameters
    with ``advanced=False`` outside its "Advanced" expander."""

    name: str
    kind: type
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] | None = None
    optional: bool = False
    help: str = ""
    label: str | None = None
    symbol: str = ""
    advanced: bool = True

    def __post_init__(self) -> None:
        if self.kind not in _KIND_WORDS:
            raise TypeError(f"Param {self.name!r}: kind must be one of {list(_KIND_WORDS)}")

    @property
    def title(self) -> str:
        """The label the app shows: words, with the paper's symbol."""
        words = self.label or self.name.replace("_", " ").capitalize()
        return f"{words} ({self.symbol})" if self.symbol else words

    def interval(self) -> str:
        """The allowed values in words: "an integer ≥ 1", "a number in [0, 1]", "one of 'rows',
        'ga'"."""
        if self.choices is not None:
            return "one of " + ", ".join(map(repr, self.choices))
        words = _KIND_WORDS[self.kind]
        if self.low is not None and self.high is not None:
            return f"{words} in {self._bounds()}"
        if self.low is not None:
            return f"{words} {'>' if self.low_open else '≥'} {self.low:g}"
        if self.high is not None:
            return f"{words} {'<' if self.high_open else '≤'} {self.high:g}"
        return words

    def check(self, value: Any) -> Any:
        """``value`` as a plain Python value of ``kind`` (None where optional), or a
        one-line ParameterError naming the parameter and what it accepts."""
        if value is None and self.optional:
            return None
        if self.kind is bool:
            if isinstance(value, bool | np.bool_):
                return bool(value)
            raise self._error("be " + self._kind_words(), value)
        if self.kind is str:
            if not isinstance(value, str):
                raise self._error("be " + self._kind_words(), value)
            if self.choices is not None and value not in self.choices:
                raise self._error("be " + self.interval(), value)
            return value
        whole = self.kind is float or (is_number(value) and float(value).is_integer())
        if not (is_number(value) and math.isfinite(value) and whole):
            raise self._error("be " + self._kind_words(), value)
        number = self.kind(value)
        low_fails = self.low is not None and (number <= self.low if self.low_open
                                              else number < self.low)
        high_fails = self.high is not None and (number >= self.high if self.high_open
                                                else number > self.high)
        if low_fails or high_fails:
            both = self.low is not None and self.high is not None
            raise self._error(f"lie in {self._bounds()}" if both else f"be {self.interval()}",
                              value)
        return number

    def _bounds(self) -> str:
        return (f"{'(' if self.low_open else '['}{self.low:g}, "
                f"{self.high:g}{')' if self.high_open else ']'}")

    def _kind_words(self) -> str:
        return _KIND_WORDS[self.kind] + (" or null" if self.optional else "")

    def _error(self, must: str, value: Any) -> ParameterError:
        name = f"{self.name} ({self.symbol})" if self.symbol not in ("", self.name) else self.name
        return ParameterError(f"{name} must {must}, got {plain(value)!r}")


def specs(*params: Param) -> dict[str, Param]:
    """Params by name, in the order given (the app's order); a name given twice keeps the
    first, so a method can override a parameter it inherits by listing its own first."""
    out: dict[str, Param] = {}
    for p in params:
        out.setdefault(p.name, p)
    return out


def nest(outer: str, params: Mapping[str, Param]) -> tuple[Param, ...]:
    """A nested method's ``params`` as its owner names them (``gan__epochs``), each still
    worded as its own (label and help)."""
    return tuple(replace(p, name=f"{outer}__{p.name}",
                         label=p.label or p.name.replace("_", " ").capitalize())
                 for p in params.values())


def check_all(values: Mapping[str, Any], params: Mapping[str, Param]) -> dict[str, Any]:
    """Every value checked against its Param, in the Params' order; a value without a Param
    is refused by name."""
    unknown = sorted(set(values) - set(params))
    if unknown:
        raise ParameterError(f"unknown parameter {unknown[0]!r}; the parameters are "
                             f"{list(params)}")
    return {name: p.check(values[name]) for name, p in params.items() if name in values}
