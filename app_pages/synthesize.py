"""Synthesize: choose a method and a budget split, see what the noise will do before spending
anything, run it in the background while watching it learn, download the release."""

import contextlib
import json
import logging
import time
from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

from synth import runs
from synth.errors import SynthError
from synth.methods import METHODS, make
from synth.plan import EPSILON_STEPS
from synth.plots import (
    THEOREM_NAMES,
    budget_chart,
    composition_chart,
    ledger_chart,
    progress_chart,
)
from synth.privacy.budget import WEAK_EPSILON, cautions, default_delta, epsilon_text
from synth.privacy.composition import explore
from synth.privacy.domains import DOMAIN, default_share
from synth.privacy.unit import PrivacyUnit, population
from synth.recommend import Recommendation, recommend
from synth.release import CONFIGURATION, LEDGER, REPORT, TABLE
from synth.report import steward_report
from synth.schema import Schema
from synth.source import TableFile
from synth.status import CANCELLED, DIED, FAILED, RUNNING
from ui import layout, parameters, runner, state

log = logging.getLogger(__name__)
REFRESH = 1.0  # seconds between redraws of a live run's progress
CURVES = 5.0  # and of its curves

ds = layout.sidebar(watched="run")  # this page's live view sees the run end
if ds.unit_problem:  # never a run that silently protects rows instead of people
    st.error(f"{ds.unit_problem} Choose another column on the Data page.",
             icon=":material/error:")
    st.stop()
st.title("Synthesize")
schema = ds.schema
tutorial = st.toggle("Tutorial: explain each control", key=f"{state.CHOICE}tutorial",
                     persist_state="session")
if schema.proposed:
    st.warning(f"The schema's columns are still proposals read from the table ("
               f"{', '.join(schema.proposed[:5])}{'…' if len(schema.proposed) > 5 else ''}): "
               "confirm them on the Data page before a run.")
    st.page_link("app_pages/data.py", label="Review and confirm the schema",
                 icon=":material/fact_check:")


def explain(text: str) -> None:
    if tutorial:
        st.caption(f":material/lightbulb: {text}")


# the rows (or people, with a privacy unit) a run synthesizes: the plan's n, less the held-out
# sixth while its box (further down) is ticked
held = schema.target is not None and st.session_state.get(f"{state.CHOICE}holdout", True)
n = population(state.split(ds, schema, held)[0], ds.unit).units
chosen, left, right = st.columns([5, 4, 3])  # what, then how much: one row
with chosen:
    method = st.selectbox("Method", list(METHODS), format_func=lambda m: METHODS[m].title,
                          key=f"{state.CHOICE}method", persist_state="session")
cls = METHODS[method]
with left:
    st.session_state.setdefault(f"{state.CHOICE}epsilon", 1.0)  # a fix may set it: no value=
    epsilon = st.select_slider("Total privacy budget ε (log scale)", EPSILON_STEPS,
                               key=f"{state.CHOICE}epsilon", persist_state="session")
    explain("ε bounds how much any one person's row can change what is released: smaller is "
            "more private and noisier. 1 is a common choice; from "
            f"{WEAK_EPSILON:g} on the guarantee is weak, and the page says so.")
with right:
    delta = st.number_input(
        f"δ (default {default_delta(n):.2g})", min_value=0.0, max_value=0.1,
        value=default_delta(n), format="%.2e", step=1e-6, key=state.mine("delta"),
        persist_state="session",
        help=f"The default is the largest power of ten ≤ 1/(10n) for n = {n:,} "
             f"{'people' if ds.unit.declared else 'rows'}.")
    explain("δ is the small chance that the ε guarantee fails; keep it well below 1/n so that "
            "no single row is likely to be exposed.")
st.caption(f"{cls.summary}  \n**When:** {cls.when}")
advice_box = st.empty()  # filled once the rows a run sees are known (the hold-out box below)
with st.expander("Which method when? One line each, from the benchmarks"):
    st.markdown("\n".join(f"- **{m.title}**: {m.when} ({m.paper})" for m in METHODS.values()))
    st.caption("Adult by the measuring protocol (21,707 training rows, δ = 1e-5), medians of "
               "3 seeds on 2 cores; benchmarks/results/peers.json has every ε from 0.5 to 8.")
explain("Each method turns the private table into a model under differential privacy, then "
        "samples synthetic rows from the model; sampling costs no further privacy.")

