"""The measuring protocol's figures: marginal distances and train-on-synthetic utility.

Everything here reads the real table: the results are for the steward's eyes, not for release.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from synth.declarations import present_numbers
from synth.encoding import Discretizer
from synth.errors import SchemaError
from synth.marginals import marginal
from synth.missing import encode, model_frame, model_schema
from synth.quality import comparable, quality
from synth.schema import (
    CATEGORICAL,
    OTHER,
    Schema,
    category_values,
    check_target,
    prepare,
)

FIDELITY_BINS = 10


@dataclass(frozen=True)
class Fidelity:
    """Average total variation distance over all 1-way and all 2-way marginals."""

    tvd1: float
    tvd2: float
    per_column: pd.Series  # column → 1-way TVD
    per_pair: pd.DataFrame  # symmetric matrix of 2-way TVDs, NaN on the diagonal
    # column → share of the real rows the release cannot hold (outside its bounds, folded)
    outside: pd.Series = field(default_factory=lambda: pd.Series(dtype=float))
    # column → share of the release's rows beyond every real value (:func:`beyond`)
    beyond: pd.Series = field(default_factory=lambda: pd.Series(dtype=float))


def _histogram(codes: np.ndarray, sizes: np.ndarray, columns: tuple[int, ...]) -> np.ndarray:
    """The marginal over ``columns`` as shares of the rows."""
    counts = marginal(codes, sizes, columns).astype(float)
    return counts / max(counts.sum(), 1.0)


def outside(real: pd.DataFrame, schema: Schema) -> pd.Series:
    """Per column, the share of ``real``'s rows the release cannot hold: a number or date
    beyond its released bounds (a blank is a value it holds), a category it folds into
    ``other`` or lacks. For the steward's eyes: it reads the private table."""
    shares = {}
    for col in schema:
        if col.name not in real.columns or not len(real):
            continue
        values = real[col.name]
        if col.kind == CATEGORICAL:  # a list with 'other' folds what it lacks into it
            kept = set(col.categories or ()) - {OTHER}
            shares[col.name] = float((~category_values(values).isin(kept)).mean()) if (
                OTHER in (col.categories or ())) else 0.0
        elif col.lower is not None:
            numbers = present_numbers(col, values)
            shares[col.name] = float(((numbers < col.lower) | (numbers > col.upper)).sum()
                                     / len(values))
    return pd.Series(shares, dtype=float)


def beyond(real: pd.DataFrame, synth: pd.DataFrame, schema: Schema) -> pd.Series:
    """Per number or date column, the share of ``synth``'s rows beyond the real table's
    range (below its least value or above its greatest): values the release makes up
    where its bounds, declared or learned with noise, are wider than the data. For the
    steward's eyes: it reads the private table."""
    shares = {}
    for col in schema:
        if (col.kind == CATEGORICAL or col.name not in real.columns
                or col.name not in synth.columns or not len(synth)):
            continue
        seen = present_numbers(col, real[col.name])
        if len(seen):
            made = present_numbers(col, synth[col.name], released=True)
            shares[col.name] = float(((made < seen.min()) | (made > seen.max())).sum()
                                     / len(synth))
    return pd.Series(shares, dtype=float)


