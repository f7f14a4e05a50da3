"""Thin entry point for ``streamlit run app.py``: the page's code is ``medal/app/pages/how_medal_works.py``."""
from medal.app import run_page

run_page("how_medal_works")