# the plan in words, filled once the settings below are read; folded while a run is live, so
# that what would refuse the next run does not stand above the one that is running
plan_box = (st.container(border=True) if state.job() is None else
            st.expander("The plan for your next run (one is in progress below)"))
run_box = st.container()
st.subheader("Settings")
params, shares_given = {}, {}
default = make(method)
if cls.share_param:
    first, *others = default.stages
    rest = " and ".join(others)
    params[cls.share_param] = st.slider(
        f"Share of the method's ε for {first} (the rest goes to {rest})", 0.05, 0.95,
        float(default.get_params()[cls.share_param]), 0.05,
        key=f"{state.CHOICE}share:{method}", persist_state="session")
    explain(f"Moving this slider trades {first} against {rest}; the preview below shows what "
            "each stage's noise means at this split.")
params.update(parameters.method_inputs(cls, skip=(cls.share_param,)))
explain("Defaults were chosen from measurements on the Adult census table; fewer epochs or a "
        "smaller pool make a quick trial run. Every parameter's help says what it does.")
share_box, seed_box = st.columns(2) if schema.to_learn else (None, st.container())
if schema.to_learn:
    with share_box:
        st.session_state.setdefault(state.mine("domain-share"), default_share(schema))  # a fix's
        shares_given[DOMAIN] = st.slider(
            "Share of ε for learning data-derived domains privately", 0.05, 0.9, step=0.05,
            key=state.mine("domain-share"), persist_state="session")
        explain("Columns whose categories or bounds you did not declare public on the Data "
                "page have their domains learned privately first, with this share; so does "
                "whether a number that may have blanks has any (a release has blanks only "
                "where it does).")
with seed_box:
    seed = st.number_input(
        "Post-processing seed (optional)", min_value=0, value=None, step=1, placeholder="none",
        key=f"{state.CHOICE}seed", persist_state="session",
        help="Steers only post-processing: initialisation, the searches and sampling from the "
             "fitted model. Privacy noise is fresh on every run, so the same seed twice gives "
             "two different releases.")
seed = None if seed is None else int(seed)
holdout = schema.target is not None and st.checkbox(
    "Hold out 1/6 of the rows to measure utility honestly (they are not synthesized)",
    value=True, key=f"{state.CHOICE}holdout", persist_state="session")
explain("Held-out rows are never shown to the method, so the accuracy of a model trained on the "
        "synthetic table and tested on them is an honest estimate.")
cluster = layout.cluster_file(ds, cls.counts, not holdout)
if cluster is not None:
    st.caption(f"Counting runs on the Dask cluster at `{cluster.scheduler}` (SYNTH_SCHEDULER): "
               f"its workers read `{cluster.path}` where it lies and send back counts.")
elif layout.scheduler() is not None and ds.where:
    st.caption("This run fits the table this app holds: the Dask cluster (SYNTH_SCHEDULER) "
               "counts a Parquet table read by path, unconverted and whole (no hold-out), "
               "with one row per person, for a method that only counts.")


def about(seconds: float) -> str:
    """A duration as a person would say it: about 20 s, about 3 min, a few seconds (the
    plan's own figure, not rounded up to 5 s)."""
    if seconds < 5:
        return "a few seconds"
    if seconds < 90:
        return f"about {round(seconds / 5) * 5:.0f} s"
    return f"about {round(seconds / 60):.0f} min"


planned = budget = None
people = population(state.split(ds, schema, holdout)[0], ds.unit)
rows = people.units


def advice() -> Recommendation | None:
    """The recommended method for these public facts, worked out once per setting (five
    plans): None where no method can run (the plan below says why)."""
    key = (json.dumps(schema.to_dict(), sort_keys=True, default=str), epsilon, delta, people,
           ds.unit)
    kept = st.session_state.get("advice")
    if kept is None or kept[0] != key:
        try:
            with st.spinner("Planning each method to recommend one"):
                found = recommend(schema, epsilon, delta, people, ds.unit)
        except Exception:  # advice only: a plan that fails shows its reason below, if chosen
            log.exception("no recommendation")
            found = None
        kept = st.session_state["advice"] = (key, found)
    return kept[1]


advised = advice()
if advised is not None:
    advice_box.caption(
        f":material/recommend: **Recommended here: {METHODS[advised.method].title}**"
        + (" (your choice)" if advised.method == method else "") + f": {advised.why}."
        + "".join(f" {METHODS[m].title} was passed over: {r}." for m, r in advised.passed_over)
        + " From the table's public facts and the benchmarks; a rehearsal on the Trade-offs "
          "page tries the methods on a stand-in of this table.")
