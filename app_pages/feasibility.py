"""Feasibility: can private sampling's theorems be met for these parameters and this data?

Private sampling (Boedihardjo–Strohmer–Vershynin) releases noise-free ε-DP samples from the
Boolean cube, but only under Theorem 4.1's cap on k and Theorem 4.2's conditions on n, m and k.
Pierquin et al. (2023) showed that real tables cannot meet them; this page lets a researcher
check that for their own numbers. Everything is closed-form (private sampling's bounds) and
redraws at once as the inputs move.
"""

import math

import numpy as np
import pandas as pd
import streamlit as st

from synth.errors import SynthError
from synth.methods.private_sampling import bounds as fz
from synth.methods.private_sampling.algorithm import fit_density, profile, subsets, walsh
from synth.plots import k_bound_chart, k_heatmap, m_range_chart, table2_chart
from ui import layout

EPSILONS = [0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0]
SECONDS_PER_YEAR = math.log10(365.25 * 86400)
IDEAL, CURRENT = "Ideal cube, n = 2^p", "From the current table (reads private data)"
FIELDS = {"p": 8, "d": 2, "n": 20000.0, "mode": "from ‖f_n‖∞", "fn_inf": 0.29,
          "manual": 2.0}

ds = layout.sidebar()
st.title("Private sampling: can its bounds be met?")
st.caption("Private sampling releases k samples from the cube {−1, 1}^p with no added noise. "
           "It is ε-DP only when k is below Theorem 4.1's bound, and accurate only under "
           "Theorem 4.2's conditions on n, the reduced space's size m and k. Enter your "
           "numbers, or pick one of the paper's datasets.")
for key, value in FIELDS.items():
    st.session_state.setdefault(f"fz:{key}", value)


def apply_preset() -> None:
    name = st.session_state["fz:preset"]
    state = st.session_state
    if name in fz.PRESETS:
        preset = fz.PRESETS[name]
        state["fz:p"], state["fz:n"] = preset["p"], float(preset["n"])
        state["fz:mode"], state["fz:fn_inf"] = "from ‖f_n‖∞", preset["fn_inf"]
    elif name == IDEAL:
        state["fz:mode"] = "ideal cube"
    elif name == CURRENT:
        try:
            p, fn_inf = profile(ds.table, ds.schema)
        except SynthError as exc:
            state["fz:problem"] = f"Could not profile the current table: {exc}"
            return
        state["fz:p"], state["fz:n"] = p, float(len(ds.table))
        state["fz:mode"], state["fz:fn_inf"] = "from ‖f_n‖∞", fn_inf


st.selectbox("Preset", ["custom", *fz.PRESETS, IDEAL, CURRENT], key="fz:preset",
             persist_state="session",
             on_change=apply_preset)
if "fz:problem" in st.session_state:
    st.error(st.session_state.pop("fz:problem"))
if st.session_state["fz:preset"] == CURRENT:
    st.warning("p and ‖f_n‖∞ were computed from the private table: choosing parameters "
               "from them is not a DP-safe step. Use them to learn, not to release.")

left, middle, right = st.columns(3)
with left:
    p = int(st.number_input("p: dimension of the cube", 1, 5000, step=1, key="fz:p",
                            persist_state="session"))
    d = int(st.number_input("d: degree of the matched marginals", 1, 4, step=1, key="fz:d",
                            persist_state="session"))
    ideal = st.session_state["fz:mode"] == "ideal cube"
    n = st.number_input("n: rows of the true data", 1.0, 1e300, format="%.4g", key="fz:n",
                        persist_state="session",
                        disabled=ideal, help="the ideal cube takes n = 2^p")
with middle:
    epsilon = st.select_slider("ε (pure DP)", EPSILONS, value=1.0)
    delta = st.number_input("accuracy margin δ (not a DP δ)", 1e-4, 0.5, 0.25, format="%g",
                            help="marginals come within 4δ: 4δ ≤ 1 for a meaningful guarantee")
    gamma = st.number_input("γ (failure parameter)", 1e-4, 0.25, 0.125, format="%g")
with right:
    mode = st.radio("Δ, the density cap (‖f_n‖∞ ≤ Δ/2^p)", fz.DELTA_MODES, key="fz:mode",
                    persist_state="session")
    fn_inf = st.number_input("‖f_n‖∞", 1e-300, 1.0, format="%.3g", key="fz:fn_inf",
                             persist_state="session",
                             disabled=mode != "from ‖f_n‖∞")
    manual = st.number_input("Δ by hand", 1e-3, 1e300, format="%.4g", key="fz:manual",
                             persist_state="session",
                             disabled=mode != "manual")
    m_text = st.text_input("m (optional)", help="empty: judge the best m, m_lo")
    k_text = st.text_input("k (optional)", help="samples you would like to release")
