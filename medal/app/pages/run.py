"""MEDAL Explorer -- the Run page: watch MEDAL think, step by step.

Layout only: the run is driven by ``medal.viz.controller``; every figure and HTML block is
built by ``medal.viz`` from the trace dict -- the same dict for a live run (``run.trace``)
and for an uploaded trace file. Both are stepped on one timeline (``medal.viz.timeline``):
every event is a position, and what the page shows is the trace as it stood there.

All state lives in ``st.session_state`` under plain keys (the run, the loaded trace, the
timeline cursor, a copy of every setting), so page switches and reruns keep it.
"""
from __future__ import annotations

import time

import streamlit as st
from packaging.version import Version

from medal import models, serving
from medal.engine import STRATEGIES
from medal.errors import MedalError, TraceError
from medal.tasks import TASKS
from medal.trace import dumps, loads_trace, size_text
from medal.viz import (current_phase, entropy_heatmap, order_html, order_summary,
                       phase_cycle_html, progress)
from medal.viz import components, inspector, timeline
from medal.viz.safe import md
# --- issue 10b views (candidates, task views, examples, export) ---
from medal.viz import board as task_board
from medal.viz import candidates as cand_view
from medal.viz.examples import list_examples, load_example
from medal.viz.export import export_html
# --- end issue 10b ---
from medal.viz.controller import (PARAMETERS, SPEEDS, OverBudget, advance, app_threads,
                                  create_run, download_name, k2_note, make_config,
                                  prompt_note, release)
from medal.viz.tree import component_data, tree_view

DEFAULT_MODEL = getattr(models, "DEFAULT_MODEL", "builtin:countdown")
DEVICES = tuple(getattr(models, "DEVICES", ("auto",)))
DTYPES = tuple(getattr(models, "DTYPE_CHOICES", ("auto",)))
DEFERRED_DOWNLOAD = Version(st.__version__) >= Version("1.52")
CHUNK_SECONDS = 0.5      # "Run to end" (jump) works in chunks; Stop is honoured between them
TABS = ["Tree", "Answer", "Candidates", "Entropy", "Unmasking order", "Inspector",
        "Trace file"]
END_MODES = ("animate", "jump")
MISSING = "—"            # how every table shows a missing value

# ---------------------------------------------------------------- state
# Streamlit forgets a page's widget values when the widget is not drawn (another page, the
# other source); every setting is copied into ``saved_widgets`` and restored from it.
WIDGET_DEFAULTS = {"w_model": DEFAULT_MODEL, "w_task": next(iter(TASKS)),
                   "w_device": "auto", "w_dtype": "auto",
                   "w_strategy": "medal", "w_source": "Live run", "w_max_nodes": 40,
                   "w_speed": 1.0, "w_end_mode": "jump", "w_presenter": False,
                   "w_tab": "Tree",
                   **{f"w_{p.name}": p.default for p in PARAMETERS}}
STATE = st.session_state


def _restore_widgets() -> None:
    saved = STATE.setdefault("saved_widgets", {})
    for key, default in WIDGET_DEFAULTS.items():
        if key not in STATE:
            STATE[key] = saved.get(key, default)
    for key in ("w_prompt", "w_example"):
        if key not in STATE and saved.get(key) is not None:
            STATE[key] = saved[key]


def _save_widgets() -> None:
    """Merge (never replace): the settings of the source not shown stay saved."""
    saved = STATE.setdefault("saved_widgets", {})
    for key in (*WIDGET_DEFAULTS, "w_prompt", "w_example"):
        if key in STATE:
            saved[key] = STATE[key]


# ---------------------------------------------------------------- model (operator's list)
# Which models a visitor may load and whether remote code may run are the server
# operator's settings (medal/serving.py: environment or flags at start), never a widget's.
SERVING = serving.current()
serving.keep_on_machine()