with plan_box:
    counted = (f"{rows:,} rows" if not ds.unit.declared else
               f"{people.units:,} people of up to {ds.unit.max_rows} rows each (how many rows "
               "bounding keeps is private: the run estimates it)")
    st.markdown(f"**What this run will do** ({cls.title}, ε = {epsilon:g}): planned from the "
                f"schema and {counted}; nothing read or spent yet")
    for line in cautions(epsilon, delta, rows, "people" if ds.unit.declared else "rows"):
        st.warning(line, icon=":material/warning:")
    with state.guard("Planning the budget"):
        planned = runs.Run(method, schema, epsilon, delta, params, shares_given, seed,
                           state.account(ds), rows=people, unit=ds.unit, store=state.store())
        model, budget = planned.model, planned.budget
        refusals, doubts = planned.plan.refusals, planned.plan.doubts
        if refusals:  # in a few words, with their ways out; the figures folded
            briefs = [r.brief for r in refusals]
            st.error("This run would be refused before spending anything: "
                     + (f"{briefs[0]}." if len(briefs) == 1 else
                        "\n" + "\n".join(f"- {b}." for b in briefs))
                     + "\n\nDeclare what is public knowledge on the Data page, or take a way "
                       "out below.", icon=":material/block:")
            state.offer(*refusals)
        if refusals and (doubts or any(r.brief != str(r) for r in refusals)):
            with st.expander("Why, in figures" + (", and what else the plan found" if doubts
                                                  else "")):
                st.markdown("\n".join([f"- Refused: {r}." for r in refusals]
                                      + [f"- Before you spend: {d}." for d in doubts]))
        for doubt in doubts if not refusals else ():
            st.warning(f"Before you spend: {doubt}.", icon=":material/warning:")
        if planned.plan.unbounded:
            st.warning(f"This run may carry **no DP guarantee**: {planned.plan.unbounded}. The "
                       "account records it as unbounded (ε = ∞) before it runs, and a table "
                       "with a lifetime limit refuses it.", icon=":material/warning:")
        scales = planned.plan.scales  # from public facts only: each stage's steps in words
        stages = {}  # a stage's scales in one line: MST's three measures share one ε
        for scale in scales if not refusals else (s for s in scales if s.stage != DOMAIN):
            # (a refusal of learned domains says their figures, folded above)
            stages.setdefault(scale.stage, []).append(scale.meaning)
        said = [f"- **{stage}** ({budget.shares.get(stage, 0):.0%} of ε): {'; '.join(them)}"
                for stage, them in stages.items()]
        seconds = planned.plan.seconds
        said.append(f"- **Time**: {about(seconds)} on a quiet 2-core machine (the benchmarks'"
                    "; longer on a busy one); the run shows its progress as it goes."
                    if seconds is not None else
                    "- **Time**: worked out once the plan can run; the run shows its progress."
                    if planned.plan.refusals else
                    "- **Time**: no estimate for this method; the run shows its progress.")
        said.append(f"- **Cost**: at most ε = {epsilon:g}, δ = {delta:.2g} from the privacy "
                    f"account of {ds.name}, asked again when you press Run.")
        st.markdown("\n".join(said))
if planned is not None:
    # one label whatever the plan: an expander whose label changes is a new one, folded again
    with st.expander("How the budget is spent: each stage's mechanism and the plan's charges"):
        st.plotly_chart(budget_chart(budget), width="stretch", key="plan")
        for scale in scales:
            st.markdown(f"**{scale.stage}** · {scale.mechanism} · `{scale.scale}`")
        if planned.plan.steps:
            charges = len(planned.plan.steps)
            st.markdown(f"The plan's {charges} charge{'s' * (charges > 1)}:\n"
                        + "\n".join(f"- {line}" for line in planned.plan.lines()))
            st.caption("The run's ledger refuses any charge this plan does not hold. Where "
                       "a charge is a bound, the event charged may differ (which workload a "
                       "private selection picks, a row count estimated privately) but costs "
                       "no more.")
            st.download_button("Download the plan (JSON, the ledger's format)",
                               json.dumps(planned.plan.to_dict(), indent=2,
                                          ensure_ascii=False),
                               file_name=f"plan-{method}.json", mime="application/json",
                               key=state.mine("plan-json"))
