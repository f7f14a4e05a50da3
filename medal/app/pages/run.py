"""MEDAL Explorer -- the Run page: watch MEDAL think, step by step.

Layout only: the run is driven by ``medal.viz.controller``; every figure and HTML block is
built by ``medal.viz`` from the trace dict -- the same dict for a live run (``run.trace``)
and for an uploaded trace file. Both are stepped on one timeline (``medal.timeline``):
every event is a position, and what the page shows is the trace as it stood there.

All state lives in ``st.session_state`` under plain keys (the run, the loaded trace, the
timeline cursor, a copy of every setting), so page switches and reruns keep it.
"""
from __future__ import annotations

import contextlib
import threading
import time

import streamlit as st
from packaging.version import Version

from medal import models, serving
from medal.engine import STRATEGIES
from medal.errors import MedalError, TraceError
from medal.tasks import TASKS
from medal.trace import dumps, loads_trace, size_text
from medal.viz import progress
from medal import timeline
from medal.viz import components
from medal.viz.safe import md
# --- issue 10b views (candidates, task views, examples, export) ---
from medal.viz.examples import list_examples, load_example
from medal.viz.export import export_html
# --- end issue 10b ---
from medal.viz.controller import (PARAMETERS, OverBudget, advance, app_threads, create_run,
                                  release,
                                  download_name, k2_note, make_config, prompt_note)
from medal.viewer import Frames, example_frames, warm_examples
from medal.app import compare_view   # issue 19: Compare view, What if…

DEFAULT_MODEL = getattr(models, "DEFAULT_MODEL", "builtin:countdown")
DEVICES = tuple(getattr(models, "DEVICES", ("auto",)))
DTYPES = tuple(getattr(models, "DTYPE_CHOICES", ("auto",)))
DEFERRED_DOWNLOAD = Version(st.__version__) >= Version("1.52")
CHUNK_SECONDS = 0.5      # "Run to end" (jump) works in chunks; Stop is honoured between them
MISSING = "—"            # how every table shows a missing value

# ---------------------------------------------------------------- state
# Streamlit forgets a page's widget values when the widget is not drawn (another page, the
# other source); every setting is copied into ``saved_widgets`` and restored from it.
WIDGET_DEFAULTS = {"w_model": DEFAULT_MODEL, "w_task": next(iter(TASKS)),
                   "w_device": "auto", "w_dtype": "auto",
                   "w_strategy": "medal", "w_source": "Live run",
                   **{f"w_{p.name}": p.default for p in PARAMETERS}}
STATE = st.session_state


def K(name: str) -> str:
    """The widget key of setting ``name`` in this generation of the sidebar.

    A browser that comes back to the settings after they were not drawn (another source,
    another page) kept stale widget states for the old keys and showed every number at its
    minimum (K1=1, c=0, an empty prompt...), and a run used them (issue 18 #1). So each
    time the settings reappear they get fresh keys, their values from ``saved_widgets``.

    Every setting's widget is also given its value as its default (``value=``/``index=``):
    a value written into the session state reaches the browser once, with the first run
    that draws the widget under its key; a later run sends only the widget's default. When
    another run followed at once (the viewer asks for its data as it mounts) the browser
    could build the widget from the later run and show the default -- a number input's
    minimum: "N subtasks" came back as 1 after Uploaded trace -> Benchmark -> Live run
    (issue 18) -- and then send that back. With the value as the default, every run's
    widget carries it."""
    if name == "w_source":
        return name
    gen = STATE.get("settings_gen", 0)
    return name if gen == 0 else f"{name}~{gen}"


def _new_generation_if_away() -> None:
    """A new key generation when the settings were not drawn in the Run page's previous
    run, or another page ran since (``medal.app.left_run_page``)."""
    runs = STATE.get("run_page_runs", 0)
    drawn = STATE.get("settings_drawn_at")
    away = STATE.pop("away_from_run_page", False)
    if drawn is not None and (away or drawn != runs - 1):
        STATE["settings_gen"] = STATE.get("settings_gen", 0) + 1


def _restore_widgets() -> None:
    saved = STATE.setdefault("saved_widgets", {})
    for key, default in WIDGET_DEFAULTS.items():
        if K(key) not in STATE:
            STATE[K(key)] = saved.get(key, default)
    for key in ("w_prompt", "w_example"):
        if K(key) not in STATE and saved.get(key) is not None:
            STATE[K(key)] = saved[key]