def cached_model(spec: str, options: tuple):
    """The model, loaded once for every session: in the server's own cache, which a
    visitor's ``clear_cache`` message does not reach (st.cache_resource's would)."""
    key = (spec, options)
    if key not in serving.MODEL_CACHE:
        with st.spinner("Loading the model…"):
            return serving.MODEL_CACHE.get(
                key, lambda: serving.load_allowed_model(SERVING, spec, dict(options)))
    return serving.MODEL_CACHE.get(key, lambda: None)


def load_model_or_error(spec: str, options: dict):
    """The model, or None after showing why it could not be loaded (one message for a
    model that is not on the list and one that fails: the page reveals no server files)."""
    try:
        return cached_model(serving.check_model(SERVING, spec), tuple(sorted(options.items())))
    except MedalError as exc:
        st.error(md(f"Could not load the model: {exc}"))
    return None


def model_settings(sb) -> tuple[str, dict]:
    """The sidebar's model section: a model from the operator's list, device and dtype;
    a read-only line says whether remote code is allowed."""
    sb.subheader("Model")
    allowed = SERVING.models
    if STATE.get("w_model") not in allowed:
        STATE["w_model"] = DEFAULT_MODEL if DEFAULT_MODEL in allowed else allowed[0]
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
    STATE["w_prompt"] = STATE["w_example"]


def _task_changed() -> None:
    """A new task: its first example prompt, and its built-in model if one was in use."""
    task = TASKS[STATE["w_task"]]
    first = task.format_prompt(task.example_problems[0])
    STATE["w_example"] = STATE["w_prompt"] = first
    if (STATE.get("w_model", "").strip().startswith("builtin:")
            and f"builtin:{task.name}" in SERVING.models):
        STATE["w_model"] = f"builtin:{task.name}"


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
    spec, options = model_settings(sb)
    sb.subheader("Task and prompt")
    task_name = sb.selectbox("Task", list(TASKS), key="w_task", on_change=_task_changed,
                             help="How a prompt is formatted and an answer verified.")
    task = TASKS[task_name]
    examples = [task.format_prompt(p) for p in task.example_problems]
    if STATE.get("w_example") not in examples:
        STATE["w_example"] = examples[0]
    sb.selectbox("Example prompts", examples, key="w_example", on_change=_use_example)
    if "w_prompt" not in STATE:
        STATE["w_prompt"] = examples[0]
    prompt = sb.text_area("Prompt", key="w_prompt", height=80,
                          help="Pick an example above or write your own.")
    note = prompt_note(task_name, prompt)
    if note:
        sb.warning(note)
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
    release(STATE.get("run"))   # the previous run's search, if any
    STATE["run"] = run
    STATE["budget"] = serving.run_budget(SERVING)
    STATE["run_settings"] = settings_key(settings)
    STATE["run_id"] = STATE.get("run_id", 0) + 1
    STATE["run_started_at"] = time.time()
    STATE["run_notes"] = [n for n in (k2_note(run.config, run.strategy),) if n]
    return run


def step_or_error(run, mode: str, **limits) -> bool:
    """Advance the run; on failure show why (no traceback) and stop running."""
    if getattr(run, "_released", False):   # stopped over budget: nothing left to run
        STATE["running"] = STATE["playing"] = False
        return False
    try:
        events = advance(run, mode, budget=STATE.get("budget"), **limits)
        STATE["events"] = STATE.get("events", 0) + len(events)
        return True
    except OverBudget as exc:  # stopped and released: the trace so far stays on view
        release(run)
        run._released = True
        STATE["running"] = STATE["playing"] = False
        STATE["events"] = STATE.get("events", 0) + 1
        STATE["run_notes"] = (STATE.get("run_notes") or []) + [
            f"The run was stopped: {exc}. Press Reset to start again."]
        st.error(md(f"The run was stopped: {exc}. Press Reset to start again."))
        return False
    except Exception as exc:  # the model or the engine failed mid-run
        STATE["running"] = STATE["playing"] = False
        STATE["events"] = STATE.get("events", 0) + 1  # trace moved
        detail = str(exc) if isinstance(exc, MedalError) else f"{type(exc).__name__}: {exc}"
        st.error(md(f"The run failed: {detail}. Press Reset to start again."))
        return False


