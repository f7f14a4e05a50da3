"""MEDAL Explorer: watch MEDAL think, step by step.

    streamlit run app.py        (in a checkout; ``medal app`` does the same from anywhere)

A thin entry point: the app's code is the package's ``medal/app/``.

``streamlit run`` finds the ``st.App`` below and imports this file before it serves
anything, so Streamlit's caches of this machine's addresses are filled first: a WebSocket
from another origin, even before the first page load, never makes Streamlit look the
machine up on the internet. Each visitor's session then runs this file as ``__main__``.
"""
import streamlit as st

if __name__ == "__main__":      # a session: lay out the pages
    from medal.app import navigate

    navigate("pages")
else:                           # `streamlit run app.py` imports this file to serve it
    from medal.serving import keep_on_machine

    keep_on_machine()
    app = st.App(__file__)
