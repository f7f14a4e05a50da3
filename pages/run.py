"""MEDAL Explorer -- the Run page: watch MEDAL think, step by step.

Layout only: the run is driven by ``medal.viz.controller`` and every figure and HTML
block is built by ``medal.viz`` from the trace dict -- the same dict for a live run
(``run.trace``) and for an uploaded trace file.
"""
from __future__ import annotations

import time

import streamlit as st
from packaging.version import Version

from medal import models, serving
from medal.engine import STRATEGIES
from medal.errors import MedalError, TraceError
from medal.tasks import TASKS
from medal.trace import MAX_TRACE_BYTES, dumps, loads_trace
from medal.viz import (current_phase, entropy_heatmap, iteration_count, order_html,
                       order_summary, phase_cycle_html, progress, trace_at_iteration,
                       tree_html, tree_view)
from medal.viz import inspector
from medal.viz.safe import md
# --- issue 10b views (candidates, task views, examples, export) ---
from medal.viz import board as task_board
from medal.viz import candidates as cand_view
from medal.viz.examples import list_examples, load_example
from medal.viz.export import export_html
# --- end issue 10b ---
from medal.viz.controller import (PARAMETERS, advance, app_threads, create_run, load_options,
                                  make_config)

DEFAULT_MODEL = getattr(models, "DEFAULT_MODEL", "builtin:countdown")
DEVICES = tuple(getattr(models, "DEVICES", ("auto",)))
DTYPES = tuple(getattr(models, "DTYPE_CHOICES", ("auto",)))
DEFERRED_DOWNLOAD = Version(st.__version__) >= Version("1.52")
CHUNK_SECONDS = 0.5      # "Run to end" works in chunks; Stop is honoured between them

# ---------------------------------------------------------------- widget state
# Streamlit forgets a page's widget values when another page is shown; keep a copy.
WIDGET_DEFAULTS = {"w_model": DEFAULT_MODEL, "w_task": next(iter(TASKS)),
                   "w_device": "auto", "w_dtype": "auto",
                   "w_strategy": "medal", "w_source": "Live run", "w_max_nodes": 40,
                   "w_padding": False,
                   **{f"w_{p.name}": p.default for p in PARAMETERS}}


def _restore_widgets() -> None:
    saved = st.session_state.setdefault("saved_widgets", {})
    for key, default in WIDGET_DEFAULTS.items():
        if key not in st.session_state:
            st.session_state[key] = saved.get(key, default)


def _save_widgets() -> None:
    st.session_state["saved_widgets"] = {k: st.session_state[k] for k in WIDGET_DEFAULTS
                                         if k in st.session_state}
    st.session_state["saved_widgets"]["w_prompt"] = st.session_state.get("w_prompt")


# ---------------------------------------------------------------- model (operator's list)
# Which models a visitor may load and whether remote code may run are the server
# operator's settings (medal/serving.py: environment or flags at start), never a widget's.
SERVING = serving.current()
serving.keep_on_machine()


@st.cache_resource(show_spinner="Loading the model…", max_entries=3)
def cached_model(spec: str, options: tuple):
    return serving.load_allowed_model(SERVING, spec, dict(options))


def load_model_or_error(spec: str, options: dict):
    """The model, or None after showing why it could not be loaded (one message for a
    model that is not on the list and one that fails: the page reveals no server files)."""
    try:
        return cached_model(serving.check_model(SERVING, spec), tuple(sorted(options.items())))
    except MedalError as exc:
        st.error(md(f"Could not load the model: {exc}"))
    return None


def model_settings(sb) -> tuple[str, dict]:
    """The model picker: a model from the operator's list, device and dtype; a read-only
    line says whether remote code is allowed."""
    allowed = SERVING.models
    if st.session_state.get("w_model") not in allowed:
        st.session_state["w_model"] = DEFAULT_MODEL if DEFAULT_MODEL in allowed else allowed[0]
    spec = sb.selectbox("Model", allowed, key="w_model",
                        help="The models this server offers: the built-in tiny models (CPU) "
                             "and any the operator added (MEDAL_MODELS).")
    sb.caption(SERVING.remote_code_line())
    with sb.expander("Loading options (transformers models)"):
        device = st.selectbox("Device", DEVICES, key="w_device",
                              help="auto: CUDA if present, else CPU.")
        dtype = st.selectbox("Weights dtype", DTYPES, key="w_dtype",
                             help="auto: bfloat16 on a GPU, float32 on the CPU.")
    return spec, serving.load_options(SERVING, device, dtype)