def step_one_position(run) -> bool:
    """Advance the engine until the timeline has one more position (or the run ends)."""
    before = len(timeline.positions(run.trace))
    t0 = time.perf_counter()
    while not run.done and len(timeline.positions(run.trace)) <= before:
        if not step_or_error(run, "phase"):
            return False
    STATE["last_step_ms"] = (time.perf_counter() - t0) * 1000
    return True


def run_trace(run) -> dict:
    """``run.trace``, rebuilt only when the run has moved: clicking a tab or moving a
    slider reuses it."""
    key = (STATE.get("run_id"), STATE.get("events", 0))
    cached = STATE.get("trace_cache")
    if cached is not None and cached[0] == key:
        return cached[1]
    trace = run.trace
    STATE["trace_cache"] = (key, trace)
    return trace


# ---------------------------------------------------------------- timeline actions
def _request(action: str) -> None:
    """Buttons, keys and the play timer only ask; :func:`navigate` acts, in page order."""
    if action == "stop":
        STATE["running"] = STATE["playing"] = False
    elif action == "reset":
        release(STATE.get("run"))   # the search's memory goes now, not at the next run
        for key in ("run", "budget", "running", "run_settings", "last_step_ms", "pending", "events",
                    "trace_cache", "playing", "run_notes"):
            STATE.pop(key, None)
        STATE.get("cursor", {}).pop(f"live-{STATE.get('run_id', 0)}", None)
        STATE["inspect_node"] = None
    else:
        STATE["pending"] = action


def _on_nav() -> None:
    value = components.trigger("medal_nav", "nav")
    if isinstance(value, dict) and value.get("action"):
        _request(value["action"])


def _on_node() -> None:
    value = components.trigger("medal_tree", "node")
    if isinstance(value, int):
        STATE["inspect_node"] = value
        STATE["w_tab"] = "Inspector"


def _on_position() -> None:
    # the slider counts positions from 1, like the progress caption
    STATE.setdefault("cursor", {})[STATE["source_id"]] = STATE["w_position"] - 1
    STATE["playing"] = False


def navigate(action: str | None, live_run, trace: dict | None, source_id: str,
             settings: dict | None) -> dict | None:
    """Apply ``action`` to the timeline (stepping the live run when at its head); returns
    the (possibly grown) full trace."""
    if not action or (action == "tick" and not STATE.get("playing")):
        return trace              # a tick sent just before Pause does not step on
    cursors = STATE.setdefault("cursor", {})
    if live_run is None and settings is not None and action in (
            "phase", "next", "iteration", "end", "toggle", "tick", "last"):
        live_run = start_run(settings)
        if live_run is None:
            STATE["playing"] = False
            return None
        source_id = f"live-{STATE['run_id']}"
        STATE["source_id"] = source_id
        trace = run_trace(live_run)
    if trace is None:
        return trace
    pos = timeline.positions(trace)
    if not pos and live_run is not None and not live_run.done:
        # a run just started has no position yet; Play, End and an animated Run to end
        # show its start first (Next phase and Next iteration step it themselves)
        if action in ("toggle", "end", "last"):
            step_one_position(live_run)
            trace = run_trace(live_run)
            pos = timeline.positions(trace)
    last = len(pos) - 1
    cur = cursors.get(source_id)
    cur = last if cur is None else min(cur, last)
    at_head = cur >= last

    def go(index):
        cursors[source_id] = None if index is None or index >= last else max(0, index)

    if action in ("next", "phase", "tick"):
        if not at_head:
            go(cur + 1)
        elif live_run is not None and not live_run.done:
            step_one_position(live_run)
            go(None)
        elif action == "tick":
            STATE["playing"] = False
    elif action == "prev":
        go(cur - 1)
        STATE["playing"] = False
    elif action == "first":
        go(0)
        STATE["playing"] = False
    elif action == "last":
        go(None)
    elif action == "iteration":
        later = [i for i, p in enumerate(pos) if i > cur and p.kind in timeline.ITERATION_ENDS]
        if later:
            go(later[0])
        elif live_run is not None and not live_run.done:
            t0 = time.perf_counter()
            if step_or_error(live_run, "iteration"):
                STATE["last_step_ms"] = (time.perf_counter() - t0) * 1000
            go(None)
        else:
            go(None)
    elif action == "toggle":
        playing = not STATE.get("playing", False)
        if playing and at_head and (live_run is None or live_run.done):
            go(0)                        # play a finished timeline from its start
        STATE["playing"] = playing
    elif action == "end":
        if STATE.get("w_end_mode") == "animate":
            STATE["playing"] = True
        elif live_run is not None and not live_run.done:
            STATE["running"] = True
            go(None)
        else:
            go(None)
    return run_trace(live_run) if live_run is not None else trace


