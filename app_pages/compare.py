"""Compare: real against synthetic, for one or more finished runs of the open table (from the
run store: a reload or a server restart keeps them; the real rows are the table now open)."""

import math

import pandas as pd
import streamlit as st

from synth.plots import marginal_chart, tvd_heatmap, utility_chart
from synth.privacy.budget import epsilon_text
from ui import layout, state

ds = layout.sidebar()
st.title("Compare")
st.warning("Everything on this page uses the real data: it is for your eyes, not part of the "
           "release.", icon=":material/visibility:")

runs: dict[str, state.Run] = {}
with state.guard("Reading the run store"):
    runs = {r.name: r for r in state.runs(ds)}
if not runs:
    st.info(f"No finished runs of {ds.name} yet: make one on the Synthesize page. Runs of "
            "another table show when that table is open again (the same file, matched by "
            "its contents).")
    st.page_link("app_pages/synthesize.py", label="Go to Synthesize", icon=":material/tune:")
    st.stop()
picked = f"{state.CHOICE}compare:runs:{ds.read_as}"
state.among(picked, list(runs))
chosen = [runs[name] for name in st.multiselect("Runs", list(runs), default=list(runs)[-3:],
                                                key=picked, persist_state="session")]
if not chosen:
    st.info("Choose at least one run.")
    st.stop()

st.subheader("Summary")
unbounded = {r.name: r.record.ledger["guarantee"] for r in chosen
             if r.record.ledger["total_epsilon"] is None}
summary = pd.DataFrame([{
    "run": r.name,
    "ε": math.inf if r.name in unbounded else r.record.ledger["total_epsilon"],
    "δ": r.record.ledger["total_delta"],
    "most lost": float(r.fidelity.outside.max()) if r.fidelity and len(
        r.fidelity.outside) else None,
    "1-way TVD": r.fidelity.tvd1 if r.fidelity else None,
    "2-way TVD": r.fidelity.tvd2 if r.fidelity else None,
    "quality": r.record.scores.get("quality"),
    "column shapes": r.record.scores.get("column_shapes"),
    "pair trends": r.record.scores.get("column_pair_trends"),
    "data validity": r.record.scores.get("data_validity"),
    "tree accuracy": r.record.scores.get("accuracy"),
    "balanced accuracy": r.record.scores.get("balanced_accuracy"),
    "macro F1": r.record.scores.get("macro_f1"),
    "seconds": r.record.seconds,
} for r in chosen])
# a static table: long run names wrap, so every column fits the page (a data grid sized the
# names' column to them and hid the scores off to the right at 1440 px)
SCORES = ["1-way TVD", "2-way TVD", "quality", "column shapes", "pair trends", "data validity",
          "tree accuracy", "balanced accuracy", "macro F1"]
st.table(summary.style.format(
    {"ε": epsilon_text, "δ": "{:.2g}", "seconds": "{:.1f}", "most lost": "{:.1%}",
     **dict.fromkeys(SCORES, "{:.3f}")},
    na_rep="–"), hide_index=True)
for name, guarantee in unbounded.items():  # shown as ε "no guarantee": here is why
    st.caption(f"{name}: {guarantee}")
untrended = [r.name for r in chosen if isinstance(r.record.scores.get("column_pair_trends"),
                                                  float)
             and math.isnan(r.record.scores["column_pair_trends"])]
if untrended:
    st.caption(f"Pair trends – ({', '.join(untrended)}): no pair of the real table's columns "
               "is correlated over 0.5 or associated over 0.3, so SDMetrics has no trend to "
               "compare; quality is then column shapes alone.")
st.caption("Most lost: the largest share of real rows, over the columns, that a release "
           "cannot hold (beyond its bounds, or folded into 'other'; per column below). "
           "TVD: total variation distance between the real and synthetic marginals, averaged "
           "over columns (1-way) or column pairs (2-way), numbers binned where the real ones "
           "lie (never clipped into a release's range); 0 is identical, 1 disjoint. "
           "Quality: SDMetrics 0.32's Quality Report by its definitions (checked against "
           "SDMetrics itself), the mean of column shapes (1 − the Kolmogorov–Smirnov statistic "
           "of a number, 1 − the TVD of a category) and column pair trends (1 − half the "
           "change in correlation of two numbers correlated over 0.5, 1 − the TVD of any other "
           "pair's table where the real one is associated over 0.3, numbers in 10 bins of each "
           "table's range); 1 is identical. Data validity: SDMetrics' Diagnostic figure, the "
           "share of synthetic values within the real range or categories. Tree scores are on "
           "the held-out real rows: read each against its chance line below, as a rare target "
           "makes accuracy look good when nothing is learned.")

