"""MEDAL Explorer: watch MEDAL think, step by step.

    streamlit run app.py

This file only sets up the pages; each page lays out widgets, and everything it shows is
built by ``medal.viz`` from a run's trace.
"""
import streamlit as st

from medal.serving import keep_on_machine

keep_on_machine()  # Streamlit never asks the internet for this machine's address

# No icons: Streamlit fetches a Material icon used as a page's favicon from
# fonts.gstatic.com, and this app loads nothing from outside the machine.
st.set_page_config(page_title="MEDAL Explorer", layout="wide")
page = st.navigation([
    st.Page("pages/run.py", title="Run", default=True),
    st.Page("pages/how_medal_works.py", title="How MEDAL works"),
    st.Page("pages/benchmark.py", title="Benchmark"),
])
page.run()