# ---------------------------------------------------------------- controls
def controls(live: bool, live_run, at_head: bool, at_start: bool, has_trace: bool) -> None:
    running = STATE.get("running", False)
    playing = STATE.get("playing", False)
    finished = not live or (live_run is not None and live_run.done)
    end_reached = has_trace and at_head and finished
    # one wrapping row of buttons as wide as their labels (fixed columns cut the labels
    # to "Next p…" on a 1024 px window)
    row = st.container(horizontal=True, gap="small", vertical_alignment="center",
                       key="controls")
    row.button("Previous", disabled=at_start or running or not has_trace,
               on_click=_request, args=("prev",), help="One position back (← key).")
    row.button("Next phase", disabled=end_reached or running, on_click=_request,
               args=("next",), type="primary",
               help="One position on (→ key): one MCTS phase (selection, expansion, "
                    "simulation, backpropagation), the candidate choice, or one "
                    "decoding step.")
    row.button("Next iteration", disabled=end_reached or running, on_click=_request,
               args=("iteration",),
               help="To the end of the next MCTS iteration (its backpropagation); past "
                    "the search, one step.")
    row.button("Pause" if playing else "Play", disabled=running or not (has_trace or live),
               on_click=_request, args=("toggle",),
               help="Step on by itself at the chosen speed (Space key).")
    row.button("Run to end", disabled=end_reached or running, on_click=_request,
               args=("end",),
               help="Animate to the end at the chosen speed, or jump there (sidebar: "
                    "Playback).")
    row.button("Start of run", disabled=at_start or running or not has_trace,
               on_click=_request, args=("first",),
               help="Back to the first position (Home key).")
    if live:
        row.button("Stop", disabled=not (running or playing), on_click=_request,
                   args=("stop",),
                   help="Pause a run to the end; step on or run on from where it "
                        "stopped.")
        row.button("Reset", on_click=_request, args=("reset",),
                   help="Discard this run; the next step starts a new one with the "
                        "current settings.")
        if at_head and STATE.get("last_step_ms") is not None:   # the live head only
            row.caption(f"last step: {STATE['last_step_ms']:.0f} ms", width="content")


def playback_settings() -> None:
    with st.sidebar.expander("Playback", expanded=False):
        st.select_slider("Speed (seconds per position)", SPEEDS, key="w_speed",
                         help="For Play and for an animated Run to end.")
        st.radio("Run to end", END_MODES, key="w_end_mode", horizontal=True,
                 format_func=lambda m: {"animate": "animate", "jump": "jump"}[m],
                 help="animate: step to the end at the chosen speed; jump: straight to the "
                      "end.")


def compact_style() -> None:
    """Less blank space above the page, so the tree starts on the first screen (1440x900:
    its box begins about half-way down; 1024x768: before the last third)."""
    st.html("""<style>
      .stMainBlockContainer, [data-testid="stMainBlockContainer"] {
        padding-top: 2.25rem !important; padding-bottom: 2rem !important; }
      [data-testid="stMainBlockContainer"] [data-testid="stVerticalBlock"] { gap: 0.5rem; }
      [data-testid="stMainBlockContainer"] h4 { padding: 0.25rem 0 !important; }
      .st-key-controls { gap: 0.4rem !important; }
      .st-key-controls button { padding: 0.2rem 0.55rem; min-height: 2.2rem; }
      .st-key-controls button p { font-size: 0.92rem; }
    </style>""")