# ---------------------------------------------------------------- sidebar: settings
def _use_example() -> None:
    st.session_state["w_prompt"] = st.session_state["w_example"]


def _task_changed() -> None:
    """A new task: its first example prompt, and its built-in model if one was in use."""
    task = TASKS[st.session_state["w_task"]]
    first = task.format_prompt(task.example_problems[0])
    st.session_state["w_example"] = st.session_state["w_prompt"] = first
    if (st.session_state.get("w_model", "").strip().startswith("builtin:")
            and f"builtin:{task.name}" in SERVING.models):
        st.session_state["w_model"] = f"builtin:{task.name}"


def _number_widget(p, container):
    key = f"w_{p.name}"
    if p.kind == "bool":
        return container.checkbox(p.label, key=key, help=p.help)
    if p.kind == "optional_bool":
        return container.selectbox(p.label, (None, True, False), key=key, help=p.help,
                                   format_func=lambda v: {None: "default", True: "on",
                                                          False: "off"}[v])
    if p.kind == "choice":
        return container.selectbox(p.label, p.choices, key=key, help=p.help)
    if p.kind == "float":
        return container.number_input(p.label, min_value=p.min_value, step=p.step or 0.1,
                                      key=key, help=p.help, format="%.3f")
    low = None if p.min_value is None else int(p.min_value)
    return container.number_input(p.label, min_value=low, step=1, key=key, help=p.help,
                                  placeholder="default" if p.kind == "optional_int" else None)


def sidebar_settings() -> dict:
    sb = st.sidebar
    sb.subheader("Model")
    spec, options = model_settings(sb)
    sb.subheader("Task and prompt")
    task_name = sb.selectbox("Task", list(TASKS), key="w_task", on_change=_task_changed,
                             help="How a prompt is formatted and an answer verified.")
    task = TASKS[task_name]
    examples = [task.format_prompt(p) for p in task.example_problems]
    if st.session_state.get("w_example") not in examples:
        st.session_state["w_example"] = examples[0]
    sb.selectbox("Example prompts", examples, key="w_example", on_change=_use_example)
    if "w_prompt" not in st.session_state:
        st.session_state["w_prompt"] = (st.session_state["saved_widgets"].get("w_prompt")
                                        or examples[0])
    prompt = sb.text_area("Prompt", key="w_prompt", height=80,
                          help="Pick an example above or write your own.")
    strategy = sb.selectbox("Strategy", list(STRATEGIES), key="w_strategy",
                            help="medal: MCTS initialisation + phase C. The others are the "
                                 "paper's baselines and ablations.")
    groups = {"search": sb.expander("Search parameters (MEDAL)", expanded=True),
              "decoding": sb.expander("Decoding parameters"),
              "prompt": sb.expander("Decomposition and seed")}
    params = {p.name: _number_widget(p, groups[p.group]) for p in PARAMETERS}
    return {"model": spec, "load_options": options, "task": task_name, "prompt": prompt,
            "strategy": strategy, "params": params}


def settings_key(settings: dict) -> str:
    return repr(sorted((k, repr(v)) for k, v in settings.items()))


# ---------------------------------------------------------------- live run
def start_run(settings: dict):
    """A new Run from the settings, or None after showing what is wrong."""
    try:
        config = make_config(settings["params"])
        serving.check_limits(SERVING, config)
    except MedalError as exc:
        st.error(md(f"Invalid parameters: {exc}"))
        return None
    model = load_model_or_error(settings["model"], settings["load_options"])
    if model is None:
        return None
    threads = app_threads(model)
    if threads:
        import torch
        torch.set_num_threads(threads)
    try:
        run = create_run(model, task=settings["task"], prompt=settings["prompt"],
                         strategy=settings["strategy"], config=config)
    except MedalError as exc:
        st.error(md(f"Cannot start this run: {exc}"))
        return None
    st.session_state["run"] = run
    st.session_state["run_settings"] = settings_key(settings)
    st.session_state["run_id"] = st.session_state.get("run_id", 0) + 1
    return run