paper_mode = st.toggle("Paper mode: C(p,≤d) without the empty set (eq. 3's constants)")
if paper_mode:
    constants = fz.paper_constants(delta, gamma)
    st.caption(f"At d = 2 and this δ, γ the paper's constants are {constants['m']:.4g} (m_lo, "
               f"printed 5.6·10⁴), {constants['k']:.4g} (k, printed 9.7·10⁻³) and "
               f"{constants['ideal']:.4g} (the ideal cube, printed 2.7·10⁻⁶).")


def optional(text: str, name: str) -> float | None:
    if not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise SynthError(f"{name} must be a number > 0, got {text!r}")
    return value


try:
    log10_n = p * fz.LOG10_2 if ideal else math.log10(n)
    m, k = optional(m_text, "m"), optional(k_text, "k")
    setting = fz.Setting(p, d, log10_n, epsilon, delta, gamma,
                         fz.log10_delta_bound(mode, p, log10_n, manual, fn_inf),
                         None if m is None else math.log10(m), k, empty=not paper_mode)
    report = setting.check()
except SynthError as exc:
    st.error(str(exc))
    st.stop()

show = fz.show
failing = [c for c in report.conditions if not c.holds]
if report.feasible:
    st.success("Every condition holds: this setting is ε-DP and accurate by the theorems.")
else:
    st.error(f"Not feasible: {len(failing)} of {len(report.conditions)} conditions fail "
             f"(first: {failing[0].name}).")
v = report.values
cols = st.columns(7)
for col, (label, value) in zip(cols, [
        ("C(p,≤d)", f"{fz.walsh_count(p, d, not paper_mode):,}"), ("Δ", show(v["Delta"])),
        ("m_lo", show(v["m_lo"])),
        ("2^(p/4)", show(v["m_hi"])), ("k allowed (Thm 4.1)", show(v["k_hi"])),
        ("k needed (Thm 4.2)", show(v["k_lo"], 3)),
        ("success probability", f"{v['success_probability']:.3f}")], strict=True):
    col.metric(label, value)
st.caption(f"k is judged at m = {show(v['m'])}; at m = 1 the bound is k·m^¾ ≤ "
           f"{show(v['k_hi_at_m_1'])}. For reference 2^p = {show(v['2^p'])} (the whole cube; "
           "the paper's Table 3 prints 2^p in its 2^(p/4) column).")
st.dataframe(pd.DataFrame({
    "condition": [c.name for c in report.conditions],
    "holds": ["yes" if c.holds else "no" for c in report.conditions],
    "log₁₀ margin": [round(c.margin, 2) for c in report.conditions],
    "source": [c.source for c in report.conditions]}), hide_index=True, width="stretch")

need = report.needed
p_min = f"p ≥ {need['p_min']:.0f}" if need["p_min"] else "none below 100,000"
st.subheader("What would be needed")
st.markdown(
    f"- **n** for {show(math.log10(k or 1), 3)} private sample(s) at m = m_lo: "
    f"{show(need['n_for_k'])} rows (you have {show(log10_n)})\n"
    f"- **p** for a non-empty m range at this Δ: {p_min}\n"
    f"- **Δ** at most {show(need['Delta_max'])} for this p (yours: {show(v['Delta'])})\n"
    f"- **Compute**: a dense QP of size m_lo takes ≳ {show(v['qp_seconds'] - SECONDS_PER_YEAR)}"
    f" years by the paper's heuristic (0.1 s·(m/1000)²); its dense matrix W_S needs "
    f"{show(v['dense_bytes'] - 9)} GB in float64")
if mode == "from ‖f_n‖∞":
    st.caption("Δ = 2^p‖f_n‖∞ is derived from the private data: not a DP-safe parameter choice.")

tabs = st.tabs(["Figure 1: k against p", "The m range", "Datasets (Table 2)", "Heatmap"])
ps = np.arange(max(2, d), 201)
with tabs[0]:
    curves = {f"ε = {e:g}": fz.ideal_k_max(ps, e, delta, gamma, d, not paper_mode)
              for e in sorted({0.1, 1.0, 10.0, epsilon})}
    st.plotly_chart(k_bound_chart(ps, curves), width="stretch", key="fz-figure1")
with tabs[1]:
    lo, hi = fz.m_range(ps, d, delta, gamma, 0.0, not paper_mode)
    st.plotly_chart(m_range_chart(ps, lo, hi, here=p if p <= ps[-1] else None),
                    width="stretch", key="fz-mrange")
    st.caption("Drawn at Δ = 1, the most favourable case: a larger Δ lifts m_lo by 2·log₁₀ Δ.")