def presenter_style() -> None:
    """Presenter mode: large type, the sidebar hidden, keyboard stepping."""
    st.html("""<style>
      section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"],
      [data-testid="stExpandSidebarButton"] { display: none !important; }
      .stMainBlockContainer, [data-testid="stMainBlockContainer"] {
        max-width: 100% !important; padding-left: 1.5rem; padding-right: 1.5rem; }
      [data-testid="stMarkdownContainer"] p, [data-testid="stMarkdownContainer"] li,
      [data-testid="stCaptionContainer"] { font-size: 1.35rem !important; }
      [data-testid="stMarkdownContainer"] h4 { font-size: 2.1rem !important; }
      button p { font-size: 1.15rem !important; }
    </style>""")


# ---------------------------------------------------------------- uploaded trace
def upload_section() -> dict | None:
    up = st.sidebar.file_uploader(
        "Trace file (JSON)", type=["json"], key="w_upload",
        help=f"A trace exported by this app or by `python -m medal generate --trace`; at "
             f"most {SERVING.max_trace_bytes:,} bytes. No model is needed to inspect it.",
        max_upload_size=serving.upload_mb(SERVING.max_trace_bytes))
    cached = STATE.get("uploaded")
    if up is not None and not (cached and cached[0] == up.file_id):
        trace, error = None, None
        if up.size > SERVING.max_trace_bytes:
            error = f"the trace is {size_text(up.size, SERVING.max_trace_bytes)}"
        else:
            try:
                trace = loads_trace(up.getvalue(), SERVING.max_trace_bytes)
            except TraceError as exc:
                error = str(exc)
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


# ---------------------------------------------------------------- issue 10b: examples
def _open_example(name: str) -> None:
    STATE["w_source"] = "Example"
    STATE["example_name"] = name
    STATE["inspect_node"] = None


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
    name = STATE.get("example_name")
    if name not in shipped:
        st.info("Pick an example run in the sidebar.")
        return None
    try:
        trace = _example_trace(name)
    except MedalError as exc:
        st.error(md(f"Cannot open the example {name}: {exc}"))
        return None
    st.sidebar.success(f"Example: {shipped[name].title}")
    st.sidebar.caption(shipped[name].description)
    return trace
# ---------------------------------------------------------------- end issue 10b: examples


def run_parameters(trace: dict) -> None:
    """The prompt and parameters a trace was made with (shown as text: they come from the
    trace, which may be anyone's upload), in the sidebar: out of the way of the tree."""
    run = trace.get("run") or {}
    with st.sidebar.expander("Prompt and parameters of this run", expanded=False):
        st.text(f"Strategy: {run.get('strategy')} · model: "
                f"{(run.get('model') or {}).get('name')}")
        st.text("Prompt:")
        st.code(run.get("prompt") or "", language=None)
        if run.get("model_prompt") and run.get("model_prompt") != run.get("prompt"):
            st.text("Prompt as given to the model (with the decomposition guidance):")
            st.code(run["model_prompt"], language=None)
        table([{"parameter": k, "value": "" if v is None else str(v)}
               for k, v in (run.get("config") or {}).items()])


# ---------------------------------------------------------------- views
def phase_header(trace: dict | None, index: int, n_positions: int) -> None:
    info = current_phase(trace)
    head = f"#### Phase: {info.title}"
    if info.iteration:
        head += f" · iteration {info.iteration}"
    if trace and trace.get("tree") and not (trace.get("decode") or trace.get("result")):
        # the header and the four-phase cycle on one line; on a narrow window the cycle
        # wraps below the header (neither is squeezed into a column)
        row = st.container(horizontal=True, vertical_alignment="center", gap="medium")
        row.markdown(head, width="content")
        row.html(phase_cycle_html(info.key), width="content")
    else:
        st.markdown(head)
    st.markdown(info.explanation)
    if info.detail:
        st.caption(md(info.detail))  # the run's own tokens and answer: text, not Markdown


