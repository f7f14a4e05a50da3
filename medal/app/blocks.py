"""The Run page's smaller blocks: a run's prompt and parameters, tables, expanders drawn
only while open, the trace's downloads, the landing note and the page's spacing."""
from __future__ import annotations

import streamlit as st
from packaging.version import Version

from ..trace import dumps
from .controller import download_name
from ..viewer.export import export_html
from .session import STATE

DEFERRED_DOWNLOAD = Version(st.__version__) >= Version("1.52")


MISSING = "—"            # how every table shows a missing value


def compact_style() -> None:
    """Less blank space above the page, so the viewer starts on the first screen."""
    st.html("""<style>
      .stMainBlockContainer, [data-testid="stMainBlockContainer"] {
        padding-top: 2.25rem !important; padding-bottom: 2rem !important; }
      [data-testid="stMainBlockContainer"] [data-testid="stVerticalBlock"] { gap: 0.5rem; }
    </style>""")


def landing(live: bool) -> None:
    st.info("**Start here:** open an example run in the sidebar (*Open an example run*: "
            "\"Countdown: MEDAL fixes greedy's answer\" is a good first one) and step through "
            "it with **Next phase** or the → key. Or press **Next phase** below to start a "
            "live run with the settings in the sidebar.")


def run_parameters(trace: dict) -> None:
    """The prompt and parameters a trace was made with (shown as text: they come from the
    trace, which may be anyone's upload), in the sidebar: out of the way of the tree."""
    run = trace.get("run") or {}
    box = lazy_expander(st.sidebar, "Prompt and parameters of this run", "open_run_parameters")
    if box is None:
        return
    with box:
        st.text(f"Strategy: {run.get('strategy')} · model: "
                f"{(run.get('model') or {}).get('name')}")
        st.text("Prompt:")
        st.code(run.get("prompt") or "", language=None)
        if run.get("model_prompt") and run.get("model_prompt") != run.get("prompt"):
            st.text("Prompt as given to the model (with the decomposition guidance):")
            st.code(run["model_prompt"], language=None)
        table([{"parameter": k, "value": "" if v is None else str(v)}
               for k, v in (run.get("config") or {}).items()])


def lazy_expander(container, label: str, key: str):
    """A collapsed expander whose content is drawn only while it is open: the expander, or
    None while it is closed. Opening it reruns the page (or the fragment it is in).

    Issue 18 (page load -> interactive tree <= 2 s): the browser renders what a closed
    expander holds, too. The run's prompt (``st.code``: the syntax highlighter, ~0.5 s of
    the browser's main thread on this machine) and its parameters (a data grid) were drawn
    with every example opened, and the trace's download buttons with every run."""
    box = container.expander(label, expanded=False, key=key, on_change="rerun")
    return box if box.open else None


def table(rows: list[dict]) -> None:
    """A dataframe: float columns keep 4 significant digits (scores are ~1e-4) and every
    missing value reads the same (MISSING)."""
    floats = {k for r in rows for k, v in r.items() if isinstance(v, float)}
    st.dataframe(rows, hide_index=True, placeholder=MISSING, column_config={
        k: st.column_config.NumberColumn(k, format="%.4g") for k in floats})


number_table = table


def trace_tab(trace: dict) -> None:
    # Streamlit >= 1.52 writes the file only when the button is clicked: a large trace is
    # then not serialised and re-sent at every step of the run.
    # packed (medal.trace.pack): a paper-settings trace stays under the upload limit
    data = ((lambda: dumps(trace, packed=True)) if DEFERRED_DOWNLOAD
            else dumps(trace, packed=True))
    when = STATE.get("run_started_at") if STATE.get("w_source") == "Live run" else None
    # a download needs no run of the page ("ignore"): a rerun for it (of the live view,
    # then of the whole page for a finished run) could cancel the file on its way
    st.download_button("Download trace (JSON)", data, file_name=download_name(trace, when),
                       mime="application/json", key="download_trace", on_click="ignore")
    # --- issue 10b: the same run as one self-contained web page ---
    page = (lambda: export_html(trace)) if DEFERRED_DOWNLOAD else None
    if trace.get("result") is not None and page is not None:
        st.download_button("Download as a web page (HTML)", page, file_name="medal-trace.html",
                           mime="text/html", key="download_html", on_click="ignore",
                           help="One HTML file with the tree, heatmap, order, candidates and "
                                "inspector, stepped phase by phase; it opens in any browser "
                                "with no server and no network (also: python -m medal export "
                                "trace.json out.html).")
    # --- end issue 10b ---
    nodes = len((trace.get("tree") or {}).get("nodes", []))
    st.caption(f"The whole run ({nodes} tree nodes, {len(trace.get('decode') or [])} decoding "
               "steps) as JSON. Upload it later (sidebar → Uploaded trace) to replay and "
               "inspect it without the model.")


def trace_files(trace: dict) -> None:
    """The trace's downloads, in an expander drawn only while open (:func:`lazy_expander`)."""
    box = lazy_expander(st, "Trace file: download (JSON or a self-contained web page)",
                        "open_trace_files")
    if box is not None:
        with box:
            trace_tab(trace)