def _request(action: str) -> None:
    """Button callbacks run before the page: the buttons then render in the new state."""
    if action == "stop":
        st.session_state["running"] = False
    elif action == "reset":
        for key in ("run", "running", "run_settings", "last_step_ms", "pending", "events",
                    "trace_cache"):
            st.session_state.pop(key, None)
    else:
        st.session_state["pending"] = action


def step_or_error(run, mode: str, **limits) -> bool:
    """Advance the run; on failure show why (no traceback) and stop running."""
    try:
        events = advance(run, mode, **limits)
        st.session_state["events"] = st.session_state.get("events", 0) + len(events)
        return True
    except Exception as exc:  # the model or the engine failed mid-run
        st.session_state["running"] = False
        st.session_state["events"] = st.session_state.get("events", 0) + 1  # trace moved
        detail = str(exc) if isinstance(exc, MedalError) else f"{type(exc).__name__}: {exc}"
        st.error(md(f"The run failed: {detail}. Press Reset to start again."))
        return False


def run_trace(run) -> dict:
    """``run.trace``, rebuilt only when the run has moved: clicking a tab or moving a
    slider reuses it (building it is the largest part of a UI step's cost)."""
    key = (st.session_state.get("run_id"), st.session_state.get("events", 0))
    cached = st.session_state.get("trace_cache")
    if cached is not None and cached[0] == key:
        return cached[1]
    trace = run.trace
    st.session_state["trace_cache"] = (key, trace)
    return trace


def live_section(settings: dict) -> dict | None:
    action = st.session_state.pop("pending", None)
    run = st.session_state.get("run")
    if action and run is None:
        run = start_run(settings)
    elif run is not None and st.session_state.get("run_settings") != settings_key(settings):
        st.info("The settings changed since this run started: press Reset to run with them.")
    if run is not None and action:
        t0 = time.perf_counter()
        if action == "end":
            st.session_state["running"] = True
        elif step_or_error(run, action):
            st.session_state["last_step_ms"] = (time.perf_counter() - t0) * 1000
    running = run is not None and st.session_state.get("running", False)
    busy = (run is not None and run.done) or running
    cols = st.columns(5)
    cols[0].button("Next phase", disabled=busy, on_click=_request, args=("phase",),
                   help="One event: one MCTS phase (selection, expansion, simulation, "
                        "backpropagation) or one decoding step.")
    cols[1].button("Next iteration", disabled=busy, on_click=_request, args=("iteration",),
                   help="Up to the end of the next MCTS iteration (its backpropagation); "
                        "past the search, one decoding step.")
    cols[2].button("Run to end", disabled=busy, on_click=_request, args=("end",),
                   type="primary")
    cols[3].button("Stop", disabled=not running, on_click=_request, args=("stop",),
                   help="Pause a run to the end; step on or run on from where it stopped.")
    cols[4].button("Reset", on_click=_request, args=("reset",),
                   help="Discard this run; the next step starts a new one with the current "
                        "settings.")
    bar = st.empty()
    if run is None:
        st.info("Press **Next phase**, **Next iteration** or **Run to end** to start a run "
                "with the settings in the sidebar.")
        return None
    if running:
        # In chunks: a click on Stop (or any widget) interrupts the page between two
        # chunks, and the run resumes on the next page run unless Stop was pressed.
        while not run.done:
            if not step_or_error(run, "end", max_seconds=CHUNK_SECONDS):
                break
            frac, caption = progress(run_trace(run))
            bar.progress(frac, text=f"Running… {caption}. Press Stop to pause.")
        else:
            st.session_state["running"] = False
            st.rerun()  # draw the buttons and the views of the finished run
    trace = run_trace(run)
    frac, caption = progress(trace)
    bar.progress(1.0 if run.done else frac, text=caption)
    return trace