def timeline_slider(index: int, n_positions: int, source_id: str) -> None:
    if n_positions < 2:
        return
    STATE["w_position"] = index + 1
    st.slider("Timeline: position", 1, n_positions, key="w_position",
              on_change=_on_position, label_visibility="collapsed",
              help="Every event of the run is a position: drag, or use ← → (Space plays).")


def views(shown: dict, trace: dict, source_id: str, new: list[int], sim: list[int]) -> None:
    """The tabs, drawing ``shown`` (the timeline's position in ``trace``)."""
    tabs = st.tabs(TABS, key="w_tab", on_change="rerun")
    nid = selected_node(shown)

    def tab(name: str):
        """The tab ``name`` if it is the one shown, else None: only the selected tab's
        content is built and sent (a step redraws the tree without rebuilding the
        candidate bars, the heatmap and the inspector behind it). Where Streamlit does
        not track the selection (``open`` is None) every tab is built."""
        t = tabs[TABS.index(name)]
        return t if t.open is not False else None

    if t := tab("Tree"):
        with t:
            tree_tab(shown, source_id, new, sim, nid)
    if t := tab("Answer"):   # --- issue 10b: the view shaped like the task ---
        with t:
            task_tab(shown)
    if t := tab("Candidates"):   # --- issue 10b: the candidate comparison ---
        with t:
            candidates_tab(shown)
    if t := tab("Entropy"):
        with t:
            entropy_tab(shown, source_id, nid)
    if t := tab("Unmasking order"):
        with t:
            order_tab(shown, nid)
    if t := tab("Inspector"):
        with t:
            inspector_tab(shown, nid)
    if t := tab("Trace file"):
        with t:
            trace_tab(trace)


def entropy_tab(shown: dict, source_id: str, nid: int | None) -> None:
    # --- issue 10b: padding after the answer hidden unless asked for ---
    # drawn only while a run is shown, so its value is kept outside the widget
    STATE["w_padding"] = STATE.get("pref_padding", False)
    padding = st.toggle("Show the padding after the end of the answer", key="w_padding",
                        on_change=lambda: STATE.update(pref_padding=STATE["w_padding"]),
                        help="Slots after the first end-of-sequence token are padding; "
                             "they are hidden by default.")
    figure = inspector.outline_slots(entropy_heatmap(shown, show_padding=padding),
                                     highlight_slots(shown, nid))
    st.plotly_chart(figure, config={"displaylogo": False}, key=f"heatmap-{source_id}")
    st.caption("Entropy of every masked slot before each step (blank: already unmasked); "
               "the token in a cell is the one unmasked there. MEDAL's first rows are the "
               "search's commitments along the winner's path (during the search: the "
               "current path). Outlined columns: the slots committed by the node open in "
               "the inspector.")


def order_tab(shown: dict, nid: int | None) -> None:
    st.html(order_html(shown, highlight=highlight_slots(shown, nid)))
    table(order_summary(shown))
    st.caption("seconds: wall-clock time of the run, from its start to its answer -- "
               "for a run stepped by hand it includes the pauses between steps; model "
               "seconds: time inside the model's forward passes.")


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
        st.warning(md(tie))
    wins = cand_view.winners_by(trace)
    table([{"rule": k, "would pick": v} for k, v in wins.items()])
    st.plotly_chart(cand_view.candidate_bars(trace), config={"displaylogo": False},
                    key="candidate-bars")
    table([r.as_table_row() for r in rows])
    st.caption("final answer: the candidate completed by phase C (the winner's is the run's "
               "answer; the losers' are completed after the run for display, their cost not "
               "counted); rollout: the one-shot completion the simulation scored. "
               f"A near tie is flagged when the runner-up's cumulative IG is within "
               f"{cand_view.NEAR_TIE:.0%} of the winner's.")
    if trace["search"].get("why"):
        with st.expander("Why the winner won (the engine's account)"):
            st.text(trace["search"]["why"])
