"""MEDAL Explorer -- the Run page: watch MEDAL think, step by step.

Layout only: the run is driven by ``medal.app.controller``; every figure and HTML block is
built by ``medal.views`` from the trace dict -- the same dict for a live run (``run.trace``)
and for an uploaded trace file. Both are stepped on one timeline (``medal.timeline``):
every event is a position, and what the page shows is the trace as it stood there.

All state lives in ``st.session_state`` under plain keys (the run, the loaded trace, the
timeline cursor, a copy of every setting), so page switches and reruns keep it. The
page's parts: ``medal.app.session`` (the widgets' keys and saved values),
``medal.app.sidebar`` (the settings), ``medal.app.live_run`` (a live run and the viewer's
requests), ``medal.app.sources`` (an upload, an example, the URL), ``medal.app.blocks``.
"""
from __future__ import annotations

import streamlit as st

from medal import serving
from medal.app import compare_view   # issue 19: Compare view, What if…
from medal.app.blocks import compact_style, landing, run_parameters, trace_files
from medal.app.live_run import (CHUNK_SECONDS, engine_lock, handle_request, live_frames,
                                on_need, on_request, run_trace, sender, step_or_error)
from medal.app.session import (STATE, index_of, new_generation_if_away, restore_widgets,
                               save_widgets)
from medal.app.sidebar import settings_key, sidebar_settings
from medal.app.sources import (example_buttons, example_section, land, landing_example_note,
                               replay_frames, upload_section)
from medal.viewer import example_frames, warm_examples
from medal.app import components
from medal.views import progress
from medal.views.safe import md

serving.keep_on_machine()