# ---------------------------------------------------------------- uploaded trace
def upload_section() -> dict | None:
    up = st.sidebar.file_uploader(
        "Trace file (JSON)", type=["json"], key="w_upload",
        help=f"A trace exported by this app or by `python -m medal generate --trace`; at "
             f"most {MAX_TRACE_BYTES // 2**20} MB. No model is needed to inspect it.")
    if up is None:
        st.info("Upload a trace in the sidebar to replay and inspect it without a model.")
        return None
    cached = st.session_state.get("uploaded")
    if cached and cached[0] == up.file_id:
        trace, error = cached[1], cached[2]
    else:
        trace, error = None, None
        if up.size > MAX_TRACE_BYTES:
            error = (f"{up.name} is {up.size / 2**20:.1f} MB; traces are limited to "
                     f"{MAX_TRACE_BYTES // 2**20} MB")
        else:
            try:
                trace = loads_trace(up.getvalue(), MAX_TRACE_BYTES)
            except TraceError as exc:
                error = str(exc)
        st.session_state["uploaded"] = (up.file_id, trace, error)
    if error:
        st.error(md(f"Cannot read {up.name}: {error}"))
        return None
    st.sidebar.success(md(f"Loaded {up.name}: {trace['run']['strategy']} on "
                          f"{trace['run']['model'].get('name')}"))
    return trace


# ---------------------------------------------------------------- issue 10b: examples
def _open_example(name: str) -> None:
    st.session_state["w_source"] = "Example"
    st.session_state["example_name"] = name


def example_buttons(container) -> None:
    """One click opens a shipped example trace (from any source)."""
    shipped = list_examples()
    if not shipped:
        return
    box = container.expander("Open an example run", expanded=True)
    for ex in shipped:
        box.button(ex.title, key=f"example-{ex.name}", help=ex.description,
                   on_click=_open_example, args=(ex.name,), width="stretch")


@st.cache_data(show_spinner=False, max_entries=8)
def _example_trace(name: str) -> dict:
    return load_example(next(e for e in list_examples() if e.name == name))


def example_section() -> dict | None:
    """The example chosen with :func:`example_buttons`, replayed like an uploaded trace."""
    shipped = {e.name: e for e in list_examples()}
    name = st.session_state.get("example_name")
    if name not in shipped:
        st.info("Pick an example run in the sidebar.")
        return None
    try:
        trace = _example_trace(name)
    except MedalError as exc:
        st.error(f"Cannot open the example {name}: {exc}")
        return None
    st.sidebar.success(f"Example: {shipped[name].title}")
    st.caption(shipped[name].description)
    return trace
# ---------------------------------------------------------------- end issue 10b: examples


# ---------------------------------------------------------------- views
def show_frame(html: str, height: int) -> None:
    if hasattr(st, "iframe"):
        st.iframe(html, height=height)
    else:  # Streamlit < 1.52
        import streamlit.components.v1 as components
        components.html(html, height=height, scrolling=False)


def phase_header(trace: dict | None) -> None:
    info = current_phase(trace)
    head = f"#### Phase: {info.title}"
    if info.iteration:
        head += f" · iteration {info.iteration}"
    st.markdown(head)
    if trace and trace.get("tree") and not (trace.get("decode") or trace.get("result")):
        st.html(phase_cycle_html(info.key))
    st.markdown(info.explanation)
    if info.detail:
        st.caption(md(info.detail))  # the run's own tokens and answer: text, not Markdown


def replay_control(trace: dict, source_id: str) -> dict:
    """For a finished or uploaded run: a slider back through the search iterations."""
    n_iter = iteration_count(trace)
    in_progress = st.session_state.get("w_source") == "Live run" and trace.get("result") is None
    if not n_iter or in_progress:
        return trace
    k = st.slider("Replay: the run as it stood after iteration", 0, n_iter, n_iter,
                  key=f"replay-{source_id}",
                  help="Step back through the search; the last position is the whole run.")
    return trace_at_iteration(trace, k)


def views(shown: dict, trace: dict, source_id: str) -> None:
    """The tabs, drawing ``shown`` (a replay position of ``trace``)."""
    tabs = st.tabs(["Tree", "Answer", "Candidates", "Entropy", "Unmasking order", "Inspector",
                    "Trace file"])
    with tabs[0]:
        tree_tab(shown)
    with tabs[1]:   # --- issue 10b: the view shaped like the task ---
        task_tab(shown)
    with tabs[2]:   # --- issue 10b: the candidate comparison ---
        candidates_tab(shown)
    with tabs[3]:
        # --- issue 10b: padding after the answer hidden unless asked for ---
        padding = st.toggle("Show the padding after the end of the answer", key="w_padding",
                            help="Slots after the first end-of-sequence token are padding; "
                                 "they are hidden by default.")
        st.plotly_chart(entropy_heatmap(shown, show_padding=padding),
                        config={"displaylogo": False}, key=f"heatmap-{source_id}")
        st.caption("Entropy of every masked slot before each step (blank: already unmasked); "
                   "the token in a cell is the one unmasked there. MEDAL's first rows are the "
                   "search's commitments along the winner's path (during the search: the "
                   "current path).")
    with tabs[4]:
        st.html(order_html(shown))
        st.dataframe(order_summary(shown), hide_index=True)
        st.caption("seconds: wall-clock time of the run, from its start to its answer -- "
                   "for a run stepped by hand it includes the pauses between steps; model "
                   "seconds: time inside the model's forward passes.")
    with tabs[5]:
        inspector_tab(shown)
    with tabs[6]:
        trace_tab(trace)


