"""Every method behind one interface (:class:`Synthesizer`), looked up by its CLI name."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from synth.errors import ParameterError
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
from synth.methods.private_sampling import PrivateSampling

METHODS: dict[str, type[Synthesizer]] = {
    cls.name: cls for cls in (IndependentMarginals, DPGAN, DPSelect, GSD, PrivateSampling)}

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
    """A configured synthesizer; unknown names and parameters are refused by name."""
    if not isinstance(name, str) or name not in METHODS:
        raise ParameterError(f"unknown method {name!r}; choose from {sorted(METHODS)}")
    cls = METHODS[name]
    if params is not None and not isinstance(params, Mapping):
        raise ParameterError(f"params must be a mapping of parameter name to value, got "
                             f"{params!r}")
    params = dict(params or {})
    known = cls.param_defaults()
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise ParameterError(f"unknown parameter {unknown[0]!r} for method {name!r}; "
                             f"it takes {sorted(known) or 'no parameters'}")
    return cls(**params)


def _value(text: str) -> Any:
    """'3' → 3, '0.5' → 0.5, 'true' → True, '[1, 2]' → [1, 2]; anything else stays a string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_settings(items: Iterable[str]) -> tuple[dict[str, Any], dict[str, float]]:
    """``key=value`` strings → (method parameters, budget shares given as ``share.NAME=x``)."""
    params: dict[str, Any] = {}
    shares: dict[str, float] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ParameterError(f"--set expects key=value, got {item!r}")
        value = _value(raw.strip())
        if key.startswith(SHARE_PREFIX):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ParameterError(f"share {key[len(SHARE_PREFIX):]!r} must be a number, "
                                     f"got {raw!r}")
            shares[key[len(SHARE_PREFIX):]] = float(value)
        else:
            params[key] = value
    return params, shares
