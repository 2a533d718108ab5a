"""Trade-offs: how much privacy to spend and which method to trust, from a sweep of runs.

A sweep (synth.sweep) runs a grid of methods × ε × one setting × seeds in the background, on
every core; finished runs appear as they come, and a cancelled sweep keeps them. Sweeps are
recorded in the run store under SYNTH_HOME with their rows, so coming back, a reload, a new tab
or a server restart on the same table (and schema) shows them; reports are made when their
button is pressed.
"""

import json
from functools import partial

import pandas as pd
import streamlit as st

from synth.errors import SynthError
from synth.evaluation import baselines
from synth.methods import METHODS
from synth.plots import baseline_lines, pareto_chart, reference_lines, sweep_chart, titled
from synth.privacy.budget import cautions, default_delta
from synth.privacy.unit import population
from synth.report import sweep_report
from synth.runs import synthesized_rows
from synth.schema import Schema
from synth.status import FAILED, FINISHED, RUNNING
from synth.sweep import (
    CAVEAT,
    DEMO,
    PRESETS,
    SHARE,
    STAND_IN,
    grid,
    recommended,
    rehearse,
    summary,
    sweep,
)
from ui import layout, runner, state

REFRESH = 1.0  # seconds between redraws of a live sweep (each costs the browser)
EPSILONS = [0.1, 0.2, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0]
SCORE = st.column_config.NumberColumn(format="%.3f")
COLUMNS = {  # the runs tables: figures for people (the CSV keeps every digit)
    "epsilon": st.column_config.NumberColumn("ε", format="%g"),
    "ledger_epsilon": st.column_config.NumberColumn("ε spent", format="%.3g"),
    "ledger_delta": st.column_config.NumberColumn("δ spent", format="%.1e"),
    "accuracy": SCORE, "logistic_accuracy": SCORE, "tvd1": SCORE, "tvd2": SCORE,
    "seconds": st.column_config.NumberColumn(format="%.1f"),
}


ds = layout.sidebar(watched="sweep")  # this page's live view sees the sweep end
if ds.unit_problem:  # never a run that silently protects rows instead of people
    st.error(f"{ds.unit_problem} Choose another column on the Data page.",
             icon=":material/error:")
    st.stop()
st.title("Trade-offs")
st.caption("One run answers neither how much privacy to spend nor which method to trust; a "
           "sweep does. Every figure here compares synthetic tables with the real one: for "
           "your eyes, not part of a release.")
chosen = st.selectbox("Preset", list(PRESETS), format_func=lambda k: PRESETS[k].title,
                      key=f"{state.CHOICE}sweep:preset", persist_state="session")
preset = PRESETS[chosen]  # a preset's methods and ε values are kept under its own keys
methods = st.multiselect("Methods", [m for m in METHODS if m != "private_sampling"],
                         format_func=titled,
                         default=preset.methods, key=f"{state.CHOICE}sweep:methods:{chosen}",
                             persist_state="session")
epsilons = st.multiselect("ε values", EPSILONS, default=preset.epsilons,
                          key=f"{state.CHOICE}sweep:epsilons:{chosen}", persist_state="session")
left, right = st.columns(2)
seeds = int(left.number_input("Seeds", 1, 10, 3, key=f"{state.CHOICE}sweep:seeds",
                              persist_state="session"))
demo = right.toggle("Demo settings (quicker)", value=True, key=f"{state.CHOICE}sweep:demo",
                    persist_state="session",
                    help=f"Held fixed in every run: {DEMO}")
rehearsing = st.toggle(
    "Rehearse on a stand-in", key=f"{state.CHOICE}sweep:rehearse", persist_state="session",
    disabled=ds.unit.declared,
    help="Spend a small share of the largest ε once on a DP stand-in of the table (an "
         f"{titled(STAND_IN)} release), then run the sweep on the stand-in: its runs cost "
         "nothing more."
         + (" Not yet for a table protected per person." if ds.unit.declared else ""))
share = 0.0
if rehearsing and not ds.unit.declared:
    share = st.number_input("The stand-in's share of the largest ε", 0.05, 0.5, SHARE, 0.05,
                            key=f"{state.CHOICE}sweep:share", persist_state="session")
    st.caption(f"The stand-in costs ε = {share:g} × {max(epsilons, default=0):g} once; every "
               f"run of the sweep then reads the stand-in, not {ds.name}. {CAVEAT}")
param, values, shares = preset.param, list(preset.values), list(preset.shares)
if param:
    st.caption(f"Sweeping {param} over {values}.")