def marginal_tvd(real: pd.DataFrame, synth: pd.DataFrame, schema: Schema,
                 bins: int = FIDELITY_BINS) -> Fidelity:
    """TVDs between the tables' marginals; numbers in ``bins`` equal-width bins over the
    schema's bounds widened to cover the real values (never clipped into a release's
    learned range), categories as they are (categories the schema lacks are added); with
    each column's share of real rows :func:`outside` the release and of the release's rows
    :func:`beyond` the real range."""
    lost, made_up = outside(real, schema), beyond(real, synth, schema)
    schema = comparable(schema, real, synth, real=real)
    a, b = prepare(real, schema), prepare(synth, schema, released=True)
    # a missing number is a value: its indicator is compared too, where either table has any
    schema = replace(schema, columns=tuple(
        replace(c, missing="none") if c.kind != CATEGORICAL and c.missing == "indicator"
        and not (a[c.name].isna().any() or b[c.name].isna().any()) else c for c in schema))
    a, b = encode(a, schema), encode(b, schema)
    schema = model_schema(schema)
    disc = Discretizer(schema, bins=bins)
    a, b = disc.codes(a), disc.codes(b)
    if len(b) == 0:
        raise SchemaError("the synthetic table has no rows")
    names, sizes = schema.names, disc.sizes
    per_column = pd.Series(
        [0.5 * np.abs(_histogram(a, sizes, (j,)) - _histogram(b, sizes, (j,))).sum()
         for j in range(len(names))], index=names, dtype=float)
    pair = np.full((len(names), len(names)), np.nan)
    for i, j in itertools.combinations(range(len(names)), 2):
        p, q = _histogram(a, sizes, (i, j)), _histogram(b, sizes, (i, j))
        pair[i, j] = pair[j, i] = 0.5 * np.abs(p - q).sum()
    tvd2 = float(np.nanmean(pair)) if len(names) > 1 else float("nan")
    return Fidelity(float(per_column.mean()), tvd2, per_column,
                    pd.DataFrame(pair, index=names, columns=names), lost, made_up)


def classifier(schema: Schema, target: str, kind: str = "tree"):
    """One-hot categoricals (over the schema's categories), then a depth-10 tree on raw
    numbers or a logistic regression on numbers scaled to [0, 1] by their bounds."""
    # scikit-learn is imported here, not at the top: it takes ~1 s, and the app's first page
    # (and the CLI's fits) never need it
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer, OneHotEncoder
    from sklearn.tree import DecisionTreeClassifier

    features = [c for c in schema if c.name != target]
    cats = [c for c in features if c.kind == CATEGORICAL]
    nums = [c for c in features if c.kind != CATEGORICAL]
    if kind == "tree":
        numeric, model = "passthrough", DecisionTreeClassifier(max_depth=10, random_state=0)
    else:
        lo = np.array([c.lower for c in nums], dtype=float)
        span = np.array([c.upper - c.lower or 1.0 for c in nums], dtype=float)
        numeric = FunctionTransformer(lambda x: (np.asarray(x, dtype=float) - lo) / span)
        model = LogisticRegression(max_iter=1000)
    encode = ColumnTransformer(
        [("categorical", OneHotEncoder(categories=[list(c.categories) for c in cats],
                                       handle_unknown="ignore"), [c.name for c in cats]),
         ("numeric", numeric, [c.name for c in nums])])
    return make_pipeline(encode, model)


def tree_utility(train: pd.DataFrame, test: pd.DataFrame, schema: Schema,
                 target: str | None = None, kind: str = "tree", *, released: bool = True
                 ) -> dict[str, float]:
    """Accuracy, balanced accuracy and macro F1 of a depth-10 decision tree (or, with
    ``kind="logistic"``, a logistic regression) trained on ``train`` (a release, its dates
    in their release format, unless not ``released``) and scored on ``test`` (real)."""

    target = _target(schema, target)
    schema = comparable(schema, train, test)
    train = model_frame(train, schema, released=released)
    test = model_frame(test, schema)
    schema = model_schema(schema)
    if train.empty:
        raise SchemaError("the training table has no rows")
    check_target(test, target)
    if train[target].nunique() < 2 and kind == "logistic":
        predicted = np.full(len(test), train[target].iloc[0], dtype=object)
    else:
        model = classifier(schema, target, kind).fit(train.drop(columns=target), train[target])
        predicted = model.predict(test.drop(columns=target))
    return scores(test[target], predicted)


