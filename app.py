"""MEDAL Explorer: watch MEDAL think, step by step.

    streamlit run app.py        (in a checkout; ``medal app`` does the same from anywhere)

A thin entry point: the app's code is the package's ``medal/app/``.
"""
from medal.app import navigate

navigate("pages")