with state.guard("Comparing utility"):
    for r in chosen:
        if "error" in r.record.scores:
            st.warning(f"The utility check of {r.name} could not be completed: "
                       f"{r.record.scores['error']}")
    scored = [r for r in chosen if "accuracy" in r.record.scores]
    target = scored[0].schema.target if scored else None
    measured = {r.name: r.record.scores for r in scored if r.schema.target == target}
    if len(measured) < len(scored):
        st.caption(f"The utility chart shows runs that predict {target!r}, as the first does.")
    if measured:
        st.plotly_chart(utility_chart(measured, next(iter(measured.values()))),
                        width="stretch", key="utility")
    else:
        st.caption("No utility figures: choose a target column on the Data page and keep the "
                   "hold-out on to measure them.")

with state.guard("Comparing marginals"):
    base = chosen[0]
    same = [r for r in chosen if r.real is base.real or r.real.equals(base.real)]
    if len(same) < len(chosen):
        st.caption(f"Marginal charts show runs synthesized from the same rows as {base.name}.")
    columns = list(dict.fromkeys(name for r in same for name in r.schema.names))
    state.among(f"{state.CHOICE}compare:column", columns)
    column = st.selectbox("Column", columns, key=f"{state.CHOICE}compare:column",
                          persist_state="session")
    having = [r for r in same if column in r.schema.names]  # runs may leave columns out
    if len(having) < len(same):
        st.caption(f"{column} was left out of " + ", ".join(
            r.name for r in same if r not in having) + ".")
    synthetic = {r.name: r.record.synthetic for r in having}
    st.plotly_chart(marginal_chart(base.real, synthetic, having[0].schema, column),
                    width="stretch", key="marginal")

st.subheader("What each release lost")
lost = pd.DataFrame({r.name: r.fidelity.outside for r in chosen if r.fidelity is not None})
if lost.empty or not (lost.fillna(0) > 0).any().any():
    st.caption("Every real value lies within each release's bounds and categories.")
else:
    st.table(lost.style.format("{:.1%}", na_rep="–"))
    st.caption("The share of real rows each release cannot hold, per column: numbers or "
               "dates beyond its bounds, categories it folds into 'other'. Privately learned "
               "domains may cut them (the plan said how much at most); public ones never do.")
made_up = pd.DataFrame({r.name: r.fidelity.beyond for r in chosen if r.fidelity is not None})
if made_up.empty or not (made_up.fillna(0) > 0).any().any():
    st.caption("No release has a number or date beyond the real table's range.")
else:
    st.markdown("**Beyond the real range**")
    st.table(made_up.style.format("{:.1%}", na_rep="–"))
    st.caption("The share of each release's rows whose number or date lies beyond every real "
               "value, below the least or above the greatest: the release's bounds are wider "
               "than the data (declared so, or learned with noise), and these values are made "
               "up. The marginal chart above shows where they fall.")

st.subheader("2-way TVD per column pair")
for r, tab in zip(chosen, st.tabs([r.name for r in chosen]), strict=True):
    with tab, state.guard(f"Drawing {r.name}"):
        if r.fidelity is None:
            st.caption("No fidelity figures for this run.")
        else:
            st.plotly_chart(tvd_heatmap(r.fidelity, title=r.name), width="stretch",
                            key=f"heat:{r.name}")

st.subheader("Privacy risk")
st.caption("Attacks a reviewer will ask about, run on each release with the rows it was made "
           "from and the real rows it never saw, each figure beside the bound the run's "
           "(ε, δ) places on any attack (TPR − FPR at most (e^ε − 1 + 2δ)/(e^ε + 1)). A figure "
           "under its bound shows how far these attacks get, not that no attack gets further; "
           "see the docs' Privacy risk page.")
