"""Noise previews: worked out without the data, and the very scales a fit then uses."""

import json

from synth.methods import FitContext, make
from synth.privacy.budget import Budget
from synth.privacy.unit import Population


def fitted(name: str, sample, **params):
    table, schema = sample
    model = make(name, params)
    budget = Budget(1.0, 1e-5, model.default_shares(schema))
    preview = model.preview(len(table), schema, budget)
    model.fit(table, schema, budget, FitContext(postprocessing_seed=0))
    entries = {e.stage: e for e in model.ledger_.entries}
    return {s.stage: s for s in preview}, entries


def number(text: str, after: str) -> float:
    return float(text.split(after)[1].split()[0].rstrip(","))


def test_preview_reads_no_data_and_covers_learned_domains(sample):
    table, schema = sample
    private = schema.declare_public([c.name for c in schema][1:])  # the first column is learned
    model = make("dpgan")
    budget = Budget(1.0, 1e-5, model.default_shares(private))
    stages = [s.stage for s in model.preview(len(table), private, budget)]
    assert stages == ["domain", "gan"]  # only n and the public schema went in
    json.dumps([{**vars(s), "event": s.event and s.event.to_dict()}  # plain values
                for s in model.preview(len(table), private, budget)])


def test_impossible_settings_say_so_before_running(sample):
    """A Gaussian stage with δ = 0: the plan refuses it once, and the preview shows no noise
    for a mechanism that cannot run."""
    table, schema = sample
    model = make("independent")
    zero_delta = Budget(1.0, 0.0, model.default_shares(schema))
    refused = model.plan(Population(len(table), len(table)), schema,
                         model.budget_for(zero_delta, schema))
    assert len(refused.refusals) == 1 and "δ" in str(refused.refusals[0])
    assert model.preview(len(table), schema, zero_delta) == []