def _index(options, name: str) -> int:
    """The position of setting ``name``'s value among ``options`` (0 when absent)."""
    options = list(options)
    value = STATE.get(K(name))
    return options.index(value) if value in options else 0


def _save_widgets() -> None:
    """Merge (never replace): the settings of the source not shown stay saved."""
    saved = STATE.setdefault("saved_widgets", {})
    for key in (*WIDGET_DEFAULTS, "w_prompt", "w_example"):
        if K(key) in STATE:
            saved[key] = STATE[K(key)]


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
    if STATE.get(K("w_model")) not in allowed:
        STATE[K("w_model")] = DEFAULT_MODEL if DEFAULT_MODEL in allowed else allowed[0]
    spec = sb.selectbox("Model", allowed, key=K("w_model"), index=_index(allowed, "w_model"),
                        help="The models this server offers: the built-in tiny models (CPU) "
                             "and any the operator added (MEDAL_MODELS).")
    sb.caption(SERVING.remote_code_line())
    with sb.expander("Loading options (transformers models)"):
        device = st.selectbox("Device", DEVICES, key=K("w_device"),
                              index=_index(DEVICES, "w_device"),
                              help="auto: CUDA if present, else CPU.")
        dtype = st.selectbox("Weights dtype", DTYPES, key=K("w_dtype"),
                             index=_index(DTYPES, "w_dtype"),
                             help="auto: bfloat16 on a GPU, float32 on the CPU.")
    return spec, serving.load_options(SERVING, device, dtype)


# ---------------------------------------------------------------- sidebar: settings
def _use_example() -> None:
    STATE[K("w_prompt")] = STATE[K("w_example")]


def _task_changed() -> None:
    """A new task: its first example prompt, and its built-in model if one was in use."""
    task = TASKS[STATE[K("w_task")]]
    first = task.format_prompt(task.example_problems[0])
    STATE[K("w_example")] = STATE[K("w_prompt")] = first
    if (STATE.get(K("w_model"), "").strip().startswith("builtin:")
            and f"builtin:{task.name}" in SERVING.models):
        STATE[K("w_model")] = f"builtin:{task.name}"


def _number_widget(p, container):
    """The widget of parameter ``p``, its current value as its default (see :func:`K`)."""
    name = f"w_{p.name}"
    key, value = K(name), STATE.get(K(name), p.default)
    if p.kind == "bool":
        return container.checkbox(p.label, value=bool(value), key=key, help=p.help)
    if p.kind == "optional_bool":
        options = (None, True, False)
        return container.selectbox(p.label, options, index=_index(options, name), key=key,
                                   help=p.help,
                                   format_func=lambda v: {None: "default", True: "on",
                                                          False: "off"}[v])
    if p.kind == "choice":
        return container.selectbox(p.label, p.choices, index=_index(p.choices, name),
                                   key=key, help=p.help)
    if p.kind == "float":
        return container.number_input(p.label, min_value=p.min_value, step=p.step or 0.1,
                                      value=None if value is None else float(value),
                                      key=key, help=p.help, format="%.3f")
    low = None if p.min_value is None else int(p.min_value)
    return container.number_input(p.label, min_value=low, step=1, key=key, help=p.help,
                                  value=None if value is None else int(value),
                                  placeholder="default" if p.kind == "optional_int" else None)


