"""What attacks on a release reach, beside what its (ε, δ)-DP guarantee lets any attack reach.

A reviewer asks what an attacker could actually learn; the ledger proves a bound. This module
measures both on the rows a run synthesized from (the *members*) and rows of the same
population it never saw (the *hold-out*), for the steward's eyes: it reads the private table.

Membership attacks score each target row, members and held-out rows alike, and are read as
a test "was this row in the table?": the area under its ROC curve and its best advantage
(TPR − FPR over all thresholds), with bootstrap intervals. Under (ε, δ)-DP and the ledger's
neighbouring relation no test between a table with a row and the same table with that row
replaced does better than TPR ≤ e^ε·FPR + δ (and the same with the roles of the two
hypotheses swapped), so no advantage exceeds (e^ε − 1 + 2δ)/(e^ε + 1) (Kairouz, Oh and
Viswanath 2015). Attribute inference gets the matching bound: a model trained on the release
is right about a member's sensitive value at most e^ε times as often as about a held-out
row's, plus δ. A figure is flagged only when it exceeds its bound by more than sampling can
explain (:data:`FALSE_FLAGS` over the whole report): the release is then not what its ledger
says, and the report says so.

A figure under its bound proves nothing: these are some attacks, not every attack. The
bound is the guarantee; the figures show how far the attacks a reviewer names get.

Rows are compared in the unit space of :class:`synth.encoding.Space` (numbers scaled to
[0, 1] over the bounds, widened to cover the real values; each category one-hot, two
categories at distance 1), so one column cannot drown the others by its units.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from synth.encoding import Discretizer, Space
from synth.errors import ParameterError, SchemaError
from synth.evaluation import FIDELITY_BINS, classifier
from synth.missing import ABSENT, model_frame, model_schema
from synth.quality import comparable
from synth.schema import CATEGORICAL, Column, Schema

TARGETS = 2000  # members and held-out rows attacked, each at most
BOOTSTRAP = 200  # resamples behind each interval
NEIGHBOURS = 5  # the density estimates' k (distance to the k-th nearest row)
NEAR = 0.01  # near copies: closer than this share of the reference rows lie
RARE_LEAST = 20  # rare rows each side below which that attack reports nothing
ATTACKS = 6  # a report's attacks, over which FALSE_FLAGS is shared (Bonferroni)
FALSE_FLAGS = 0.05  # the chance that a report flags a release that keeps its guarantee


def margin(m: int, n: int, chance: float) -> float:
    """How far the best TPR − FPR over all thresholds, m members and n held-out rows scored,
    lies above its true value with probability about ``chance``: the one-sided two-sample
    Kolmogorov–Smirnov margin c·√((m + n)/(m·n)) with exp(−2c²) = chance, exact (in the
    limit, conservative with ties) where members and held-out rows score alike. The
    threshold is chosen on the rows it is scored on, so no attack reads as 0 by chance."""
    return math.sqrt(math.log(1 / chance) / 2 * (m + n) / (m * n))


def claimed(ledger: Mapping[str, Any]) -> dict[str, Any]:
    """What a run's ledger claims, as :func:`risk` takes it: its total ε (∞ for a run with
    no guarantee) and δ, and the column of the units it protects (None: rows)."""
    epsilon = ledger["total_epsilon"]
    unit = (ledger.get("budget") or {}).get("unit") or {}
    return {"epsilon": math.inf if epsilon is None else float(epsilon),
            "delta": float(ledger["total_delta"]), "unit": unit.get("column")}


def membership_bound(epsilon: float, delta: float) -> float:
    """The largest TPR − FPR any membership test reaches against an (ε, δ)-DP release:
    (e^ε − 1 + 2δ)/(e^ε + 1), written so a large ε does not overflow."""
    if not epsilon >= 0 or not 0 <= delta <= 1:  # NaN is refused too
        raise ParameterError(f"ε must be ≥ 0 and δ in [0, 1]; got ε={epsilon}, δ={delta}")
    return min(1.0, math.tanh(epsilon / 2) + 2 * delta / (1 + math.exp(min(epsilon, 700))))


def attribute_bound(epsilon: float, delta: float, holdout_rate: float) -> float:
    """The most a member's rate of correct guesses can exceed ``holdout_rate``, a held-out
    row's, under (ε, δ)-DP: a correct guess is an event of the release, so its chance with
    the row in is at most e^ε·(its chance without) + δ, and the chance of a wrong guess at
    least e^−ε·(its chance without − δ)."""
    most = min(1.0, math.exp(min(epsilon, 700)) * holdout_rate + delta,
               1 - math.exp(-epsilon) * (1 - holdout_rate - delta))
    return max(0.0, most - holdout_rate)


@dataclass(frozen=True)
class Attack:
    """One attack's figure beside its bound. ``advantage`` is TPR − FPR for a membership
    attack, a member's accuracy less a held-out row's for attribute inference."""

    name: str
    kind: str  # "membership" or "attribute"
    advantage: float
    interval: tuple[float, float]  # 95 % bootstrap interval of the advantage
    bound: float
    auc: float | None = None
    auc_interval: tuple[float, float] | None = None
    # what the advantage reaches by chance on rows the release never saw: at most 5 % of
    # the time above this
    chance: float | None = None
    # beyond the bound by more than sampling explains (FALSE_FLAGS over a report)
    above_bound: bool = False
    detail: dict = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        """The figure in a word or three, for a reader who does not compare it by hand."""
        if math.isnan(self.advantage):
            return "not measured"
        if self.above_bound:
            return "ABOVE ITS BOUND"
        if self.chance is not None and self.advantage <= self.chance:
            return "within chance"
        return "under its bound"

    def as_dict(self) -> dict:
        """The figures as JSON holds them (a figure not measured is null)."""
        return _plain(asdict(self)) | {"verdict": self.verdict}


def _plain(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


@dataclass
class _Tables:
    """The rows attacked, in the unit space: targets (members first, then held-out rows),
    the reference (other held-out rows) and the release, with their binned codes."""

    members: int  # targets[:members] are members
    targets: np.ndarray
    reference: np.ndarray
    release: np.ndarray
    codes: np.ndarray  # the targets' codes over FIDELITY_BINS bins
    release_codes: np.ndarray  # the release's
    # attribute inference: the column guessed (None: none), and the targets and the release
    # as the attacker's tree reads them, over their schema (see _guessable)
    sensitive: str | None = None
    frames: tuple[pd.DataFrame, pd.DataFrame] | None = None
    schema: Schema | None = None

    @property
    def truth(self) -> np.ndarray:
        return np.arange(len(self.targets)) < self.members


def risk(members: pd.DataFrame, release: pd.DataFrame, holdout: pd.DataFrame,
         schema: Schema, epsilon: float, delta: float, sensitive: str | None = None,
         unit: str | None = None, seed: int = 0,
         progress: Callable[[str], None] | None = None) -> list[Attack]:
    """Every attack on ``release`` with its bound at (``epsilon``, ``delta``): membership by
    the closest record, by a density ratio, by exact and near copies and by rare rows
    reproduced; attribute inference of ``sensitive`` (default: the schema's target; none
    without one; a number or a date is guessed to its bin). ``members`` are the rows the
    release was made from, ``holdout`` rows of the same population it never saw (no person
    in both); with a privacy ``unit`` column, one row of each person is attacked and the
    reference holds other people only. ``seed`` picks which rows are attacked."""
    membership_bound(epsilon, delta)  # refuses a bad ε or δ before anything is read
    target = sensitive or schema.target
    if target is not None and target not in schema.names:  # refused before any attack
        raise SchemaError(f"sensitive column {target!r} is not in the schema")
    rng = np.random.default_rng(seed)
    tables = _prepare(members, release, holdout, schema, unit, target, rng)
    return _attacks(tables, epsilon, delta, rng, progress or (lambda _: None))


def _attacks(tables: _Tables, epsilon: float, delta: float, rng: np.random.Generator,
             say: Callable[[str], None]) -> list[Attack]:
    """The attacks on prepared rows, in :func:`risk`'s order."""
    from sklearn.neighbors import NearestNeighbors

    bound = membership_bound(epsilon, delta)
    k = min(NEIGHBOURS, len(tables.release), len(tables.reference))
    say("nearest rows of the release")
    index = NearestNeighbors(algorithm="brute").fit(tables.release)
    copied = _present(tables.targets, tables.release)
    near = _distances(index, tables.targets, k, copied)
    say("nearest rows of the reference")
    reference = NearestNeighbors(algorithm="brute").fit(tables.reference)
    near_ref = _distances(reference, tables.targets, k)
    reference_near = _distances(index, tables.reference, 1,
                                _present(tables.reference, tables.release))
    tau = float(np.quantile(reference_near[:, 0], NEAR))
    truth = tables.truth
    say("membership attacks")
    attacks = [
        _membership("closest record", -near[:, 0], truth, bound, rng, {
            "tpr_at_1pct_fpr": _tpr_at(-near[:, 0], truth, 0.01)}),
        _membership("density ratio", np.log(near_ref[:, -1] + 1e-9)
                    - np.log(near[:, -1] + 1e-9), truth, bound, rng, {"k": k}),
        _membership("exact copies", copied.astype(float), truth, bound, rng, {}),
        _membership("near copies", (near[:, 0] <= tau).astype(float), truth, bound, rng,
                    {"distance": tau, "reference_share": NEAR}),
        _rare(tables, truth, bound, rng)]
    if tables.sensitive is not None:
        say(f"attribute inference of {tables.sensitive!r}")
        attacks.append(_attribute(tables, epsilon, delta, rng))
    return attacks