with tabs[2]:
    rows = {}
    for name, preset in fz.PRESETS.items():
        s = fz.Setting(preset["p"], 2, math.log10(preset["n"]), 1.0, 0.25, 0.125,
                       fz.log10_delta_bound("from ‖f_n‖∞", preset["p"], 0.0,
                                            fn_inf=preset["fn_inf"]), empty=False)
        rows[name] = {"printed_k": math.log10(preset["printed"][0]), "k": s.log10_k_hi(0.0),
                      "printed_m": math.log10(preset["printed"][1]), "m_lo": s.log10_m_lo,
                      "m_hi": s.log10_m_hi, "two_p": preset["p"] * fz.LOG10_2}
    st.plotly_chart(table2_chart(rows), width="stretch", key="fz-table2")
with tabs[3]:
    log10_ns = np.arange(1.0, 80.5, 0.5)
    grid = fz.k_max_grid(ps[None, :], log10_ns[:, None], epsilon, delta, gamma, d,
                         fz.log10_delta_grid(mode, ps, log10_ns, manual, fn_inf),
                         not paper_mode)
    st.plotly_chart(k_heatmap(ps, log10_ns, grid), width="stretch", key="fz-heatmap")

st.caption(
    "Recomputed where the paper's printed numbers do not follow from its formulas: Table 3's p "
    "column (46, 68, 75, 83 printed; 54, 69, 76, 83 from its Figure 1 formula at ε = 10); "
    "'38 years' for m = 1.2·10⁸ (its heuristic gives 45.6 years); 'p ≤ 7' for a QP under a "
    "month (p ≤ 9).")

with st.expander("Run it: Algorithm 1 on a small test cube (p ≤ 16)"):
    st.caption("A random table of correlated ±1 columns stands in for data (not your table): "
               "the point is to watch the LP's shrinkage λ, the conditioning check and the "
               "marginal errors, not to release anything.")
    c1, c2, c3, c4 = st.columns(4)
    run_p = int(c1.number_input("p", 2, 16, min(max(p, 2), 8), key="fz:run-p",
                                persist_state="session"))
    run_n = int(c2.number_input("n", 100, 200_000, 20_000, step=1000, key="fz:run-n",
                                persist_state="session"))
    l_run = fz.walsh_count(run_p, min(d, run_p))
    run_m = int(c3.number_input("m", 1, 50_000, min(8 * l_run, 50_000), key="fz:run-m",
                                persist_state="session"))
    run_k = int(c4.number_input("k", 1, 1_000_000, 10_000, step=1000, key="fz:run-k",
                                persist_state="session"))
    run_delta = st.number_input("δ for the run", 1e-4, 0.5, 0.01, format="%g", key="fz:run-δ",
                                persist_state="session")
    if st.button("Run Algorithm 1"):
        rng = np.random.default_rng(0)
        latent = rng.normal(size=(run_n, 1))
        cube = np.where(rng.normal(size=(run_n, run_p)) + 1.2 * latent > 0.3, 1, -1)
        _, counts = np.unique(cube, axis=0, return_counts=True)
        run_Delta = max(1 + run_delta, 1.05 * 2 ** run_p * counts.max() / run_n)
        try:
            with st.spinner("LP and QP…"):
                fitted = fit_density(cube.astype(np.int8), min(d, run_p), run_m, run_delta,
                                     run_Delta, rng)
        except SynthError as exc:
            st.error(str(exc))
        else:
            sets = subsets(run_p, min(d, run_p))
            target = walsh(cube, sets).mean(axis=0)
            exact = walsh(fitted.support, sets).T @ fitted.h
            drawn = walsh(fitted.sample(run_k, rng), sets).mean(axis=0)
            bound = fz.Setting(run_p, min(d, run_p), math.log10(run_n), epsilon, run_delta,
                               gamma, math.log10(run_Delta), math.log10(run_m))
            r1, r2, r3, r4 = st.columns(4)
            r1.metric("shrinkage λ", f"{fitted.shrinkage:.3g}")
            r2.metric("σ_min / its bound", f"{fitted.sigma_min:.3g} / {fitted.sigma_bound:.3g}")
            r3.metric("marginal error of h*", f"{np.abs(exact - target).max():.2g}")
            r4.metric(f"… of {run_k:,} samples", f"{np.abs(drawn - target).max():.3g}")
            st.caption(f"Errors are the largest gap between degree-≤{min(d, run_p)} Walsh "
                       f"coefficients. Δ = {run_Delta:.3g}, from this test table's ‖f_n‖∞. "
                       f"Theorem 4.1 would allow k ≤ {show(bound.log10_k_hi(bound.log10_m))} "
                       "here: no DP claim is made for this run.")
