"""The independent-marginals baseline, and through it the method interface of DESIGN.md."""


import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synth.errors import BudgetError, SynthError
from synth.evaluation import evaluate, marginal_tvd
from synth.methods import FitContext, Progress, Spent, StageStarted, make
from synth.privacy.budget import Budget
from synth.privacy.events import Gaussian
from synth.privacy.mechanisms import replayable_noise
from synth.schema import infer_schema

BUDGET = Budget(1.0, 1e-5, {"measure": 1.0})


def gaussian_epsilon(sigma: float, sensitivity: float, delta: float) -> float:
    """ε at δ of one Gaussian mechanism by dp-accounting's RDP accountant (a fine grid of
    orders), not by the package's own zCDP conversion."""
    from dp_accounting import dp_event, rdp

    accountant = rdp.RdpAccountant(orders=list(np.linspace(1.01, 200, 20_000)))
    accountant.compose(dp_event.GaussianDpEvent(sigma / sensitivity))
    return accountant.get_epsilon(delta)


def test_output_has_the_schema_columns_dtypes_and_domains(sample):
    table, schema = sample
    model = make("independent").fit(table, schema, BUDGET, FitContext(postprocessing_seed=0))
    out = model.sample(3000)
    assert list(out.columns) == schema.names and len(out) == 3000
    for col in schema:
        values = out[col.name]
        if col.kind == "numeric":
            assert values.dtype == np.int64
            assert values.between(col.lower, col.upper).all()
        else:
            seen = set(values.fillna("<missing>"))
            assert seen <= set(col.categories)
    assert out["workclass"].isna().any()  # the missing category comes back as missing


def test_the_seed_steers_post_processing_only(sample):
    table, schema = sample

    def run(seed):
        model = make("independent").fit(table, schema, BUDGET,
                                        FitContext(postprocessing_seed=seed))
        return model, model.sample(500)

    (a, first), (b, second) = run(1), run(1)
    assert not first.equals(second)  # the same seed twice: fresh noise, another release
    assert not np.allclose(a.marginals_[0], b.marginals_[0])
    with replayable_noise(4):
        c = run(1)[1]
    with replayable_noise(4):
        pd.testing.assert_frame_equal(c, run(1)[1])  # only the test switch replays it


def test_events_stage_progress_and_spend(sample):
    table, schema = sample
    events = []
    model = make("independent").fit(table, schema, BUDGET, FitContext(postprocessing_seed=0,
                                                                      on_event=events.append))
    assert [e.stage for e in events if isinstance(e, StageStarted)] == ["count", "measure"]
    assert isinstance(events[0], StageStarted)  # the table is counted, then measured
    spent = [e for e in events if isinstance(e, Spent)]
    assert len(spent) == 1 and spent[0].total_epsilon == model.ledger_.total_epsilon
    last = [e for e in events if isinstance(e, Progress)][-1]
    assert last.step == last.total == 1  # one Gaussian draw for every cell


def test_ledger_records_the_gaussian_it_ran(sample):
    table, schema = sample
    model = make("independent").fit(table, schema, BUDGET, FitContext(postprocessing_seed=0))
    (entry,) = model.ledger_.entries
    assert isinstance(entry.event, Gaussian)
    # d histograms under replacement: two cells move by one in each, so √(2d)
    assert entry.event.sensitivity == pytest.approx(np.sqrt(2 * len(schema)))
    # accounted independently (dp-accounting's RDP accountant, a Gaussian of noise multiplier
    # σ/Δ₂): it costs at most the budget, and 1 % less noise would cost more
    assert gaussian_epsilon(entry.event.sigma, entry.event.sensitivity, 1e-5) <= 1.0 + 1e-6
    assert gaussian_epsilon(0.99 * entry.event.sigma, entry.event.sensitivity, 1e-5) > 1.0
    assert entry.epsilon <= 1.0 and entry.delta == 1e-5
    assert model.ledger_.to_dict()["entries"][0]["relation"].startswith("replace one record")


