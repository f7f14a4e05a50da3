"""MEDAL Explorer: watch MEDAL think, step by step.

    streamlit run app.py

This file only sets up the pages; each page lays out widgets, and everything it shows is
built by ``medal.viz`` from a run's trace.
"""
import streamlit as st

st.set_page_config(page_title="MEDAL Explorer", layout="wide")  # no page_icon: a Material
# icon as favicon is fetched from fonts.gstatic.com, and this app stays offline
page = st.navigation([
    st.Page("pages/run.py", title="Run", icon=":material/play_arrow:", default=True),
    st.Page("pages/how_medal_works.py", title="How MEDAL works", icon=":material/functions:"),
])
page.run()
