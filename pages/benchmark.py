"""Thin entry point for ``streamlit run app.py``: the page's code is ``medal/app/pages/benchmark.py``."""
from medal.app import run_page

run_page("benchmark")