@settings(max_examples=15, deadline=None)
@given(eps=st.floats(0.05, 10), log_delta=st.floats(-9, -4), domain=st.floats(0.05, 0.9))
def test_ledger_total_never_exceeds_the_budget(sample, eps, log_delta, domain):
    table, _ = sample
    schema = infer_schema(table, target="income").confirm()  # domains are learned too
    budget = Budget(eps, 10.0**log_delta, {"domain": domain, "measure": 1 - domain})
    model = make("independent")
    try:
        model.fit(table, schema, budget, FitContext(postprocessing_seed=0))
        assert model.schema_.releasable
    except BudgetError as exc:  # too small a budget is refused, not overspent
        assert "the bounds would be noise" in str(exc) or "a run may lose" in str(exc)
    assert model.ledger_.total_epsilon <= budget.epsilon * (1 + 1e-9)
    assert model.ledger_.total_delta <= budget.delta * (1 + 1e-9)


def test_data_derived_domains_need_a_domain_share(sample):
    table, _ = sample
    schema = infer_schema(table).confirm()
    with pytest.raises(BudgetError, match="give the budget a 'domain' share"):
        make("independent").fit(table, schema, BUDGET)
    model = make("independent")
    shares = model.default_shares(schema)  # 0.2 when numeric bounds are learned, else 0.1
    assert shares == pytest.approx({"domain": 0.2, "measure": 0.8})
    categories = schema.declare_public([c.name for c in schema if c.kind == "numeric"])
    assert model.default_shares(categories) == pytest.approx({"domain": 0.1, "measure": 0.9})
    model.fit(table, schema, Budget(4.0, 1e-5, shares), FitContext(postprocessing_seed=0))
    assert all(c.learned for c in model.schema_)


def test_budget_without_the_method_stage_is_refused(sample):
    table, schema = sample
    with pytest.raises(SynthError, match=r"needs budget shares for \['measure'\]"):
        make("independent").fit(table, schema, Budget(1.0, 1e-5, {"gan": 1.0}))


def test_unfitted_model_cannot_sample():
    with pytest.raises(SynthError, match="not fitted"):
        make("independent").sample(10)


def test_marginals_are_accurate_but_pairs_are_not(adult_parts, adult_public):
    train, _, test = adult_parts
    out = make("independent").fit(train, adult_public, Budget(8.0, 1e-5, {"measure": 1}),
                                  FitContext(postprocessing_seed=0)).sample()
    fid = marginal_tvd(train, out, adult_public)
    assert fid.tvd1 < 0.02  # each column is right ...
    assert fid.tvd2 > 3 * fid.tvd1  # ... but the columns are independent
    result = evaluate(test, out, adult_public, real_train=train)
    assert result["accuracy"] <= result["majority"] + 0.02  # nothing to learn from


@pytest.mark.parametrize("rows", [30, 50_000])
def test_the_preview_states_the_noise_against_a_small_categorys_own_size(rows):
    """A steward's walk read '±4869 % of its own size' on a 30-row table: past its size the
    noise is said in times, and the category lost in it."""
    from .conftest import given as population

    table = pd.DataFrame({"a": ["x", "y"] * (rows // 2), "b": ["u", "v", "w", "z", "t"] * (
        rows // 5)})
    n = population(table)
    (stage,) = [s for s in make("independent").preview(
        n, infer_schema(table).confirm(), Budget(1.0, 1e-5)) if s.mechanism.startswith("Gaussian")]
    ratio = stage.event.sigma / (0.01 * n)
    said = stage.meaning.split("i.e. ")[1]
    if ratio < 1:
        assert said == f"±{ratio:.0%} of its own size"
    else:
        assert said.startswith(f"{ratio:,.0f} times its own size") and "lost" in said
        assert "%" not in said