if shares:
    st.caption(f"Sweeping the GAN share over {shares}.")
ks: list[int] = []
if ds.unit.declared:
    ks = st.multiselect(
        f"Rows per person k to sweep (empty: k = {ds.unit.max_rows}, as on the Data page)",
        [1, 2, 3, 5, 10, 20], key=state.mine("sweep-k"), persist_state="session",
        help="Every run protects one person. A larger k keeps more of each person's rows and "
             "needs more noise to hide them all: the sweep shows which k pays.")


@st.cache_data(max_entries=16, show_spinner="Training the real-data tree…")
def reference(table_key: str, _train: pd.DataFrame, _test: pd.DataFrame, _schema: Schema
              ) -> dict[str, float]:
    """The majority rate and the real-data tree, once per table and schema (the key)."""
    return baselines(_train, _test, _schema)


table_key = state.table_key(ds)
sweeps: dict[str, pd.DataFrame] = {}
with state.guard("Reading the run store"):
    sweeps = state.sweeps(ds)
key = json.dumps([methods, epsilons, seeds, demo, param, values, shares,
                  ds.unit.to_dict(), ks] + ([{"rehearsal": share}] if share else []),
                 default=str)
people = population(ds.table, ds.unit).units
for line in cautions(max(epsilons, default=0), 0, people,
                     "people" if ds.unit.declared else "rows"):
    st.warning(line, icon=":material/warning:")
jobs, problem = [], "choose at least one method and one ε" if not methods or not epsilons else ""
if not problem:
    try:
        jobs = grid(methods, epsilons, seeds, None if ks else param, values, shares,
                    DEMO if demo else None, ds.unit, ks)
    except SynthError as exc:  # a bad grid is the user's to fix: say so, keep the page
        problem = str(exc)
delta = default_delta(synthesized_rows(people, ds.schema))  # split's train rows (people)


def start() -> bool:
    """Start the sweep in the background, every run charged to the table's account and the
    sweep recorded in the run store; a rehearsal charges its stand-in alone."""
    with state.guard("Starting the sweep"):
        what = "rehearsal" if share else "sweep"
        job = runner.SweepJob(f"{ds.name}: {what} of {len(jobs)} runs", 0,
                              share * max(epsilons) if share else max(epsilons),
                              total=len(jobs), grid=key)
        rows = job.rows  # the thread appends here; the page reads it
        account, store = state.account(ds), state.store()  # the thread has no session
        where = {"grid": key, "table": state.sweep_table(ds)}
        heard = {"on_row": lambda done, total, row: rows.append(row), "account": account,
                 "store": store, "described": where}
        table, schema = ds.table, ds.schema
        if share:  # the stand-in is made from the whole table, and split itself
            state.start_sweep(job, lambda ctx: rehearse(
                table, schema, jobs, share, default_delta(people),
                should_stop=ctx.should_stop, **heard).runs)
        else:
            train, test = state.split(ds, schema)
            state.start_sweep(job, lambda ctx: sweep(
                jobs, train, test, schema, delta, should_stop=ctx.should_stop, **heard))
        return True
    return False


ended = state.last_sweep()
if ended is not None and ended.status == FAILED:
    st.error(f"{ended.name} failed: {ended.error}. Earlier sweeps are kept.")
if (ended is not None and ended.status == FINISHED and ended.grid not in sweeps
        and len(ended.result)):  # its record could not be kept: this session still shows it
    st.warning("This sweep could not be kept in the run store (see the server's log): "
               "download its table below before you leave.", icon=":material/warning:")
    sweeps[ended.grid] = ended.result
blocked = "a sweep is in progress" if state.sweep_job() is not None else problem
plan = f"{table_key} {key}"
if st.button("Run the sweep", type="primary", disabled=bool(blocked)):
    state.ask_to_spend("sweep", plan)
asked = state.asked_to_spend("sweep", plan)
if blocked:
    st.caption(f"The sweep is unavailable: {blocked}.")
elif asked is False:
    st.warning("The settings changed after Run the sweep was pressed, so nothing was spent: "
               "press it again to see what the new sweep spends.")
elif asked and share:
    layout.confirm_spending(ds, share * max(epsilons), default_delta(people),
                            f"This rehearsal of {len(jobs)} runs spends, on its stand-in only,",
                            start)
elif asked:
    layout.confirm_spending(ds, sum(j.epsilon for j in jobs), delta * len(jobs),
                            f"This sweep of {len(jobs)} runs spends at most", start,
                            summed=True)


