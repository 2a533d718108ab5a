"""A method's parameters as widgets, drawn from its declared constraints (``cls.params``).

Each :class:`~synth.validation.Param` gives its widget: a select box for a choice, a checkbox
for true or false, a number input bounded by the parameter's interval (empty, for an optional
number, means the method's own choice), with its words as the label and its sentence as help.
The few parameters that matter up front are shown first; the rest wait in "Advanced". The
method still checks every value when it is used (and says which one is wrong).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from synth.methods import Synthesizer
from synth.validation import Param


def method_inputs(cls: type[Synthesizer], skip: tuple[str | None, ...] = ()) -> dict[str, Any]:
    """One widget per parameter of ``cls`` (but those in ``skip``), starting from its
    defaults; returns the values by parameter name."""
    defaults = cls.param_defaults()
    shown = [p for p in cls.params.values() if p.name not in skip]
    front = [p for p in shown if not p.advanced]
    values: dict[str, Any] = {}
    for column, p in zip(st.columns(len(front)) if front else [], front, strict=True):
        with column:
            values[p.name] = widget(cls.name, p, defaults[p.name])
    with st.expander("Advanced"):
        for p in shown:
            if p.advanced:
                values[p.name] = widget(cls.name, p, defaults[p.name])
    return values


def param_key(method: str, name: str) -> str:
    """The widget key of ``method``'s parameter ``name`` (a refusal's fix sets it)."""
    return f"param:{method}:{name}"


def widget(method: str, p: Param, default: Any) -> Any:
    """The input for one parameter, keyed by :func:`param_key`."""
    key, label, help_text = param_key(method, p.name), p.title, p.help
    if p.kind is bool:
        return st.checkbox(label, value=bool(default), key=key,
                           persist_state="session", help=help_text)
    if p.choices is not None:
        return st.selectbox(label, p.choices, index=p.choices.index(default), key=key,
                            persist_state="session",
                            help=help_text)
    if p.kind is str:
        return st.text_input(label, value=str(default), key=key,
                             persist_state="session", help=help_text)
    kind = p.kind if default is None else type(default)  # a float parameter given 20 stays 20
    bounds = {}
    if p.low is not None and not p.low_open:  # an open end is left to the method's check
        bounds["min_value"] = kind(p.low)
    if p.high is not None and not p.high_open:
        bounds["max_value"] = kind(p.high)
    style = {"step": 1} if kind is int else {"format": "%g"}
    return st.number_input(label, value=default, key=key, persist_state="session", help=help_text,
                           placeholder="the method's choice" if p.optional else None,
                           **bounds, **style)
