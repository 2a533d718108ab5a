"""The workbench: pick a table, spend a privacy budget, compare real and synthetic data.

Run with ``streamlit run app.py`` (see README.md). Pages live in app_pages/, not pages/:
Streamlit would also serve a pages/ folder as a legacy multipage app and run a deep-linked
page without this file. Each page draws the shared sidebar (ui.layout), reads state, calls
the ``synth`` package and draws what comes back.
"""

import streamlit as st

st.set_page_config(page_title="Private synthetic data workbench", page_icon=":material/lock:",
                   layout="wide")
st.navigation([
    st.Page("app_pages/data.py", title="Data", icon=":material/table_chart:", default=True),
    st.Page("app_pages/synthesize.py", title="Synthesize", icon=":material/tune:"),
    st.Page("app_pages/compare.py", title="Compare", icon=":material/bar_chart:"),
    st.Page("app_pages/tradeoffs.py", title="Trade-offs", icon=":material/balance:"),
    st.Page("app_pages/feasibility.py", title="Feasibility", icon=":material/calculate:"),
]).run()
