"""Synthesize: choose a method and a budget, run it, download the release."""

import json
import time

import pandas as pd
import streamlit as st

from synth.cli import run_command
from synth.errors import SynthError
from synth.evaluation import marginal_tvd, utility
from synth.methods import METHODS, FitContext, Progress, Spent, StageStarted, make
from synth.plots import ledger_chart, marginal_chart, tvd_heatmap, utility_chart
from synth.privacy.budget import Budget, default_delta, merge_shares
from synth.privacy.domains import DOMAIN
from synth.protocol import protocol_split
from ui import layout, state

EPSILONS = [0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0]

ds = layout.sidebar()
st.title("Synthesize")
schema = ds.schema

method = st.selectbox("Method", list(METHODS), format_func=lambda m: METHODS[m].title)
cls = METHODS[method]
st.caption(f"{cls.summary}  \nSource: {cls.paper}")

left, right = st.columns(2)
epsilon = left.select_slider("Total privacy budget ε (log scale)", EPSILONS, value=1.0)
n = len(ds.table)
delta = right.number_input(
    f"δ (default 1/n^1.1 = {default_delta(n):.2e} for n = {n:,})", min_value=0.0,
    max_value=0.1, value=float(f"{default_delta(n):.2e}"), format="%.2e", step=1e-6)
shares_given = {}
if not schema.releasable:
    shares_given[DOMAIN] = st.slider(
        "Share of ε for learning data-derived domains privately", 0.05, 0.9, 0.1, 0.05)
seed = st.number_input("Seed", min_value=0, value=0, step=1)
holdout = schema.target is not None and st.checkbox(
    "Hold out 1/6 of the rows to measure utility honestly (they are not synthesized)",
    value=True)

finished = False
if st.button("Run", type="primary"):
    with state.guard("The run"):
        model = make(method)
        budget = Budget(epsilon, delta, merge_shares(model.default_shares(schema), shares_given))
        private, test = ds.table, None
        if holdout:
            train, val, test = protocol_split(ds.table)
            private = pd.concat([train, val], ignore_index=True)
        bar = st.progress(0.0, text="starting")
        log = st.empty()

        def show(event) -> None:
            if isinstance(event, StageStarted):
                bar.progress(0.0, text=f"{event.stage}: {event.description}")
            elif isinstance(event, Progress) and event.total:
                bar.progress(event.step / event.total, text=f"{event.stage}: {event.step}/"
                                                             f"{event.total}")
            elif isinstance(event, Spent):
                log.caption(f"spent ε = {event.total_epsilon:.4g} of {epsilon:g} so far")

        started = time.perf_counter()
        model.fit(private, schema, budget, FitContext(seed=int(seed), on_event=show))
        synthetic = model.sample()
        seconds = time.perf_counter() - started
        bar.progress(1.0, text=f"done in {seconds:.1f} s")
        ledger = model.ledger_.to_dict()
        params, shares = model.get_params(), dict(budget.shares)
        config = {"method": method, "params": params, "epsilon": epsilon, "delta": delta,
                  "shares": shares, "seed": int(seed),
                  "command": run_command(method, epsilon, delta, int(seed), params, shares),
                  "schema": schema.public_view().to_dict()}
        evaluation, fidelity = {}, None
        try:  # a failed measurement must not cost the user a finished release
            fidelity = marginal_tvd(private, synthetic, schema)
            if test is not None and not test.empty:
                evaluation = utility(test, synthetic, schema, real_train=private)
        except SynthError as exc:
            evaluation = {"error": str(exc)}
        name = f"{method} ε={epsilon:g} seed={int(seed)} #{len(state.runs()) + 1}"
        state.add_run(state.Run(name, synthetic, private, schema, ledger, config, seconds,
                                evaluation, fidelity))
        finished = True
if finished:  # redraw from state, sidebar included (outside the guard: rerun is an exception)
    st.rerun()

runs = state.runs()
if not runs:
    st.info("No runs yet: choose a budget and press Run.")
    st.stop()

run = runs[-1]
st.divider()
st.subheader(f"Release: {run.name}")
c1, c2, c3 = st.columns(3)
c1.metric("ε spent", f"{run.ledger['total_epsilon']:.4g}")
c2.metric("δ spent", f"{run.ledger['total_delta']:.2e}")
c3.metric("rows", f"{len(run.synthetic):,}")
st.plotly_chart(ledger_chart(run.ledger), width="stretch")
d1, d2, d3 = st.columns(3)
d1.download_button("Synthetic table (CSV)", run.synthetic.to_csv(index=False),
                   file_name="synth.csv", mime="text/csv")
d2.download_button("Privacy ledger (JSON)", json.dumps(run.ledger, indent=2),
                   file_name="ledger.json", mime="application/json")
d3.download_button("Run configuration (JSON)", json.dumps(run.config, indent=2),
                   file_name="run.json", mime="application/json")
st.code(run.config["command"], language="bash")
st.caption("To reproduce this release outside the app, save the configuration's `schema` as "
           "schema.json and run the command above on the same table.")
st.dataframe(run.synthetic.head(100), width="stretch", height=220)

st.subheader("Real vs synthetic")
st.caption("Uses the real data: for your eyes, not part of the release.")
with state.guard("Comparing with the real table"):
    if run.fidelity is not None:
        e1, e2 = st.columns(2)
        e1.metric("1-way TVD (avg)", f"{run.fidelity.tvd1:.3f}")
        e2.metric("2-way TVD (avg)", f"{run.fidelity.tvd2:.3f}")
    if "error" in run.evaluation:
        st.warning(f"The comparison with the real data could not be completed: "
                   f"{run.evaluation['error']}")
    elif run.evaluation:
        ev = run.evaluation
        st.plotly_chart(utility_chart({run.name: ev}, ev["majority"], ev.get("real_accuracy")),
                        width="stretch")
    column = st.selectbox("Column", run.schema.names)
    st.plotly_chart(marginal_chart(run.real, {run.name: run.synthetic}, run.schema, column),
                    width="stretch")
    if run.fidelity is not None:
        st.plotly_chart(tvd_heatmap(run.fidelity), width="stretch")
