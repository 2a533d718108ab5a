"""What a run will do, worked out from public facts before anything is read or spent.

From a method (its parameters), the schema, the public population (n rows, or U units of at
most k rows) and the budget, :func:`plan` finds the refusals a run can know up front (a
Gaussian stage with δ = 0, private domains whose noise no bin could clear, a method's own
public-fact limits such as private sampling's 20 bits), what still depends on the data (to be
said before spending), and whether the run can carry a DP guarantee at all. ``fit``, the
account's reservation and the app's Run button read this one plan, so a doomed run is refused
before its first charge, never after.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from synth.errors import BudgetError, SynthError
from synth.missing import model_schema
from synth.privacy.budget import Budget
from synth.privacy.domains import DOMAIN, bounds_threshold, keep_threshold
from synth.privacy.unit import Population
from synth.schema import CATEGORICAL, Schema

if TYPE_CHECKING:
    from synth.methods.base import Synthesizer

# a private bound's bin must clear its threshold: past half the rows even a table whose
# values all share one bin is likely to fail, and past a tenth a column spread over many
# bins may (a steward's walk: at a share that only cleared half, a balance column with
# negatives and a long tail failed after spending), so a refusal names both shares
DOOMED, DOUBTFUL = 1 / 2, 1 / 10
MOST_DOMAIN_SHARE, SHARE_STEP = 0.9, 0.05  # the app's slider


@dataclass(frozen=True)
class Plan:
    """A run's refusals, doubts and guarantee, from public facts only."""

    refusals: tuple[SynthError, ...] = ()  # the run cannot succeed: refused before a charge
    doubts: tuple[str, ...] = ()  # success depends on the data: say so before spending
    unbounded: str = ""  # why the run may end without a DP guarantee ("": it has one)

    def check(self) -> None:
        """Raise the first refusal, if any."""
        if self.refusals:
            raise self.refusals[0]


def plan(model: Synthesizer, population: Population, schema: Schema, budget: Budget) -> Plan:
    """The plan of ``model`` on ``population`` under ``budget`` (already the method's split,
    as :meth:`~synth.methods.base.Synthesizer.budget_for` gives it) and the working schema
    (private domains not yet learned). Only the public population is read: with k > 1, k·U
    stands for the rows bounding keeps."""
    population, space = population.public(), model_schema(schema)
    refusals = [BudgetError(f"the {stage!r} share has δ = 0, but its Gaussian noise "
                            f"({accountant} accounting) needs δ > 0: give δ > 0")
                for stage, accountant in model.accountants.items()
                if accountant in ("zcdp", "pld") and budget.allowance(stage)[1] <= 0]
    learned, doubts = domain_plan(schema, budget, population)
    refusals += learned
    if schema.releasable:  # a method's limits on the model space need every domain public
        refusals += model._refusals(population, space, budget)
    return Plan(tuple(refusals), tuple(doubts), model._unbounded(population, space, budget))


def domain_plan(schema: Schema, budget: Budget, population: Population
                ) -> tuple[list[SynthError], list[str]]:
    """(refusals, doubts) of learning the schema's private domains (see
    :mod:`synth.privacy.domains`): each column gets an equal part of the domain share; a
    numeric column's bounds need a power-of-two bin whose noisy count clears
    :func:`~synth.privacy.domains.bounds_threshold`, a category one that clears
    :func:`~synth.privacy.domains.keep_threshold`. The rows are at most k·U (public)."""
    todo = [c for c in schema if not c.releasable]
    if not todo:
        return [], []
    names = [c.name for c in todo]
    if DOMAIN not in budget.shares or budget.allowance(DOMAIN)[0] <= 0:
        return [BudgetError(f"columns {names[:6]} have data-derived domains: declare them "
                            f"public or give the budget a {DOMAIN!r} share to learn them "
                            "privately")], []
    eps, delta = budget.allowance(DOMAIN)
    eps_c, delta_c, k = eps / len(todo), delta / len(todo), population.max_rows
    rows = population.units * k
    numeric = [c.name for c in todo if c.kind != CATEGORICAL]
    categorical = [c.name for c in todo if c.kind == CATEGORICAL]
    refusals: list[SynthError] = []
    doubts: list[str] = []
    if categorical and delta_c <= 0:
        refusals.append(BudgetError(f"columns {categorical[:6]}: learning categories "
                                    "privately needs δ > 0 in the domain share"))
    if numeric:
        tau = bounds_threshold(eps_c, rows_per_unit=k)
        said = (f"the bounds of {_listed(numeric)} are learned privately: with the domain "
                f"share's ε = {eps:.3g} split over {len(todo)} columns, a bin needs about "
                f"{tau:,.0f} rows, of at most {rows:,}")
        if tau > DOOMED * rows:
            possible, likely = (_advice(budget, tau / (part * rows))
                                for part in (DOOMED, DOUBTFUL))
            refusals.append(BudgetError(
                f"{said}, more than half, so learning them would very likely fail after "
                f"spending: declare their bounds public, leave columns out, or {possible} "
                f"({likely} where the values spread over many bins)"))
        elif tau > DOUBTFUL * rows:
            doubts.append(f"{said}: success depends on how the values spread (a column "
                          "spread thinly over many bins fails after its share is spent); "
                          "public bounds avoid the risk")
    if categorical and delta_c > 0:
        tau = keep_threshold(eps_c, delta_c, k)
        if tau > DOOMED * rows:
            doubts.append(f"categories of {_listed(categorical)} are learned privately: a "
                          f"category needs about {tau:,.0f} of at most {rows:,} rows to be "
                          "kept, so most or all of them will fold into 'other'; declare them "
                          "public or give the domain share more")
    return refusals, doubts


def _advice(budget: Budget, factor: float) -> str:
    """The domain share (on the app's slider steps) that makes each column's threshold
    ``factor`` times smaller, or the ε that does so at the largest share."""
    share = budget.shares[DOMAIN] * factor
    step = round(math.ceil(share / SHARE_STEP - 1e-9) * SHARE_STEP, 2)
    if step <= MOST_DOMAIN_SHARE:
        return f"give the domain share {step:g} of ε or more"
    return (f"raise ε to {budget.epsilon * share / MOST_DOMAIN_SHARE:.3g} or more with a "
            f"domain share of {MOST_DOMAIN_SHARE:g}")


def _listed(names: list[str]) -> str:
    shown = ", ".join(repr(n) for n in names[:6])
    return shown + (f" and {len(names) - 6} more" if len(names) > 6 else "")
