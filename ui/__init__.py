"""Streamlit-side helpers: typed session state and the error guard. ``synth`` never imports it."""
