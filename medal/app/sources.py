"""Where a replayed trace comes from: a visitor's upload (through the one gate), a shipped
example, or the page's URL (``?example=``, ``?source=``) for a new session."""
from __future__ import annotations

import streamlit as st

from .. import serving
from ..errors import MedalError, TraceError
from ..trace import loads_trace_apart, size_text
from ..viewer import Frames
from ..examples import list_examples, load_example
from ..views.safe import md
from .session import STATE, serving_settings


def upload_section() -> dict | None:
    up = st.sidebar.file_uploader(
        "Trace file (JSON)", type=["json"], key="w_upload",
        help=f"A trace exported by this app or by `medal generate --trace`; at "
             f"most {serving_settings().max_trace_bytes:,} bytes. No model is needed to inspect it.",
        max_upload_size=serving.upload_mb(serving_settings().max_trace_bytes))
    cached = STATE.get("uploaded")
    if up is not None and not (cached and cached[0] == up.file_id):
        trace, error = None, None
        if up.size > serving_settings().max_trace_bytes:
            error = f"the trace is {size_text(up.size, serving_settings().max_trace_bytes)}"
        else:
            try:
                # in a child process: its parse's memory goes back to the system
                trace = loads_trace_apart(up.getvalue(), serving_settings().max_trace_bytes,
                                          serving_settings().limits["max_k1"])
            except TraceError as exc:
                error = str(exc)
            finally:
                serving.forget_upload(up.file_id)   # the page keeps what it read
                serving.give_back_memory()
        STATE["uploaded"] = cached = (up.file_id, trace, error)
        STATE["uploaded_name"] = up.name
        STATE["inspect_node"] = None
    if not cached:
        st.info("Upload a trace in the sidebar to replay and inspect it without a model.")
        return None
    name = STATE.get("uploaded_name", "the trace")
    trace, error = cached[1], cached[2]
    if error:
        st.error(md(f"Cannot read {name}: {error}"))
        return None
    st.sidebar.success(md(f"Loaded {name}: {trace['run']['strategy']} on "
                          f"{trace['run']['model'].get('name')}"))
    if up is None:
        st.sidebar.caption("The trace stays loaded until another file is uploaded.")
    return trace


def open_example(name: str) -> None:
    STATE["w_source"] = "Example"
    STATE["example_name"] = name
    STATE["inspect_node"] = None
    STATE.pop("landing_example", None)


#: the example a new session opens on (issue 18: page load -> interactive tree <= 2 s)
LANDING_EXAMPLE = "countdown-medal-fixes-greedy"


#: ``?source=`` values of the page's URL
SOURCE_PARAMS = {"live": "Live run", "upload": "Uploaded trace", "example": "Example",
                 "compare": "Compare"}


def land() -> None:
    """A new session's first view. The URL may name it: ``?example=<name>`` opens that
    example, ``?source=live`` (``upload``, ``compare``, ``example``) that source. Without
    either, the page opens on an example, so the first thing a visitor sees is a run to step
    through (and the page's first run draws no settings: the ~40 setting widgets took most of
    the browser's time to the first tree, issue 18)."""
    if "run_page_runs" in STATE:
        return
    shipped = [e.name for e in list_examples()]
    params = st.query_params
    name, source = params.get("example"), params.get("source")
    if name is not None and name not in shipped:
        STATE["landing_note"] = (f"There is no example named \"{name[:60]}\" (the page's URL, "
                                 f"?example=...); the examples are: {', '.join(shipped)}.")
        name = None
    if source is not None and source.lower() not in SOURCE_PARAMS:
        STATE["landing_note"] = (f"Unknown source \"{source[:60]}\" in the page's URL "
                                 f"(?source=...); use one of: {', '.join(SOURCE_PARAMS)}.")
        source = None
    source = SOURCE_PARAMS.get((source or "").lower())
    if name is None and source in (None, "Example"):
        name = (LANDING_EXAMPLE if LANDING_EXAMPLE in shipped else
                next(iter(shipped), None))
    if name is not None and source in (None, "Example"):
        STATE["w_source"] = "Example"
        STATE["example_name"] = name
        STATE["landing_example"] = name
    elif source is not None:
        STATE["w_source"] = source


def landing_example_note(name: str) -> None:
    """What to do first, above the example a new session opened on."""
    if STATE.get("landing_example") != name:
        return
    st.info("**Start here:** step through this example run from **|◀ Start** with **Next "
            "phase** (→) or **▶ Play**. More examples, and **Live run** for your own prompt, "
            "are in the sidebar.")


def example_buttons(container) -> None:
    """One click opens a shipped example trace (from any source)."""
    shipped = list_examples()
    if not shipped:
        return
    box = container.expander("Open an example run", expanded=True)
    for ex in shipped:
        box.button(ex.title, key=f"example-{ex.name}", help=ex.description,
                   on_click=open_example, args=(ex.name,), width="stretch")


@st.cache_data(show_spinner=False, max_entries=8)
def example_trace(name: str) -> dict:
    return load_example(next(e for e in list_examples() if e.name == name))


def example_section() -> dict | None:
    """The example chosen with :func:`example_buttons`, replayed like an uploaded trace."""
    shipped = {e.name: e for e in list_examples()}
    name = STATE.get("example_name")
    if name not in shipped:
        st.info("Pick an example run in the sidebar.")
        return None
    try:
        trace = example_trace(name)
    except MedalError as exc:
        st.error(md(f"Cannot open the example {name}: {exc}"))
        return None
    st.sidebar.success(f"Example: {shipped[name].title}")
    st.sidebar.caption(shipped[name].description)
    return trace


def replay_frames(key: str, _trace: dict) -> Frames:
    """An upload's frames, computed once: kept in the visitor's session (out of reach of
    a ``clear_cache`` message, like the server's own caches), so they go with it -- a
    closed tab's upload no longer stays in a server-wide cache (issue 40: the served app's
    memory only grew over uploads and closed sessions)."""
    held = STATE.get("upload_frames")
    if held is not None and held[0] == key:
        return held[1]
    STATE["upload_frames"] = None          # the previous upload's frames go first
    frames = Frames(key)
    frames.update(_trace)
    STATE["upload_frames"] = (key, frames)
    return frames