if planned is not None and ds.unit.declared:
    with st.expander("Try another k: what a different bound on rows per person would cost"):
        other = int(st.number_input("k for this preview only", min_value=1, max_value=10_000,
                                    value=max(1, 2 * ds.unit.max_rows), step=1,
                                    key=state.mine("try-k")))
        with state.guard(f"Previewing k = {other}"):
            unit = PrivacyUnit(ds.unit.column, other)
            them = population(state.split(ds, schema, holdout)[0], unit)
            trial = runs.Run(method, schema, epsilon, delta, params, shares_given, seed,
                             rows=them, unit=unit)
            st.caption(f"At k = {other} the run would use up to {them.rows:,} rows "
                       f"(against up to {people.rows:,} at k = {ds.unit.max_rows}).")
            for scale in trial.plan.scales:
                st.markdown(f"**{scale.stage}** · {scale.mechanism} · `{scale.scale}`  \n"
                            f"{scale.meaning}")


@st.cache_data(max_entries=32)
def composition_curves(epsilon: float, delta: float, steps: int):
    grid = sorted({*np.unique(np.logspace(0, 6, 31).astype(int)).tolist(), steps})
    return grid, explore(epsilon, delta, grid)


with st.expander("Composition explorer: what n selections may each spend"):
    picks = 1000  # DP-Select's own count where it has one (its engines differ the most)
    if budget is not None and hasattr(model, "selections"):
        with contextlib.suppress(SynthError, TypeError, ValueError):
            picks = model.selections(rows, budget.allowance("select")[0])
    steps = int(st.number_input(  # a new preset (another engine, say) gets a fresh box
        "Number of steps n", min_value=1, max_value=10**6, value=min(picks, 10**6), step=1,
        key=f"composition-steps:{method}:{picks}"))
    if delta > 0:
        grid, curves = composition_curves(epsilon, delta, steps)
        at = grid.index(steps)
        st.plotly_chart(composition_chart(curves, grid, epsilon, delta, {"n": steps}),
                        width="stretch", key="composition")
        st.dataframe(pd.DataFrame({"theorem": [THEOREM_NAMES[k] for k in curves],
                                   "ε per step": [f"{v[at]:.3g}" for v in curves.values()]}),
                     hide_index=True)
        st.caption("Many weak selections (DP-Select's rows engine picks one output row per "
                   "step) must share ε far more thinly than a few strong ones (its GA engine "
                   "makes N_g·N_s + 1, whatever the output's size): bounded range, which holds "
                   "for the exponential mechanism, allows the most per step; basic composition "
                   "the least.")
    else:
        st.info("Composition with δ = 0 leaves only basic composition: ε/n per step.")


def work(run: runs.Run, private: pd.DataFrame | TableFile, test: pd.DataFrame | None,
         schema: Schema, keep, ctx) -> None:
    """What the background thread runs (it never touches Streamlit): the run, recorded in
    the run store with its release, its record kept here with its measurements (``keep``)."""
    record = run(private, schema, test, ctx)
    if run.entry is not None:
        keep(run.entry.id, record)


def release_page(run: state.Run) -> str:
    """The releasable HTML report, made when the button is pressed (it embeds 5 MB of Plotly)."""
    return run.record.release.report()


def steward_page(run: state.Run) -> str:
    """The steward-only report, with the privacy risk when the run held rows out."""
    attacks = None
    if run.held_out is not None and len(run.held_out) > 1:
        from synth.risk import claimed, risk

        attacks = risk(run.real, run.record.synthetic, run.held_out, run.schema,
                       **claimed(run.record.release.ledger))
    return steward_report(run.record.release.ledger, run.record.synthetic, run.real, run.schema,
                          run.record.scores, attacks)


def _over_limit(ds: state.Dataset, epsilon: float, delta: float, unbounded: str) -> str:
    """Why the table's lifetime limit refuses this run ("" if it does not), by the account's
    own rule. An account that cannot be read refuses too (the sidebar says why)."""
    try:
        refused = state.account(ds).usage().refusal(epsilon, delta, unbounded)
    except SynthError:
        return "the table's privacy account cannot be read (see the sidebar)"
    return refused and f"{refused}; raise the limit under Lifetime limit in the sidebar"


def start() -> bool:
    """Start the planned run in the background, charged to the table's account; whether it
    started (a failure is shown)."""
    with state.guard("Starting the run"):
        private, test = state.split(ds, schema, holdout)
        if cluster is not None:  # counted by the cluster's workers where it lies
            cluster.check_unchanged()  # the table the account knows, as it was read
            private = cluster
        split_note = (f" {cls.share_param}={model.get_params()[cls.share_param]:g}"
                      if cls.share_param else "")
        seed_note = f" seed={seed}" if seed is not None else ""
        name = f"{ds.name}: {cls.title} ε={epsilon:g}{split_note}{seed_note}"
        state.start_job(runner.Job(name, seed, epsilon),
                        partial(work, planned, private, test, schema, state.keeper()),
                        ledger=lambda run=planned: run.spent)
        return True
    return False