def _fragment_only() -> bool:
    """Whether this script run is a rerun of the live view's fragment alone."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx
    ctx = get_script_run_ctx()
    return bool(ctx is not None and getattr(ctx, "fragment_ids_this_run", None))


def _fragment_serves(req: dict | None) -> bool:
    """Whether the live view's fragment answers ``req`` on its own: a step, an iteration,
    a run to the end or a stop of a live run that exists and can go on. Anything else (the
    first step, which starts a run; Reset; What if… and its form; a finished run, whose
    parameters the sidebar shows) changes the rest of the page: the whole page runs."""
    run = STATE.get("run")
    if run is None or run.done or getattr(run, "_released", False):
        return False
    if STATE.get("whatif"):      # its form's choices and Fork and compare open other views
        return False
    return req is None or (isinstance(req, dict)
                           and req.get("op") in ("step", "iteration", "end", "stop"))


@st.fragment
def live_view() -> None:
    """The live run's part of the page: the request handled, notes, the viewer, the What-if
    form, the step time and the trace's downloads.

    A fragment: a request of the viewer (Next phase, Play, the keys) reruns only this, not
    the page's ~60 elements (the sidebar's settings), which Streamlit re-sent and the
    browser re-drew at every step (issue 18: live step p90 <= 250 ms). Run to end works in
    chunks of CHUNK_SECONDS, each a run of its own: a fragment's rerun does not interrupt
    a run in progress, so Stop -- a request like any other -- is taken between two chunks
    (the pending request and the next chunk's rerun are folded into one)."""
    alone = _fragment_only()
    req = STATE.get("pending_request")
    if not isinstance(req, dict):   # only the viewer's request objects (a visitor's
        req = None                  # console can send anything)
    if alone and not _fragment_serves(req):
        st.rerun(scope="app")
    STATE.pop("pending_request", None)
    settings = STATE.get("live_settings")
    whatif = compare_view.take_whatif(req, "live")
    if req and not whatif:
        STATE["live_ack"] = req.get("seq")
    run = STATE.get("run")
    if run is not None:
        with engine_lock(run):   # a stopped script run's last engine step: done
            pass
    handle_request(None if whatif else req, settings)
    run = STATE.get("run")
    trace = run_trace(run) if run is not None else None
    if run is not None and STATE.get("running"):
        frac, caption = progress(trace)
        bar = st.progress(frac, text=f"Running… {caption}. Press Stop to pause.")
        went_on = not run.done and step_or_error(run, "end", max_seconds=CHUNK_SECONDS)
        if went_on and not run.done:
            frac, caption = progress(run_trace(run))
            bar.progress(frac, text=f"Running… {caption}. Press Stop to pause.")
            st.rerun(scope="fragment" if alone else "app")     # the next chunk
        STATE["running"] = False
        bar.empty()
        trace = run_trace(run)
        if alone and run.done:
            st.rerun(scope="app")   # the sidebar shows a finished run's parameters
    if run is not None and STATE.get("run_settings") != settings_key(settings):
        st.info("The settings changed since this run started: press Reset to run with them.")
    for note in (STATE.get("run_notes") or []) if run is not None else []:
        st.warning(note)
    if trace is None:
        landing(True)
    ack = STATE.pop("live_ack", None)
    if trace is None:
        data = {"key": None, "live": True, "ack": ack}
    else:
        frames = live_frames(run, trace)
        data = sender().data(frames, live=True, done=run.done, ack=ack)
    components.viewer(data, key="medal_viewer", on_request=on_request, on_need=on_need,
                      sender=sender())
    compare_view.whatif_form(trace, "live", "the live run")
    if run is not None and STATE.get("last_step_ms") is not None:
        st.caption(f"last step on the server: {STATE['last_step_ms']:.0f} ms")
    if trace is not None:
        trace_files(trace)


def main() -> None:
    warm_examples()
    land()
    STATE["run_page_runs"] = STATE.get("run_page_runs", 0) + 1
    restore_widgets()
    compact_style()
    compare_view.run_pending_fork()     # (before the source's widget: it may open Compare)
    st.caption("**MEDAL Explorer** · MCTS-initialised decoding of diffusion language "
               "models, step by step")
    sources = ["Live run", "Uploaded trace", "Example", "Compare"]
    source = st.sidebar.radio("Source", sources, key="w_source", horizontal=True,
                              index=index_of(sources, "w_source"))
    if STATE.get("landing_note"):
        st.warning(md(STATE.pop("landing_note")))   # as text: it echoes the page's URL
    if source != "Example":
        STATE.pop("landing_example", None)
    example_buttons(st.sidebar)
    if source == "Compare":     # issue 19: two runs side by side on one timeline
        STATE.pop("pending_request", None)
        compare_view.compare_section()
        save_widgets()
        return
    sender().compare_sent = None      # the Compare view is not drawn: it holds no pair
    if source == "Live run":
        new_generation_if_away()
        restore_widgets()
        STATE["live_settings"] = sidebar_settings()
        STATE["settings_drawn_at"] = STATE["run_page_runs"]
        live_view()
        run = STATE.get("run")
        if run is not None and run.done:
            run_parameters(run_trace(run))
        save_widgets()
        return
    req = STATE.pop("pending_request", None)
    source_id = f"example:{STATE.get('example_name')}" if source == "Example" else "upload"
    compare_view.take_whatif(req, source_id)
    trace = example_section() if source == "Example" else upload_section()
    if trace is not None and source == "Example":
        landing_example_note(STATE.get("example_name"))
    ack = req.get("seq") if req else None
    if trace is None:
        data = {"key": None, "live": False, "ack": ack}
    else:
        key = (f"example-{STATE.get('example_name')}" if source == "Example" else
               f"upload-{(STATE.get('uploaded') or ('none',))[0]}")
        frames = (example_frames(STATE.get("example_name")) if source == "Example"
                  else replay_frames(key, trace))
        data = sender().data(frames, live=False, done=True, ack=ack)
    components.viewer(data, key="medal_viewer", on_request=on_request, on_need=on_need,
                      sender=sender())
    compare_view.whatif_form(trace, source_id, {"upload": "the uploaded trace"}
                             .get(source_id, "this example"))
    if trace is not None:
        trace_files(trace)
        run_parameters(trace)
    save_widgets()

main()
