"""MEDAL Explorer's Streamlit entry script (``medal app`` runs this file).

It only sets up the pages; each page lays out widgets, and everything it shows is built by
``medal.views`` from a run's trace.
"""
from medal.app import navigate

navigate("pages")