# ---------------------------------------------------------------- issue 10b: views
def task_tab(trace: dict) -> None:
    html = task_board.task_view_html(trace)
    if html is None:
        st.info("This task has no dedicated view: see the unmasking order.")
        return
    st.html(html)


def candidates_tab(trace: dict) -> None:
    rows = cand_view.candidate_rows(trace)
    if not rows:
        st.info("The candidate comparison appears once the search has chosen a candidate "
                "(MEDAL strategies only).")
        return
    tie = cand_view.near_tie(trace)
    if tie:
        st.warning(tie)
    wins = cand_view.winners_by(trace)
    st.dataframe([{"rule": k, "would pick": v} for k, v in wins.items()], hide_index=True)
    st.plotly_chart(cand_view.candidate_bars(trace), config={"displaylogo": False},
                    key="candidate-bars")
    st.dataframe([r.as_table_row() for r in rows], hide_index=True)
    st.caption("final answer: the candidate completed by phase C (the winner's is the run's "
               "answer; the losers' are completed after the run for display, their cost not "
               "counted); rollout: the one-shot completion the simulation scored. "
               f"A near tie is flagged when the runner-up's cumulative IG is within "
               f"{cand_view.NEAR_TIE:.0%} of the winner's.")
    if trace["search"].get("why"):
        with st.expander("Why the winner won (the engine's account)"):
            st.text(trace["search"]["why"])
# ---------------------------------------------------------------- end issue 10b: views


def tree_tab(trace: dict) -> None:
    if not trace.get("tree"):
        st.info(f"No search tree yet: the {md(trace['run']['strategy'])} strategy builds none, "
                "or its search has not started.")
        return
    cap = st.slider("Most nodes drawn", 10, 300, step=10, key="w_max_nodes",
                    help="Large trees keep the most visited nodes, their ancestors and "
                         "everything the current iteration touched.")
    view = tree_view(trace, cap)
    show_frame(tree_html(trace, cap, height=560, view=view), height=610)
    note = f"{view.total} nodes in the tree"
    if view.hidden:
        note += f"; {view.hidden} nodes hidden (showing {view.shown})"
    st.caption(note + ". Hover a node for N, W, Q, UCB and r_IG; scroll to zoom, drag to pan.")