def scores(truth: pd.Series, predicted: np.ndarray) -> dict[str, float]:
    """Accuracy, balanced accuracy (the mean of the classes' recalls) and macro F1 (the mean
    of the classes' F1) of ``predicted`` against ``truth``, each class of ``truth`` counted."""
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score

    with warnings.catch_warnings():  # a class never predicted has F1 0 by definition
        warnings.simplefilter("ignore")
        return {"accuracy": float(accuracy_score(truth, predicted)),
                "balanced_accuracy": float(balanced_accuracy_score(truth, predicted)),
                "macro_f1": float(f1_score(truth, predicted, average="macro",
                                           labels=sorted(set(truth)), zero_division=0))}


def majority_rate(test: pd.DataFrame, target: str) -> float:
    """Accuracy of always predicting the test table's most frequent class."""
    return float(test[target].value_counts(normalize=True).max())


def chance(test: pd.DataFrame, target: str) -> dict[str, float]:
    """What no learning scores on ``test``: always answering its most frequent class gets
    the majority rate in accuracy, 1/K in balanced accuracy (K classes) and, in macro F1,
    that class's F1 over K."""
    truth = test[target]
    return {f"{'majority' if key == 'accuracy' else 'chance_' + key}": value
            for key, value in scores(truth, np.full(len(truth), truth.mode().iloc[0],
                                                    dtype=object)).items()}


def _target(schema: Schema, target: str | None) -> str:
    target = target or schema.target
    if target is None:
        raise SchemaError("no target column: name one to measure utility")
    if target not in schema.names:
        raise SchemaError(f"target column {target!r} is not in the schema")
    if schema[target].kind != CATEGORICAL:
        raise SchemaError(f"target column {target!r} must be categorical")
    return target


def utility(real_test: pd.DataFrame, synth: pd.DataFrame, schema: Schema,
            target: str | None = None, real_train: pd.DataFrame | None = None
            ) -> dict[str, float]:
    """Tree accuracy, balanced accuracy and macro F1 and logistic-regression accuracy of
    ``synth`` on ``real_test``, and the :func:`baselines`."""
    reference = baselines(real_train, real_test, schema, target)
    target = _target(schema, target)
    return {**tree_utility(synth, real_test, schema, target),
            "logistic_accuracy":
                tree_utility(synth, real_test, schema, target, "logistic")["accuracy"],
            **reference}


def baselines(real_train: pd.DataFrame | None, real_test: pd.DataFrame, schema: Schema,
              target: str | None = None) -> dict[str, float]:
    """What a synthetic table's utility is read against: :func:`chance` on ``real_test``
    and, with ``real_train``, the tree trained on the real rows (``real_accuracy``,
    ``real_balanced_accuracy``, ``real_macro_f1``)."""
    target = _target(schema, target)
    test = prepare(real_test, comparable(schema, real_test))
    check_target(test, target)
    result = chance(test, target)
    if real_train is not None:
        real = tree_utility(real_train, real_test, schema, target, released=False)
        result.update({f"real_{key}": value for key, value in real.items()})
    return result


def evaluate(real_test: pd.DataFrame, synth: pd.DataFrame, schema: Schema,
             target: str | None = None, real_train: pd.DataFrame | None = None) -> dict[str, Any]:
    """The protocol's figures for one synthetic table: :func:`utility` on ``real_test`` and
    fidelity (TVDs and :func:`quality`) against ``real_train`` when given (the protocol),
    else against ``real_test``."""
    scores = utility(real_test, synth, schema, target, real_train)
    reference = real_train if real_train is not None else real_test
    fidelity = marginal_tvd(reference, synth, schema)
    report = quality(reference, synth, schema)
    return {"rows": len(synth), **scores, "tvd1": fidelity.tvd1, "tvd2": fidelity.tvd2,
            "column_shapes": report.column_shapes,
            "column_pair_trends": report.column_pair_trends, "quality": report.overall,
            "data_validity": report.validity,
            "tvd_reference": "train" if real_train is not None else "test"}