# ---------------------------------------------------------------- end issue 10b: views


def selected_node(trace: dict) -> int | None:
    """The node open in the inspector: the one clicked (if it exists at this position),
    else the winner, else the newest node."""
    ids = inspector.node_ids(trace)
    if not ids:
        return None
    clicked = STATE.get("inspect_node")
    if clicked in ids:
        return clicked
    win = (trace.get("search") or {}).get("winner")
    return win if win in ids else ids[-1]


def highlight_slots(trace: dict, nid: int | None) -> list[int]:
    return inspector.committed_slots(trace, nid) if nid is not None else []


def tree_tab(trace: dict, source_id: str, new: list[int], sim: list[int],
             nid: int | None) -> None:
    if not trace.get("tree"):
        st.info(f"No search tree yet: the {md(trace['run']['strategy'])} strategy builds none, "
                "or its search has not started.")
        return
    drawing = st.container()     # the tree first, its node cap below it (read first)
    left, right = st.columns([1, 2], vertical_alignment="center")
    cap = left.slider("Most nodes drawn", 10, 300, step=10, key="w_max_nodes",
                      help="Large trees keep the most visited nodes, their ancestors and "
                           "everything the current iteration touched.")
    view = tree_view(trace, cap, new=new, rewards_shown=sim, selected=nid)
    STATE["tree_seq"] = STATE.get("tree_seq", 0) + 1
    data = component_data(trace, view, height=540 if not STATE.get("w_presenter") else 600,
                          view_id=source_id, seq=STATE["tree_seq"])
    with drawing:
        components.tree(data, key="medal_tree", on_node=_on_node)
    note = f"{view.total} nodes in the tree"
    if view.hidden:
        note += f"; {view.hidden} hidden (showing {view.shown})"
    right.caption(note + ". Click a node to open it in the inspector; hover for N, W, Q, "
                         "UCB and r_IG; scroll to zoom, drag to pan (kept while you step).")