with run_box:
    blocked = ("a run is in progress" if state.job() is not None
               else "the plan above cannot run" if planned is None
               else "the schema is not confirmed yet" if schema.proposed
               else "the plan above is refused" if planned.plan.refusals
               else _over_limit(ds, epsilon, delta, planned.plan.unbounded))
    plan = "" if planned is None else f"{planned.account.key} {planned.command}"
    press, why = st.columns([1, 9], vertical_alignment="center")
    if press.button("Run", type="primary", disabled=bool(blocked)):
        state.ask_to_spend("run", plan)
    asked = state.asked_to_spend("run", plan)
    if blocked:
        why.caption(f"Run is unavailable: {blocked}.")
    elif asked:
        layout.confirm_spending(ds, epsilon, delta, "This run spends at most", start)
    elif asked is False:
        st.warning("The settings changed after Run was pressed, so nothing was spent: press Run "
                   "again to see what the new ones spend.")


@st.fragment(run_every=REFRESH if state.job() is not None else None)  # idle: no redraws
def live() -> None:
    """Redraw the run's progress every second, without rerunning the page. The browser shares
    the machine with the training: on 2 cores, redrawing progress and curves every 0.4 s
    slowed DP-GAN by half (benchmarks/app.py)."""
    job = state.job()
    if job is None:
        return
    if job.status != RUNNING:
        st.rerun(scope="app")  # the sidebar collects the result and the page shows it
    stages, charged = job.overview()
    st.subheader(f"Running: {job.name}")
    for i, (name, stage) in enumerate(stages.items()):
        share = stage.step / stage.total if stage.total else 0.0
        now = (f" ({time.perf_counter() - stage.began:.0f} s in this stage)"
               if i == len(stages) - 1 else "")  # its bar may not move: the clock does
        total = f"{stage.total:,}" if stage.total else "?"
        st.progress(min(share, 1.0), text=f"**{name}** {stage.step:,}/{total}: "
                                          f"{stage.description}{now}")
    st.caption(f"{job.seconds:.0f} s so far; ε charged to the ledger (before each mechanism "
               f"runs): {epsilon_text(charged)} of {job.epsilon:g}"
               + (" — cancelling…" if job.cancelling else
                  ": all of it, so a cancel now saves no budget and releases nothing"
                  if charged >= job.epsilon * (1 - 1e-9) else ""))
    if st.button("Cancel", disabled=job.cancelling,
                 help="Stops the run at its next step. What the ledger has charged stays "
                      "spent, and a run cancelled before its release is written releases "
                      "nothing."):
        job.cancel()


@st.fragment(run_every=CURVES if state.job() is not None else None)
def live_curves() -> None:
    """The run's measured curves, redrawn every few seconds: a chart's redraw is what costs
    the browser most (at every second it slowed DP-GAN's training by a fifth on 2 cores)."""
    job = state.job()
    if job is None or job.status != RUNNING:
        return
    measured = [name for name, stage in job.overview()[0].items() if stage.measured]
    for name in measured:
        st.plotly_chart(progress_chart(list(job.events), name), width="stretch",
                        key=f"live:{name}")
    if measured:
        st.caption("Losses are measured on real rows and distances against the real marginals: "
                   "these curves are for your eyes, not part of the release.")


with run_box:  # a live run shows under the Run button, above the settings
    live()
    live_curves()


def history() -> None:
    """Every run of this table the store holds, however it ended: a run whose process died
    (a server stopped mid-run) shows with the account's charge for it, its whole
    reservation unless it was settled."""
    recorded = state.entries(ds)
    if not recorded:
        return
    account = state.account(ds)
    charges = account.store.charges(account.key)
    rows = []
    for number, entry in enumerate(recorded, 1):
        charge = charges.get(entry.charge)
        rows.append({"run": state.run_name(entry, number), "id": entry.id,
                     "status": entry.status + (" (files deleted)" if entry.deleted else ""),
                     "started": time.strftime("%Y-%m-%d %H:%M",
                                              time.localtime(entry.started)),
                     "ε charged": epsilon_text(charge[0]) if charge else "–",
                     "δ charged": f"{charge[1]:.2g}" if charge else "–",
                     "error": entry.error})
    died = sum(entry.status == DIED for entry in recorded)
    with st.expander(f"Every run of {ds.name} ({len(recorded)}), kept under SYNTH_HOME"
                     + (f": {died} died mid-run" if died else ""), expanded=bool(died)):
        st.dataframe(pd.DataFrame(rows[::-1]), hide_index=True, width="stretch")
        st.caption("Kept in the run store beside the privacy account: a reload or a server "
                   "restart loses none. A run whose process died keeps its whole reservation "
                   "on the account (nothing settled it). `synth runs` lists them too, and "
                   "`synth runs delete ID` removes one's files (never its charge).")


