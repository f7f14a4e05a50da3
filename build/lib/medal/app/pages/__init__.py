"""The app's pages (run by Streamlit as scripts; see ``medal.app``)."""
