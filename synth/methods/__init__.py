"""Every method behind one interface (:class:`Synthesizer`), looked up by its CLI name."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from synth.errors import ParameterError, is_number
from synth.methods.aim import AIM
from synth.methods.base import (
    Event,
    FitContext,
    NoiseScale,
    Progress,
    Spent,
    StageStarted,
    Synthesizer,
)
from synth.methods.dpgan import DPGAN
from synth.methods.dpselect import DPSelect
from synth.methods.gsd import GSD
from synth.methods.independent import IndependentMarginals
from synth.methods.mst import MST
from synth.methods.private_sampling import PrivateSampling
from synth.validation import Param

METHODS: dict[str, type[Synthesizer]] = {
    cls.name: cls for cls in (IndependentMarginals, DPGAN, DPSelect, GSD, MST, AIM,
                              PrivateSampling)}

SHARE_PREFIX = "share."

__all__ = [
    "METHODS",
    "Event",
    "FitContext",
    "NoiseScale",
    "Progress",
    "Spent",
    "StageStarted",
    "Synthesizer",
    "make",
    "parse_settings",
]


def make(name: str, params: Mapping[str, Any] | None = None) -> Synthesizer:
    """A configured synthesizer: ``make("gsd", {"rounds": 20})``.

    ``name`` is one of :data:`METHODS` (``python -m synth methods`` lists them with their
    parameters); ``params`` overrides the method's defaults. Unknown names and parameters are
    refused by name; values are checked against the declared constraints when the model is
    fitted or previewed, so a bad value is refused before anything is spent."""
    if not isinstance(name, str) or name not in METHODS:
        raise ParameterError(f"unknown method {name!r}; choose from {sorted(METHODS)}")
    cls = METHODS[name]
    if params is not None and not isinstance(params, Mapping):
        raise ParameterError(f"params must be a mapping of parameter name to value, got "
                             f"{params!r}")
    return cls().set_params(**dict(params or {}))


def _value(text: str, param: Param | None = None) -> Any:
    """'3' → 3, '0.5' → 0.5, 'true' → True, '[1, 2]' → [1, 2]; anything else stays a string,
    and so does anything given for a string parameter ('engine=ga', 'queries=cat2+bt')."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text
    return text if param is not None and param.kind is str and not isinstance(value, str) \
        else value


def parse_settings(items: Iterable[str], method: str | None = None
                   ) -> tuple[dict[str, Any], dict[str, float]]:
    """``key=value`` strings → (method parameters, budget shares given as ``share.NAME=x``).

    With a ``method``, each value is read and checked by its declared Param (a bad one is
    refused naming its key); the values are kept as written (1 stays 1, not 1.0)."""
    declared = METHODS[method].params if method in METHODS else {}
    params: dict[str, Any] = {}
    shares: dict[str, float] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ParameterError(f"--set expects key=value, got {item!r}")
        value = _value(raw.strip(), declared.get(key))
        if key.startswith(SHARE_PREFIX):
            if not is_number(value):
                raise ParameterError(f"share {key[len(SHARE_PREFIX):]!r} must be a number, "
                                     f"got {raw!r}")
            shares[key[len(SHARE_PREFIX):]] = float(value)
        else:
            if key in declared:
                declared[key].check(value)
            params[key] = value
    return params, shares