ended = state.last_job()
if ended is not None and ended.status in (CANCELLED, FAILED):
    spent = ("before stopping it had spent ε = "
             f"{epsilon_text(ended.spent['total_epsilon'])}, δ = "
             f"{ended.spent['total_delta']:.2g} (its ledger below)"
             if ended.spent and ended.spent["entries"] else "it had spent nothing")
    if ended.status == CANCELLED:
        st.warning(f"{ended.name} was cancelled: nothing was released; {spent}. Earlier runs "
                   "are kept.")
    else:
        st.error(f"{ended.name} failed: {ended.error}. Nothing was released; {spent}. "
                 "Earlier runs are kept.")
    if ended.spent and ended.spent["entries"]:
        with st.expander("Ledger of the stopped run"):
            st.plotly_chart(ledger_chart(ended.spent), width="stretch", key="stopped-ledger")
            st.json(ended.spent, expanded=False)

with state.guard("Listing the table's runs"):
    history()
finished: list[state.Run] = []
with state.guard("Reading the run store"):
    finished = state.runs(ds)
if not finished:
    if state.job() is None:
        st.caption(f"No runs of {ds.name} yet: choose a budget and press Run.")
    st.stop()

run = finished[-1]
record = run.record
st.divider()
st.subheader(f"Release: {run.name}")
c1, c2, c3, c4 = st.columns(4)
c1.metric("ε spent", epsilon_text(record.ledger["total_epsilon"]))
c2.metric("δ spent", f"{record.ledger['total_delta']:.2g}")
c3.metric("rows", f"{len(record.synthetic):,}")
c4.metric("seconds", f"{record.seconds:.1f}")
st.plotly_chart(ledger_chart(record.ledger), width="stretch", key="ledger")
st.markdown("**Release checklist** (read off the private table: for your eyes)")
for check in run.checklist:
    (st.warning if check.warn else st.caption)(f"{check.item}: {check.text}")
st.markdown("**The release**: nothing in these files is read from the private table except "
            "through the mechanisms on the ledger.")
# No download reruns the page (on_click="ignore"). A rerun starts by dropping the page's file
# references; the next click interrupted it, and Streamlit then swept away the reports' deferred
# callables that the browser still held: "Deferred file … not found", a click that did nothing.
d1, d2, d3, d4 = st.columns(4)
files = record.release.files()  # the files `synth run` and the run store write
d1.download_button("Synthetic table (CSV)", files[TABLE], file_name=run.file_name(TABLE),
                   mime="text/csv", on_click="ignore")
d2.download_button("Privacy ledger (JSON)", files[LEDGER], file_name=run.file_name(LEDGER),
                   mime="application/json", on_click="ignore")
d3.download_button("Run configuration (JSON)", files[CONFIGURATION],
                   file_name=run.file_name(CONFIGURATION), mime="application/json",
                   on_click="ignore")
d4.download_button("Release report (HTML)", partial(release_page, run),
                   file_name=run.file_name(REPORT), mime="text/html", on_click="ignore",
                   help="Ledger, parameters and the synthetic table's own charts.")
st.markdown("**For you only, not for release**")
st.download_button("Steward-only report (HTML)", partial(steward_page, run),
                   file_name=run.file_name("steward_only_report.html"), mime="text/html",
                   on_click="ignore",
                   help="The release report plus real-against-synthetic comparisons: it "
                        "shows the private table's marginals, so keep it with the data.")
st.code(record.command, language="bash")
st.caption("To run the same configuration outside the app, save the configuration's `schema` "
           "as schema.json and run the command above on the same table. Its noise is fresh, so "
           "it makes a new release from the same distribution, never this one again.")
st.dataframe(record.synthetic.head(100), width="stretch", height=220)
st.page_link("app_pages/compare.py", label="Compare real and synthetic data",
             icon=":material/bar_chart:")
