"""The workbench: pick a table, spend a privacy budget, compare real and synthetic data.

Run with ``streamlit run app.py`` (see README.md). Pages live in pages/; each draws the shared
sidebar (ui.layout), reads state, calls the ``synth`` package and draws what comes back.
"""

import streamlit as st

st.set_page_config(page_title="Private synthetic data workbench", page_icon="🔒", layout="wide")
st.navigation([
    st.Page("pages/data.py", title="Data", icon="📋", default=True),
    st.Page("pages/synthesize.py", title="Synthesize", icon="⚙️"),
]).run()
