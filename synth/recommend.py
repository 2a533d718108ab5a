"""Which method to run on a table, from its public facts and this project's benchmarks.

The methods are tried in the order the benchmarks rank them (:data:`RANKED`); the first whose
plan, made from the schema's public view, the public row count and the budget, is not
refused, keeps a DP guarantee and is planned within :data:`PATIENCE` is recommended. Nothing is
read from the table and nothing is spent, so the advice can stand beside the plan before a
run. What public facts cannot show (how the columns depend on each other) a rehearsal on a
stand-in can (:func:`synth.sweep.rehearse`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from synth.errors import SynthError
from synth.privacy.unit import Population, PrivacyUnit
from synth.schema import Schema

# by 2-way TVD on Adult at ε = 1, medians of 3 seeds (benchmarks/results/peers.json); AIM is
# first at every ε from 0.5 to 8 there and at ε = 1 on the census sample (three rehearsal runs
# of every method, benchmarks/rehearsal.py), and at or below MST's median at every ε on the
# census sample and a generated bank-like table (peers.py --table census|bank, 3 seeds),
# and on every other table measured; where the budget is small for the table the two are
# close (the churn-like table at ε = 0.5, 10 seeds; the person-month panel at ε = 1, 20)
RANKED = ("aim", "dpselect", "mst", "gsd", "independent")
PATIENCE = 600.0  # seconds on 2 cores a steward is asked to wait before the next one is tried
WHY = {
    "aim": "the lowest 2-way TVD of this project's methods at every ε from 0.5 to 8 on Adult "
           "(0.037 at ε = 1, where DP-Select has 0.047, MST 0.048 and Private-GSD 0.049) and "
           "at ε = 1 on the census sample, and at or below MST at every ε there and on a "
           "generated bank-like table (at ε = 1: 0.052 and 0.011 against MST's 0.065 and "
           "0.013, medians of 3 seeds); where the budget is small for the table MST comes "
           "close, inside AIM's spread (a person-month panel protected per person, at ε = 1: "
           "0.142 against 0.155, 20 seeds)",
    "dpselect": "second on pairs on Adult at ε = 1 (2-way TVD 0.047, AIM 0.037); it trains a "
                "GAN pool first, so it is slow",
    "mst": "third on pairs on Adult at ε = 1 (0.048, AIM 0.037) in a fraction of the time of "
           "the methods above it (4 s on Adult), and close to AIM where the budget is small "
           "for the table",
    "gsd": "fourth on pairs on Adult at ε = 1 (0.049) and second from ε = 2 up; it keeps "
           "numbers continuous and needs little memory",
    "independent": "it keeps single columns best (1-way TVD 0.009 on Adult at ε = 1) but no "
                   "relationships between them; the methods that keep them could not run here",
}
ONE_COLUMN = ("one column has no relationships to keep: its own histogram, measured directly, "
              "is what every method would release")


@dataclass(frozen=True)
class Recommendation:
    """The method to run, why, its planned seconds, and each better-ranked method passed over
    with the reason its plan gave."""

    method: str
    why: str
    seconds: float | None
    passed_over: tuple[tuple[str, str], ...] = ()

    def lines(self) -> list[str]:
        out = [f"recommended: {self.method}, {self.why}"]
        out += [f"passed over {name}: {reason}" for name, reason in self.passed_over]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "why": self.why, "seconds": self.seconds,
                "passed_over": [{"method": m, "reason": r} for m, r in self.passed_over]}


def recommend(schema: Schema, epsilon: float, delta: float, population: Population | int,
              unit: PrivacyUnit | None = None, patience: float = PATIENCE) -> Recommendation:
    """The best-ranked method whose plan for this table's public facts runs: not refused,
    with a DP guarantee, planned within ``patience`` seconds. Raises the last method's
    refusal if none can run."""
    from synth.runs import Run  # runs imports the methods; this module stays light

    if len(schema.names) == 1:
        return Recommendation("independent", ONE_COLUMN, Run(
            "independent", schema, epsilon, delta, rows=population, unit=unit).plan.seconds)
    passed: list[tuple[str, str]] = []
    last: SynthError | None = None
    for name in RANKED:
        try:
            planned = Run(name, schema, epsilon, delta, rows=population, unit=unit).plan
        except SynthError as err:  # a parameter rule on these facts (too few rows, say)
            passed.append((name, str(err)))
            last = err
            continue
        if planned.refusals:
            passed.append((name, f"its plan refuses the run: {planned.refusals[0].brief}"))
            last = planned.refusals[0]
        elif planned.unbounded:
            passed.append((name, f"it may carry no DP guarantee: {planned.unbounded}"))
        elif planned.seconds is not None and planned.seconds > patience:
            passed.append((name, f"planned at about {planned.seconds:,.0f} s on 2 cores, over "
                                 f"{patience:,.0f} s"))
        else:
            return Recommendation(name, WHY[name], planned.seconds, tuple(passed))
    if last is not None:
        raise last
    raise SynthError("no method can run on this table's public facts: "
                     + "; ".join(f"{m}: {r}" for m, r in passed))