def inspector_tab(trace: dict) -> None:
    ids = inspector.node_ids(trace)
    if not ids:
        st.info("No search tree to inspect for this strategy.")
        return
    win = (trace.get("search") or {}).get("winner")
    default = win if win in ids else ids[-1]
    # a new widget once the winner is known, so that it opens on the winner
    nid = st.selectbox("Node or candidate", ids, index=ids.index(default),
                       format_func=lambda i: inspector.node_label(trace, i),
                       key=f"inspect-{win}")
    st.markdown(f"**Node {nid}**: {inspector.node_badges(trace, nid)}")
    st.html(inspector.sequence_html(trace, nid))
    stats = inspector.node_stats(trace, nid)
    cols = st.columns(6)
    for col, key in zip(cols, ("N", "W", "Q", "UCB", "r_IG", "depth")):
        value = stats[key]
        col.metric(key, "—" if value is None else value if isinstance(value, int)
                   else f"{value:.4f}")
    left, right = st.columns(2)
    with left:
        ucb = inspector.ucb_breakdown(trace, nid)
        if ucb:
            bonus = ucb["bonus"]
            st.markdown(f"**UCB** at iteration {ucb['iteration']}: Q + c·√(ln N(parent)/N) = "
                        f"{ucb['Q']:.4f} + {ucb['c']}·√(ln {ucb['parent_N']} / {ucb['N']}) = "
                        + ("∞ (unvisited)" if bonus == float("inf")
                           else f"{ucb['ucb (recomputed)']:.4f}")
                        + (" — chosen" if ucb["chosen"] else ""))
    with right:
        r = inspector.reward_breakdown(trace, nid)
        if stats["reward"] is not None and stats["reward"] != stats["r_IG"]:
            st.markdown(f"**reward** = r_IG + verifier bonus = {stats['reward']:.4f} "
                        f"(completion verified: {stats['completion verified']}; "
                        "the ig+verifier reward goes beyond the paper)")
        if r:
            st.markdown(f"**r_IG** = ({r['parent entropy sum']:.3f} − "
                        f"{r['remaining entropy sum']:.3f}) / {r['parent entropy sum']:.3f} = "
                        f"{r['r_ig (recomputed)']:.4f} (recorded "
                        + ("—" if r["r_ig (recorded)"] is None else f"{r['r_ig (recorded)']:.4f}")
                        + ")")
    st.markdown("**Action set** (what expanding this node adds; s recomputed from p, H, margin "
                f"and γ = {trace['run']['config'].get('gamma')})")
    rows = inspector.action_table(trace, nid)
    if rows:
        number_table(rows)
    else:
        st.caption("Empty: this node is terminal (L_c slots committed, or nothing eligible).")
    report = inspector.candidate_report(trace)
    if report:
        st.markdown("**Candidate choice**")
        if report["why"]:
            st.info(md(report["why"]))
        number_table(report["rows"])


def number_table(rows: list[dict]) -> None:
    """A dataframe whose float columns keep 4 significant digits (scores are ~1e-4)."""
    floats = {k for r in rows for k, v in r.items() if isinstance(v, float)}
    st.dataframe(rows, hide_index=True, column_config={
        k: st.column_config.NumberColumn(k, format="%.4g") for k in floats})


def trace_tab(trace: dict) -> None:
    # Streamlit >= 1.52 writes the file only when the button is clicked: a large trace is
    # then not serialised and re-sent at every step of the run.
    data = (lambda: dumps(trace)) if DEFERRED_DOWNLOAD else dumps(trace)
    st.download_button("Download trace (JSON)", data, file_name="medal-trace.json",
                       mime="application/json", key="download_trace")
    # --- issue 10b: the same run as one self-contained web page ---
    page = (lambda: export_html(trace)) if DEFERRED_DOWNLOAD else None
    if trace.get("result") is not None and page is not None:
        st.download_button("Download as a web page (HTML)", page, file_name="medal-trace.html",
                           mime="text/html", key="download_html",
                           help="One HTML file with the tree, heatmap, order, candidates and "
                                "inspector, stepped phase by phase; it opens in any browser "
                                "with no server and no network (also: python -m medal export "
                                "trace.json out.html).")
    # --- end issue 10b ---
    nodes = len((trace.get("tree") or {}).get("nodes", []))
    st.caption(f"The whole run ({nodes} tree nodes, {len(trace.get('decode') or [])} decoding "
               "steps) as JSON. Upload it later (sidebar → Uploaded trace) to replay and "
               "inspect it without the model.")


# ---------------------------------------------------------------- page
_restore_widgets()
st.title("MEDAL Explorer")
st.caption("Monte Carlo tree search initialisation for diffusion language models, step by "
           "step. See *How MEDAL works* in the sidebar for the formulas.")
source = st.sidebar.radio("Source", ["Live run", "Uploaded trace", "Example"], key="w_source",
                          horizontal=True)
example_buttons(st.sidebar)   # --- issue 10b ---
if source == "Example":       # --- issue 10b ---
    trace = example_section()
    source_id = f"example-{st.session_state.get('example_name')}"
elif source == "Live run":
    settings = sidebar_settings()
    trace = live_section(settings)
    source_id = f"live-{st.session_state.get('run_id', 0)}"
else:
    trace = upload_section()
    source_id = f"upload-{(st.session_state.get('uploaded') or ('none',))[0]}"
if trace is not None:
    shown = replay_control(trace, source_id)
    phase_header(shown)
    if source == "Live run" and st.session_state.get("last_step_ms") is not None:
        st.caption(f"last step: {st.session_state['last_step_ms']:.0f} ms")
    views(shown, trace, source_id)
_save_widgets()