@st.fragment(run_every=REFRESH if state.sweep_job() is not None else None)  # idle: no redraws
def live() -> None:
    """Runs done and the rows so far, a few times a second."""
    current = state.sweep_job()
    if current is None:
        return
    if current.status != RUNNING:
        st.rerun(scope="app")
    st.progress(len(current.rows) / current.total,
                text=f"{len(current.rows)} of {current.total} runs done "
                     f"({current.seconds:.0f} s)" + (" — stopping…" if current.cancelling
                                                     else ""))
    if current.rows:
        st.dataframe(pd.DataFrame(current.rows), hide_index=True, column_config=COLUMNS)
    if st.button("Cancel the sweep", disabled=current.cancelling):
        current.cancel()


live()

shown = key if key in sweeps or not sweeps else list(sweeps)[-1]
result = sweeps.get(shown)
if result is None:
    if state.sweep_job() is None:
        st.info(f"No sweep of {ds.name} yet: choose a preset and press Run the sweep.")
    st.stop()
if key not in sweeps:
    st.caption("Showing the last sweep; its grid differs from the one chosen above.")
last = json.loads(shown)[-1] if shown.startswith("[") else None
rehearsed = isinstance(last, dict) and "rehearsal" in last  # a plain sweep's key ends in ks
if rehearsed:
    found = summary(result[result["epsilon"] == result["epsilon"].max()],
                    list(dict.fromkeys(result["method"])))
    best = recommended(found)
    st.info(f"A rehearsal: every figure below measures runs on the stand-in, not on "
            f"{ds.name}." + (f" At ε = {result['epsilon'].max():g} it recommends "
                              f"**{titled(best)}** (lowest 2-way TVD on the stand-in)."
                              if best else "") + f" {CAVEAT}", icon=":material/theater_comedy:")
failed = result[result["error"].notna()] if "error" in result else result.iloc[:0]
if len(failed):
    st.warning(f"{len(failed)} of {len(result)} runs failed; the others are kept:  \n"
               + "  \n".join(f"{titled(r.method)} ε={r.epsilon:g} seed {r.seed}: {r.error}"
                              for r in failed.itertuples()))
st.subheader(f"{len(result)} runs")
majority = real_tree = None
if ds.schema.target is not None and not rehearsed:  # the real table's lines: not a stand-in's
    reference_scores = reference(f"{table_key} {ds.unit} {state.split_draw(ds, ds.schema)}",
                                 *state.split(ds, ds.schema), ds.schema)
    majority, real_tree = reference_scores["majority"], reference_scores["real_accuracy"]
tabs = st.tabs(["Utility", "Fidelity", "Pareto front", "Runs"])
with tabs[0]:
    if result["accuracy"].notna().any():
        fig = sweep_chart(result, "accuracy", "tree accuracy (the stand-in's test rows)"
                          if rehearsed else "tree accuracy (real test)")
        if majority is not None:
            reference_lines(fig, baseline_lines(majority, real_tree))
        st.plotly_chart(fig, width="stretch", key="sw-acc")
        st.plotly_chart(sweep_chart(result, "logistic_accuracy", "logistic accuracy"),
                        width="stretch", key="sw-log")
    else:
        st.info("This table has no target column: see fidelity.")
with tabs[1]:
    st.plotly_chart(sweep_chart(result, "tvd2", "2-way TVD"), width="stretch", key="sw-tvd2")
    st.plotly_chart(sweep_chart(result, "tvd1", "1-way TVD"), width="stretch", key="sw-tvd1")
with tabs[2]:
    metric = "accuracy" if result["accuracy"].notna().any() else "tvd2"
    st.plotly_chart(pareto_chart(result, metric), width="stretch", key="sw-pareto")
with tabs[3]:
    st.dataframe(result, hide_index=True, column_config=COLUMNS | ({
        "ledger_epsilon": st.column_config.NumberColumn("ε (on the stand-in, not charged)",
                                                        format="%.3g"),
        "ledger_delta": st.column_config.NumberColumn("δ (on the stand-in, not charged)",
                                                      format="%.1e")} if rehearsed else {}))
    left, right = st.columns(2)
    left.download_button("Sweep table (CSV)", result.to_csv(index=False), "sweep.csv",
                         mime="text/csv", on_click="ignore")
    right.download_button("Sweep report (HTML)", partial(sweep_report, result, rehearsed),
                          "sweep-report.html", mime="text/html", on_click="ignore",
                          help="Every chart and run in one self-contained page. Its figures "
                               "measure synthetic tables against "
                               + ("the stand-in." if rehearsed else
                                  "the real one: not for release."))