def _prepare(members: pd.DataFrame, release: pd.DataFrame, holdout: pd.DataFrame,
             schema: Schema, unit: str | None, sensitive: str | None,
             rng: np.random.Generator) -> _Tables:
    """Targets, reference and release in the unit space, over one schema that holds every
    category seen and bounds that cover every real value. The hold-out is cut in two by
    person (by row without a unit): targets and the reference never share one."""
    if len(holdout) < 2 or len(members) < 1 or len(release) < 1:
        raise SchemaError("risk needs rows in the real table and the release and at least "
                          "two held-out rows")
    for col in schema:
        lacks = "categories" if col.kind == CATEGORICAL else "bounds"
        if (col.categories if col.kind == CATEGORICAL else col.lower) is None:
            raise SchemaError(f"column {col.name!r} has no {lacks} in the schema: give the "
                              "run's ledger, whose schema holds what the run learned")
    own = _people(holdout, unit)
    people = rng.permutation(own.max() + 1)
    kept = np.isin(own, people[:len(people) // 2])
    outside = _one_each(holdout[~kept], own[~kept], rng)
    inside = _one_each(members, _people(members, unit), rng)
    m = min(TARGETS, len(inside), len(outside))
    if m < 1 or not kept.any():
        raise SchemaError("the hold-out is too small to attack with: it needs two people")
    chosen = members.iloc[rng.choice(inside, m, replace=False)]
    strangers = holdout[~kept].iloc[rng.choice(outside, m, replace=False)]
    real = pd.concat([members, holdout], ignore_index=True)
    schema = comparable(schema, members, holdout, release, real=real)
    targets = model_frame(pd.concat([chosen, strangers], ignore_index=True), schema)
    reference = model_frame(holdout[kept], schema)
    released = model_frame(release, schema, released=True)
    model = model_schema(schema)
    space = Space(model)
    disc = Discretizer(model, bins=FIDELITY_BINS)
    codes = disc.codes(targets), disc.codes(released)
    tables = _Tables(m, _unit(space, targets), _unit(space, reference),
                     _unit(space, released), *codes)
    if sensitive is None:
        return tables
    guessed, frames = _guessable(schema, disc, sensitive, (targets, released), codes)
    return replace(tables, sensitive=sensitive, frames=frames, schema=guessed)


def _guessable(schema: Schema, disc: Discretizer, name: str,
               frames: tuple[pd.DataFrame, pd.DataFrame],
               codes: tuple[np.ndarray, np.ndarray]
               ) -> tuple[Schema, tuple[pd.DataFrame, pd.DataFrame]]:
    """The model-space frames with column ``name`` as a label a guess gets right or wrong: a
    category as it is; a number or a date as its bin's number (FIDELITY_BINS equal bins
    over its bounds), or "missing". An indicated column's indicator goes with it: it would
    tell the guess where the value is missing."""
    model = disc.schema
    if schema[name].kind == CATEGORICAL:
        return model, frames
    j = model.names.index(name)
    indicated = schema[name].missing == "indicator"
    # bins by number: readable labels round, and two narrow bins could read alike
    labels = np.array([*map(str, range(disc.sizes[j])), ABSENT], dtype=object)
    out = []
    for frame, code in zip(frames, codes, strict=True):
        label = labels[code[:, j]]
        if indicated:
            label[frame[model.names[j + 1]].to_numpy() == ABSENT] = ABSENT
        out.append(frame.drop(columns=model.names[j + 1:j + 1 + indicated])
                   .assign(**{name: label}))
    column = Column(name, CATEGORICAL, categories=tuple(labels), public=True)
    columns = [column if c.name == name else c for c in model
               if c.name not in model.names[j + 1:j + 1 + indicated]]
    return replace(model, columns=tuple(columns)), (out[0], out[1])


def _people(rows: pd.DataFrame, unit: str | None) -> np.ndarray:
    """Each row's person, numbered from 0 (every row its own without a unit)."""
    if unit is None:
        return np.arange(len(rows))
    if unit not in rows.columns:
        raise SchemaError(f"privacy unit column {unit!r} is not in the table")
    return pd.factorize(rows[unit].astype(str))[0]


def _one_each(rows: pd.DataFrame, people: np.ndarray, rng: np.random.Generator
              ) -> np.ndarray:
    """Positions in ``rows`` of one row per person, drawn at random."""
    order = rng.permutation(len(rows))
    _, first = np.unique(people[order], return_index=True)
    return order[first]


def _unit(space: Space, frame: pd.DataFrame) -> np.ndarray:
    """Rows as points: numbers in [0, 1], each category one-hot at 1/√2 (two categories lie
    at distance 1). A missing number is a value and an indicator column in model space."""
    x = space.encode(frame)
    parts = []
    for j, card in enumerate(space.cards):
        if card:
            parts.append(np.eye(card)[x[:, j].astype(int)] / math.sqrt(2))
        else:
            parts.append(x[:, j:j + 1])
    return np.hstack(parts)


def _distances(index, rows: np.ndarray, k: int, copied: np.ndarray | None = None
               ) -> np.ndarray:
    """Distances to the k nearest rows of ``index``, the nearest 0 for a ``copied`` row: the
    library's ‖a‖² + ‖b‖² − 2ab leaves a copy about 1e-7 from itself, and copies must tie."""
    near = index.kneighbors(rows, n_neighbors=k)[0]
    if copied is not None:
        near[copied, 0] = 0.0
    return near


def _present(rows: np.ndarray, release: np.ndarray) -> np.ndarray:
    """Whether each row is a row of the release, value for value."""
    seen = {row.tobytes() for row in release}
    return np.array([row.tobytes() in seen for row in rows], dtype=bool)


def _membership(name: str, score: np.ndarray, truth: np.ndarray, bound: float,
                rng: np.random.Generator, detail: dict) -> Attack:
    """A score (higher: more likely a member) read as a membership test. The bootstrap
    resamples members and held-out rows each within their own: the counts of each side at
    each distinct score are then multinomial, drawn all at once."""
    counts = _counts(score, truth)
    auc, advantage, _ = _curves(*(c[None, :] for c in counts))
    draws = [rng.multinomial(c.sum(), c / c.sum(), size=BOOTSTRAP) for c in counts]
    aucs, advantages, _ = _curves(*draws)
    m, n = (int(c.sum()) for c in counts)
    beyond = bound + margin(m, n, FALSE_FLAGS / ATTACKS)
    return Attack(name, "membership", float(advantage[0]), _interval(advantages), bound,
                  float(auc[0]), _interval(aucs), margin(m, n, 0.05),
                  bool(advantage[0] > beyond), detail)


def _counts(score: np.ndarray, truth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Members' and held-out rows' counts at each distinct score, lowest first."""
    levels = np.unique(score, return_inverse=True)[1].ravel()
    size = int(levels.max()) + 1
    return (np.bincount(levels[truth], minlength=size),
            np.bincount(levels[~truth], minlength=size))


def _curves(ins: np.ndarray, outs: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple]:
    """Per row of counts by score level (ascending), members ``ins`` and held-out ``outs``:
    the AUC (ties counted half), the best TPR − FPR over every threshold, and the ROC's
    points (TPR, FPR) from the highest threshold down."""
    m, n = ins.sum(axis=1, keepdims=True), outs.sum(axis=1, keepdims=True)
    tpr = np.cumsum(ins[:, ::-1], axis=1) / m
    fpr = np.cumsum(outs[:, ::-1], axis=1) / n
    below = np.cumsum(outs, axis=1) - outs  # held-out rows scored strictly lower
    auc = (ins * (below + 0.5 * outs)).sum(axis=1) / (m * n)[:, 0]
    return auc, np.maximum((tpr - fpr).max(axis=1), 0.0), (tpr, fpr)


def _tpr_at(score: np.ndarray, truth: np.ndarray, most: float) -> float:
    """The members found at a false-positive rate of at most ``most`` (0 if no threshold
    stays that low)."""
    tpr, fpr = _curves(*(c[None, :] for c in _counts(score, truth)))[2]
    return float(tpr[fpr <= most].max(initial=0.0))


def _interval(values) -> tuple[float, float]:
    low, high = np.nanpercentile(np.asarray(values, dtype=float), [2.5, 97.5])
    return float(low), float(high)


def _rare(tables: _Tables, truth: np.ndarray, bound: float,
          rng: np.random.Generator) -> Attack:
    """Rows whose combination of binned values no other target shares, read as members
    when the release holds that combination."""
    _, inverse, counts = np.unique(tables.codes, axis=0, return_inverse=True,
                                   return_counts=True)
    rare = counts[inverse.ravel()] == 1
    held = {row.tobytes() for row in tables.release_codes}
    reproduced = np.array([row.tobytes() in held for row in tables.codes], dtype=float)
    detail = {"rare_members": int((rare & truth).sum()),
              "rare_holdout": int((rare & ~truth).sum())}
    if min(detail.values()) < RARE_LEAST:
        return Attack("rare rows reproduced", "membership", math.nan, (math.nan, math.nan),
                      bound, detail=detail | {"why": f"fewer than {RARE_LEAST} rare rows"})
    return _membership("rare rows reproduced", reproduced[rare], truth[rare], bound, rng,
                       detail)


def _attribute(tables: _Tables, epsilon: float, delta: float,
               rng: np.random.Generator) -> Attack:
    """A depth-10 tree trained on the release guesses the sensitive column from the other
    columns: right how much more often on members than on held-out rows."""
    target, schema = tables.sensitive, tables.schema
    name = f"attribute inference of {target!r}"
    bound = attribute_bound(epsilon, delta, 0.0)
    if len(schema.names) == 1:
        return Attack(name, "attribute", math.nan, (math.nan, math.nan), bound,
                      detail={"why": "no other column to guess it from"})
    rows, release = tables.frames
    if release[target].nunique() > 1:
        model = classifier(schema, target).fit(release.drop(columns=target), release[target])
        right = (model.predict(rows.drop(columns=target)) == rows[target].to_numpy()
                 ).astype(float)
    else:  # one value released: the guess is that value
        right = (rows[target].to_numpy() == release[target].iloc[0]).astype(float)
    truth = tables.truth
    inside, outside = right[truth], right[~truth]
    rate, base = float(inside.mean()), float(outside.mean())
    draws = (rng.binomial(len(inside), rate, BOOTSTRAP) / len(inside)
             - rng.binomial(len(outside), base, BOOTSTRAP) / len(outside))
    # flagged when even the members' rate at its lower Hoeffding limit exceeds what the
    # held-out rate at its upper one allows (each limit half of this attack's FALSE_FLAGS)
    slack = [math.sqrt(math.log(2 * ATTACKS / FALSE_FLAGS) / (2 * len(part)))
             for part in (inside, outside)]
    high = min(1.0, base + slack[1])
    flagged = rate - slack[0] > high + attribute_bound(epsilon, delta, high)
    # by Hoeffding, the members' rate exceeds the held-out rows' by more than this at most
    # 5 % of the time where both guess alike: the reach of a membership attack's chance line
    chance = margin(len(inside), len(outside), 0.05)
    return Attack(name, "attribute", rate - base,
                  _interval(draws), attribute_bound(epsilon, delta, base), chance=chance,
                  above_bound=flagged,
                  detail={"member_accuracy": rate, "holdout_accuracy": base})