def sidebar_settings() -> dict:
    sb = st.sidebar
    spec, options = model_settings(sb)
    sb.subheader("Task and prompt")
    task_name = sb.selectbox("Task", list(TASKS), key=K("w_task"), on_change=_task_changed,
                             index=_index(TASKS, "w_task"),
                             help="How a prompt is formatted and an answer verified.")
    task = TASKS[task_name]
    examples = [task.format_prompt(p) for p in task.example_problems]
    if STATE.get(K("w_example")) not in examples:
        STATE[K("w_example")] = examples[0]
    sb.selectbox("Example prompts", examples, key=K("w_example"), on_change=_use_example,
                 index=_index(examples, "w_example"))
    if K("w_prompt") not in STATE:
        STATE[K("w_prompt")] = examples[0]
    prompt = sb.text_area("Prompt", key=K("w_prompt"), height=80, value=STATE[K("w_prompt")],
                          help="Pick an example above or write your own.")
    note = prompt_note(task_name, prompt)
    if note:
        sb.warning(note)
    strategy = sb.selectbox("Strategy", list(STRATEGIES), key=K("w_strategy"),
                            index=_index(STRATEGIES, "w_strategy"),
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
    run.observers.append(_Moves())
    run._medal_lock = threading.Lock()
    STATE["run"] = run
    STATE["budget"] = serving.run_budget(SERVING)
    STATE["run_settings"] = settings_key(settings)
    STATE["run_id"] = STATE.get("run_id", 0) + 1
    STATE["run_started_at"] = time.time()
    STATE["run_notes"] = [n for n in (k2_note(run.config, run.strategy),) if n]
    return run


class _Moves:
    """An engine observer on a live run: how many events the engine has made. The Run
    page's caches of the trace and of the viewer's frames are keyed on it, not only on the
    page's own count (``STATE["events"]``): Stop -- any rerun -- makes Streamlit start a new
    script run at once (fastReruns) while the old one finishes its engine step, and the old
    one is stopped before it counts that step. The frames then stayed behind the trace for
    good: a step request found the positions it asked for already made, stepped nothing and
    sent no new frame, and the viewer asked again and again (issue 18: Next phase after
    Stop did not step on)."""

    def __init__(self):
        self.n = 0

    def __call__(self, event) -> None:
        self.n += 1


def engine_lock(run):
    """The lock a script run holds while it steps ``run``'s engine: a script run that Stop
    (or any rerun) replaced may still be inside an engine step; the new one waits for it
    before it steps the run or reads its trace, so two threads never step one run."""
    return getattr(run, "_medal_lock", None) or contextlib.nullcontext()


def moved(run) -> tuple:
    """A stamp that changes whenever ``run`` has moved (see :class:`_Moves`)."""
    counter = next((o for o in getattr(run, "observers", ()) if isinstance(o, _Moves)), None)
    return (STATE.get("events", 0), counter.n if counter is not None else None)


def step_or_error(run, mode: str, **limits) -> bool:
    """Advance the run within its budget; on failure show why (no traceback) and stop."""
    if getattr(run, "_released", False):   # stopped over budget: nothing left to run
        STATE["running"] = STATE["playing"] = False
        return False
    try:
        budget = STATE.get("budget")
        with engine_lock(run):
            events = advance(run, mode, budget=budget, **limits)
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


# ---------------------------------------------------------------- the viewer's requests
# The viewer (medal/viewer, one component) steps every computed position in the browser;
# it asks the server only to grow a live run. A request names how far: a number of
# positions (Next phase, Play, keys), one iteration, or the end; presses that arrive while
# the server is busy are folded into the next request, so none is lost.
def _on_request() -> None:
    value = components.trigger("medal_viewer", "request")
    if isinstance(value, dict) and value.get("op"):
        STATE["pending_request"] = value


def _on_need() -> None:
    _sender().need(components.trigger("medal_viewer", "need"))


def _sender() -> components.Sender:
    return components.session_sender()


def _reset_run() -> None:
    release(STATE.get("run"))   # the search's memory goes now, not at the next run
    for key in ("run", "budget", "running", "run_settings", "last_step_ms", "events", "trace_cache",
                "run_notes", "live_frames"):
        STATE.pop(key, None)


def handle_request(req: dict | None, settings: dict | None):
    """Carry out the viewer's request on the live run (starting one if none exists)."""
    if not req or not isinstance(req, dict):
        return    # (a visitor's browser can send anything: what is not a request is ignored)
    op = req.get("op")
    if op not in ("stop", "reset", "step", "iteration", "end"):
        return
    if op == "stop":
        STATE["running"] = False
        return
    if op == "reset":
        _reset_run()
        return
    run = STATE.get("run")
    if run is None:
        if settings is None:
            return
        run = start_run(settings)
        if run is None:
            return
    if op == "step":
        from medal.viz.components import visitor_int
        want = visitor_int(req.get("want"), default=1, low=1, high=10 ** 6)
        t0 = time.perf_counter()
        while not run.done and len(timeline.positions(run_trace(run))) < want:
            if not step_one_position(run):
                break
        STATE["last_step_ms"] = (time.perf_counter() - t0) * 1000
    elif op == "iteration":
        t0 = time.perf_counter()
        if step_or_error(run, "iteration"):
            STATE["last_step_ms"] = (time.perf_counter() - t0) * 1000
    elif op == "end":
        STATE["running"] = True


def step_one_position(run) -> bool:
    """Advance the engine until the timeline has one more position (or the run ends)."""
    before = len(timeline.positions(run_trace(run)))
    while not run.done and len(timeline.positions(run_trace(run))) <= before:
        if not step_or_error(run, "phase"):
            return False
    return True


def run_trace(run) -> dict:
    """``run.trace``, rebuilt only when the run has moved."""
    key = (STATE.get("run_id"), moved(run))
    cached = STATE.get("trace_cache")
    if cached is not None and cached[0] == key:
        return cached[1]
    trace = run.trace
    STATE["trace_cache"] = (key, trace)
    return trace


def compact_style() -> None:
    """Less blank space above the page, so the viewer starts on the first screen."""
    st.html("""<style>
      .stMainBlockContainer, [data-testid="stMainBlockContainer"] {
        padding-top: 2.25rem !important; padding-bottom: 2rem !important; }
      [data-testid="stMainBlockContainer"] [data-testid="stVerticalBlock"] { gap: 0.5rem; }
    </style>""")


# ---------------------------------------------------------------- uploaded trace
def upload_section() -> dict | None:
    up = st.sidebar.file_uploader(
        "Trace file (JSON)", type=["json"], key="w_upload",
        help=f"A trace exported by this app or by `medal generate --trace`; at "
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


# ---------------------------------------------------------------- page
def live_frames(run, trace: dict) -> Frames:
    """The live run's frames, extended as the engine makes new positions."""
    key = f"live-{STATE.get('run_id', 0)}"
    frames = STATE.get("live_frames")
    if frames is None or frames.key != key:
        frames = STATE["live_frames"] = Frames(key)
    stamp = (moved(run), run.done)
    if STATE.get("live_frames_stamp") != (key, stamp):
        frames.update(trace, final=run.done)
        STATE["live_frames_stamp"] = (key, stamp)
    return frames


def replay_frames(key: str, _trace: dict) -> Frames:
    """An upload's frames, computed once per server process: in the server's own cache
    (serving.FRAMES_CACHE), which a visitor's ``clear_cache`` message does not reach."""
    def make():
        frames = Frames(key)
        frames.update(_trace)
        return frames
    return serving.FRAMES_CACHE.get(key, make)


def landing(live: bool) -> None:
    st.info("**Start here:** open an example run in the sidebar (*Open an example run*: "
            "\"Countdown: MEDAL fixes greedy's answer\" is a good first one) and step through "
            "it with **Next phase** or the → key. Or press **Next phase** below to start a "
            "live run with the settings in the sidebar.")


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
        data = _sender().data(frames, live=True, done=run.done, ack=ack)
    components.viewer(data, key="medal_viewer", on_request=_on_request, on_need=_on_need,
                      sender=_sender())
    compare_view.whatif_form(trace, "live", "the live run")
    if run is not None and STATE.get("last_step_ms") is not None:
        st.caption(f"last step on the server: {STATE['last_step_ms']:.0f} ms")
    if trace is not None:
        trace_files(trace)


def main() -> None:
    warm_examples()
    land()
    STATE["run_page_runs"] = STATE.get("run_page_runs", 0) + 1
    _restore_widgets()
    compact_style()
    st.caption("**MEDAL Explorer** · MCTS-initialised decoding of diffusion language "
               "models, step by step")
    sources = ["Live run", "Uploaded trace", "Example", "Compare"]
    source = st.sidebar.radio("Source", sources, key="w_source", horizontal=True,
                              index=_index(sources, "w_source"))
    if STATE.get("landing_note"):
        st.warning(md(STATE.pop("landing_note")))   # as text: it echoes the page's URL
    if source != "Example":
        STATE.pop("landing_example", None)
    example_buttons(st.sidebar)
    if source == "Compare":     # issue 19: two runs side by side on one timeline
        STATE.pop("pending_request", None)
        compare_view.compare_section()
        _save_widgets()
        return
    _sender().compare_sent = None      # the Compare view is not drawn: it holds no pair
    if source == "Live run":
        _new_generation_if_away()
        _restore_widgets()
        STATE["live_settings"] = sidebar_settings()
        STATE["settings_drawn_at"] = STATE["run_page_runs"]
        live_view()
        run = STATE.get("run")
        if run is not None and run.done:
            run_parameters(run_trace(run))
        _save_widgets()
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
        data = _sender().data(frames, live=False, done=True, ack=ack)
    components.viewer(data, key="medal_viewer", on_request=_on_request, on_need=_on_need,
                      sender=_sender())
    compare_view.whatif_form(trace, source_id, {"upload": "the uploaded trace"}
                             .get(source_id, "this example"))
    if trace is not None:
        trace_files(trace)
        run_parameters(trace)
    _save_widgets()

main()