testable = [r for r in chosen if r.held_out is not None and len(r.held_out) > 1]
if len(testable) < len(chosen):
    st.caption("Runs made from every row have no rows they never saw to attack with: "
               + ", ".join(r.name for r in chosen if r not in testable) + ".")
if testable:
    schema = testable[0].schema
    columns = list(dict.fromkeys(n for r in testable for n in r.schema.names))
    sensitive = st.selectbox(
        "Sensitive column (attribute inference)", columns,
        index=columns.index(schema.target) if schema.target else 0,
        key=f"{state.CHOICE}compare:sensitive", persist_state="session",
        help="The column an attacker tries to guess from the others, with a tree trained on "
             "the release (the target by default); a number or a date is guessed to its "
             "bin, one of ten equal bins over its bounds.")
    # membership figures by run, attribute inference by run and column: another column
    # guessed keeps the membership figures on screen
    measured = st.session_state.setdefault("risk", {})

    def key(r: state.Run) -> tuple:  # a run without the column guesses its own target
        return r.id, sensitive if sensitive in r.schema.names else r.schema.target

    todo = [r for r in testable if key(r) not in measured]
    if todo and st.button(f"Attack {len(todo)} release{'s' * (len(todo) > 1)}",
                          icon=":material/shield:"):
        from synth.risk import claimed, risk

        for r in todo:
            with state.guard(f"Attacking {r.name}"), st.status(f"Attacking {r.name}…") as box:
                attacks = risk(r.real, r.record.synthetic, r.held_out, r.schema,
                               **claimed(r.record.ledger), sensitive=key(r)[1],
                               progress=box.write)
                measured.setdefault(r.id, [a for a in attacks if a.kind == "membership"])
                measured[key(r)] = [a for a in attacks if a.kind != "membership"]
                box.update(label=f"Attacked {r.name}", state="complete")
        if all(key(r) in measured for r in todo):  # a failure's message stays on screen
            st.rerun()  # the tables below, and no button for what is measured
    for r in testable:
        if r.id not in measured:
            continue
        attacks = measured[r.id] + measured.get(key(r), [])
        st.markdown(f"**{r.name}**")
        st.table(pd.DataFrame([{
            "attack": a.name, "AUC": a.auc, "advantage": a.advantage,
            "95 % interval": (f"{a.interval[0]:.3f} – {a.interval[1]:.3f}"
                              if not math.isnan(a.advantage) else "–"),
            "bound": a.bound, "chance": a.chance, "verdict": a.verdict,
        } for a in attacks]).style.format(
            dict.fromkeys(["AUC", "advantage", "bound", "chance"], "{:.3f}"), na_rep="–"),
            hide_index=True)
        if key(r)[1] != sensitive:
            st.caption(f"{r.name} has no column {sensitive!r}: "
                       + (f"its target {key(r)[1]!r} is guessed instead." if key(r)[1]
                          else "no column is guessed."))
        if key(r) not in measured and key(r)[1] is not None:
            st.caption(f"Attribute inference of {key(r)[1]!r} is not measured yet: attack "
                       "again to guess it.")
        if any(a.chance is not None and a.bound < a.chance for a in attacks):
            st.caption("At this ε some bounds lie below chance: with this many rows, no "
                       "figure can show a leak beyond such a bound.")
        above = [a.name for a in attacks if a.above_bound]
        if above:
            st.error(f"{', '.join(above)}: above what any (ε, δ)-DP release allows. This "
                     "release is not what its ledger says: do not publish it, and please "
                     "report it.")
    st.caption("Advantage: the true-positive rate less the false-positive rate at the best "
               "threshold (membership: was this row in the table?), or, for attribute "
               "inference, how much more often a tree trained on the release guesses the "
               "sensitive column right for the rows it was made from than for rows it never "
               "saw (negative: less often); a number or a date is guessed to its bin, one of "
               "ten equal bins over its bounds. AUC: the chance a member scores above a "
               "held-out row (0.5: a coin; attribute inference has none). Chance: on rows the "
               "release never saw, a figure stays below it 95 % of the time; it depends only "
               "on how many rows are attacked, and a figure within it is no evidence of a "
               "leak. The attribute bound is the most (ε, δ) lets a member's rate of right "
               "guesses exceed the held-out rows' rate, so it depends on the column. The "
               "figures are kept for this browser session; a reload measures "
               "them again on request.")