def inspector_tab(trace: dict, nid: int | None) -> None:
    ids = inspector.node_ids(trace)
    if not ids:
        st.info("No search tree to inspect for this strategy.")
        return
    STATE["w_inspect"] = nid

    def chose() -> None:
        STATE["inspect_node"] = STATE["w_inspect"]

    st.selectbox("Node or candidate (or click a node in the tree)", ids, key="w_inspect",
                 format_func=lambda i: inspector.node_label(trace, i), on_change=chose)
    st.markdown(f"**Node {nid}**: {inspector.node_badges(trace, nid)}")
    st.html(inspector.sequence_html(trace, nid))
    st.html(order_html(trace, highlight=highlight_slots(trace, nid)))
    card = inspector.ucb_breakdown(trace, nid)
    stats = inspector.node_stats(trace, nid)
    cols = st.columns(6)
    shown = {"N": stats["N"], "W": stats["W"], "Q": stats["Q"],
             "UCB": card["ucb"] if card else None, "r_IG": stats["r_IG"],
             "depth": stats["depth"]}
    for col, (key, value) in zip(cols, shown.items()):
        col.metric(key, MISSING if value is None else "∞" if value == float("inf")
                   else value if isinstance(value, int) else f"{value:.4f}")
    left, right = st.columns(2)
    with left:
        if card:
            st.markdown("**UCB** " + inspector.ucb_text(card))
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
                        + (MISSING if r["r_ig (recorded)"] is None
                           else f"{r['r_ig (recorded)']:.4f}") + ")")
    st.markdown("**Action set** (what expanding this node adds; s recomputed from p, H, margin "
                f"and γ = {trace['run']['config'].get('gamma')})")
    rows = inspector.action_table(trace, nid)
    if rows:
        table(rows)
    else:
        st.caption("Empty: this node is terminal (L_c slots committed, or nothing eligible).")
    report = inspector.candidate_report(trace)
    if report:
        st.markdown("**Candidate choice**")
        if report["why"]:
            st.info(md(report["why"]))
        table(report["rows"])


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
    st.download_button("Download trace (JSON)", data, file_name=download_name(trace, when),
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
def main() -> None:
    _restore_widgets()
    presenter = st.sidebar.toggle("Presenter mode", key="w_presenter",
                                  help="Large type, no sidebar; step with ← → and Space.")
    compact_style()
    if presenter:
        presenter_style()
        st.button("Leave presenter mode", on_click=lambda: STATE.update(w_presenter=False))
    else:
        # one line, not a page-wide title: the tree has to start on the first screen
        st.caption("**MEDAL Explorer** · MCTS-initialised decoding of diffusion language "
                   "models, step by step")
    source = st.sidebar.radio("Source", ["Live run", "Uploaded trace", "Example"],
                              key="w_source", horizontal=True)
    example_buttons(st.sidebar)   # --- issue 10b ---
    playback_settings()
    live = source == "Live run"
    action = STATE.pop("pending", None)
    run = None
    settings = None
    if live:
        settings = sidebar_settings()
        run = STATE.get("run")
        trace = run_trace(run) if run is not None else None
        source_id = f"live-{STATE.get('run_id', 0)}"
    elif source == "Example":   # --- issue 10b ---
        trace = example_section()
        source_id = f"example-{STATE.get('example_name')}"
    else:
        trace = upload_section()
        source_id = f"upload-{(STATE.get('uploaded') or ('none',))[0]}"
    STATE["source_id"] = source_id
    if live or trace is not None:
        trace = navigate(action, run, trace, source_id, settings if live else None)
    run = STATE.get("run") if live else None
    source_id = STATE["source_id"]
    if live and run is not None and STATE.get("run_settings") != settings_key(settings):
        st.info("The settings changed since this run started: press Reset to run with them.")
    for note in (STATE.get("run_notes") or []) if live and run is not None else []:
        st.warning(note)
    n_pos = len(timeline.positions(trace))
    index = timeline.clamp(trace, STATE.get("cursor", {}).get(source_id))
    controls(live, run, at_head=index >= n_pos - 1, at_start=index <= 0,
             has_trace=trace is not None)
    bar = st.empty()
    if trace is None:
        if live:
            st.info("Press **Next phase**, **Next iteration** or **Run to end** to start a "
                    "run with the settings in the sidebar.")
        components.navigator(playing=False, delay_ms=1000, seq=0, enabled=True,
                             key="medal_nav", on_nav=_on_nav)
        _save_widgets()
        return
    if live and run is not None and STATE.get("running"):
        # "Run to end" (jump) in chunks: a click on Stop (or any widget) interrupts the
        # page between two chunks; the run resumes on the next page run unless stopped.
        while not run.done:
            if not step_or_error(run, "end", max_seconds=CHUNK_SECONDS):
                break
            frac, caption = progress(run_trace(run))
            bar.progress(frac, text=f"Running… {caption}. Press Stop to pause.")
        else:
            STATE["running"] = False
            st.rerun()
    shown = timeline.trace_at(trace, index)
    at_head = index >= n_pos - 1
    frac, caption = progress(shown)
    if at_head and (not live or (run is not None and run.done)):
        frac = 1.0
    bar.progress(frac, text=f"{caption} · position {index + 1} of {n_pos}")
    timeline_slider(index, n_pos, source_id)
    phase_header(shown, index, n_pos)
    if not live or (run is not None and run.done):
        run_parameters(trace)
    pos = timeline.positions(trace)[index]
    new = timeline.nodes_new_at(trace, index)
    sim = new if pos.kind == "simulation" else []
    views(shown, trace, source_id, new, sim)
    playing = STATE.get("playing", False)
    components.navigator(playing=playing, delay_ms=int(1000 * float(STATE.get("w_speed", 1))),
                         seq=STATE.get("tree_seq", 0) * 1000 + index, enabled=True,
                         key="medal_nav", on_nav=_on_nav)
    _save_widgets()


main()
