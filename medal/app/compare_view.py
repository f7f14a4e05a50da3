"""The Run page's Compare view and its "What if…" fork (issue 19).

* **Compare**: pick two sources -- two shipped examples, an example and an uploaded
  trace, the live run and an uploaded trace, an original and its fork -- and see them side
  by side on one timeline (:class:`medal.viewer.comparison.Comparison` in the viewer's compare mode)
  with the "Where they part" panel. Every upload goes through the one gate
  (:func:`medal.trace.loads_trace`); every string from a trace reaches the page as text
  (the viewer writes with ``textContent``; Streamlit elements get :func:`md` or
  ``st.text``).
* **What if…**: the viewer's inspector asks for a fork at the selected tree node or the
  decode step shown (request ``{"op": "whatif"}``); this module shows the form -- the
  slots to force, a token picker per slot (the tokens the run saw there first, then the
  model's vocabulary), then search / then decode -- and runs the fork on the server with
  :func:`medal.fork.fork`, within the operator's limits and the per-run budget
  (:mod:`medal.serving`). The fork then opens beside its original in the Compare view. A
  trace whose model this server does not offer cannot be forked: the form says so.
"""
from __future__ import annotations

import streamlit as st

from .. import serving
from ..errors import MedalError, ModelLoadError, TraceError
from ..trace import loads_trace, size_text
from ..views.safe import md

STATE = st.session_state
MAX_VOCAB_LISTED = 5000        # larger vocabularies: the top tokens and a text field
CHUNK_SECONDS = 0.5
#: the forks one session keeps (the oldest is dropped, with a message, for a new one)
MAX_FORKS = 4
#: a kept fork's memory: its trace and frames, about this many times its JSON size
FORK_MEMORY_FACTOR = 8
#: a session's forks together may use this many times the operator's per-run CPU budget
SESSION_RUNS = 5


def _serving():
    return serving.current()


# ---------------------------------------------------------------------- sources

def _examples() -> dict:
    from ..examples import list_examples
    return {e.name: e for e in list_examples()}


def sources() -> dict[str, str]:
    """{source id: label} of every trace the page can compare now."""
    out = {}
    for name, ex in _examples().items():
        out[f"example:{name}"] = f"Example: {ex.title}"
    up = STATE.get("uploaded")
    if up and up[1] is not None:
        out["upload"] = f"Uploaded trace: {STATE.get('uploaded_name', 'trace')}"
    upb = STATE.get("uploaded_b")
    if upb and upb[1] is not None:
        out["upload-b"] = f"Uploaded (compare): {STATE.get('uploaded_b_name', 'trace')}"
    run = STATE.get("run")
    if run is not None and getattr(run, "trace", None) is not None:
        out["live"] = f"Live run #{STATE.get('run_id', 0)}" + ("" if run.done else " (so far)")
    for k, f in enumerate(STATE.get("forks") or []):
        out[f"fork:{k}"] = f["label"]
    return out


def source_trace(sid: str) -> dict | None:
    if sid.startswith("example:"):
        ex = _examples().get(sid.split(":", 1)[1])
        return None if ex is None else _example_trace(ex.name)
    if sid == "upload":
        up = STATE.get("uploaded")
        return up[1] if up else None
    if sid == "upload-b":
        up = STATE.get("uploaded_b")
        return up[1] if up else None
    if sid == "live":
        run = STATE.get("run")
        return None if run is None else run.trace
    if sid.startswith("fork:"):
        forks = STATE.get("forks") or []
        k = int(sid.split(":", 1)[1])
        return forks[k]["trace"] if k < len(forks) else None
    return None


_EXAMPLE_TRACES: dict = {}


def _example_trace(name: str) -> dict:
    if name not in _EXAMPLE_TRACES:
        from ..examples import load_example
        _EXAMPLE_TRACES[name] = load_example(_examples()[name])
    return _EXAMPLE_TRACES[name]


def _version(sid: str) -> str:
    """What changes when the source's trace does (for the caches)."""
    if sid == "upload":
        return str((STATE.get("uploaded") or ("",))[0])
    if sid == "upload-b":
        return str((STATE.get("uploaded_b") or ("",))[0])
    if sid == "live":
        run = STATE.get("run")
        return f"{STATE.get('run_id', 0)}-{STATE.get('events', 0)}-{bool(run and run.done)}"
    if sid.startswith("fork:"):
        forks = STATE.get("forks") or []
        k = int(sid.split(":", 1)[1])
        return forks[k]["id"] if k < len(forks) else ""
    return ""


def _frames(sid: str, trace: dict):
    from ..viewer import Frames, example_frames
    if sid.startswith("example:"):
        return example_frames(sid.split(":", 1)[1])
    key = f"cmpsrc-{sid}-{_version(sid)}"

    def make():
        f = Frames(key)
        f.update(trace)
        return f
    if sid == "live":          # a live run changes: never shared with other sessions
        return make()
    if sid.startswith("fork:"):
        # a fork is this session's alone: its frames live in the session (dropped with
        # the fork, released with the session), never in the server-wide cache
        held = STATE.setdefault("fork_frames", {})
        if key not in held:
            held[key] = make()
        return held[key]
    return serving.FRAMES_CACHE.get(key, make)


def _upload_b() -> None:
    up = st.file_uploader(
        "Or upload a trace to compare (JSON)", type=["json"], key="w_upload_b",
        help="A trace file from this app or `medal generate --trace`; it is checked by the "
             f"same gate as every upload (at most {_serving().max_trace_bytes:,} bytes).",
        max_upload_size=serving.upload_mb(_serving().max_trace_bytes))
    cached = STATE.get("uploaded_b")
    if up is not None and not (cached and cached[0] == up.file_id):
        trace, error = None, None
        limit = _serving().max_trace_bytes
        if up.size > limit:
            error = f"the trace is {size_text(up.size, limit)}"
        else:
            try:
                trace = loads_trace(up.getvalue(), limit)
            except TraceError as exc:
                error = str(exc)
        STATE["uploaded_b"] = (up.file_id, trace, error)
        STATE["uploaded_b_name"] = up.name
        if trace is not None:
            STATE["cmp_b"] = "upload-b"
    cached = STATE.get("uploaded_b")
    if cached and cached[2]:
        st.error(md(f"Cannot read {STATE.get('uploaded_b_name', 'the trace')}: {cached[2]}"))


def compare_section() -> None:
    """The Compare view: two sources, one timeline."""
    from ..viewer.comparison import Comparison
    from . import components

    st.subheader("Compare two runs")
    note = STATE.pop("fork_note", None)
    if note:
        st.info(md(note))
    _upload_b()
    opts = sources()
    ids = list(opts)
    if not ids:
        st.info("Nothing to compare yet: upload a trace, or make a run or a fork.")
        return
    if STATE.get("cmp_a") not in opts:
        STATE["cmp_a"] = ids[0]
    if STATE.get("cmp_b") not in opts:
        STATE["cmp_b"] = ids[1] if len(ids) > 1 else ids[0]
    c1, c2 = st.columns(2)
    a = c1.selectbox("Run A", ids, key="cmp_a", format_func=lambda s: opts.get(s, s),
                     help="An example, the uploaded trace, the live run or a fork made "
                          "with What if…")
    b = c2.selectbox("Run B", ids, key="cmp_b", format_func=lambda s: opts.get(s, s))
    ta, tb = source_trace(a), source_trace(b)
    if ta is None or tb is None:
        st.info("Pick two runs to compare.")
        return
    na, nb = opts[a], opts[b]
    if na == nb:
        na, nb = na + " (A)", nb + " (B)"
    key = f"cmp|{a}|{_version(a)}|{b}|{_version(b)}"

    def make():
        cmp = Comparison(ta, tb, (na, nb))
        data = cmp.bundle(key=key, frames=(_frames(a, ta), _frames(b, tb)))
        return data
    try:
        with st.spinner("Comparing the two runs…"):
            if a == "live" or b == "live":
                data = make()
            elif a.startswith("fork:") or b.startswith("fork:"):
                held = STATE.get("fork_compare")      # this session's, one pair
                if held is None or held[0] != key:
                    STATE["fork_compare"] = None
                    held = STATE["fork_compare"] = (key, make())
                data = held[1]
            else:
                data = serving.FRAMES_CACHE.get(key, make)
    except MedalError as exc:
        st.error(md(f"Cannot compare these runs: {exc}"))
        return
    components.compare(data, key="medal_compare", sender=components.session_sender(),
                       on_need=_on_compare_need)


def _on_compare_need() -> None:
    from . import components
    components.session_sender().need(components.trigger("medal_compare", "need"))


# ---------------------------------------------------------------------- what if…

def take_whatif(req: dict | None, source_id: str | None) -> bool:
    """Note the viewer's What-if request (True: it was one)."""
    if not isinstance(req, dict) or req.get("op") != "whatif":
        return False
    STATE["whatif"] = {"source": source_id, "pos": req.get("pos"), "node": req.get("node"),
                       "step": bool(req.get("step"))}
    STATE["whatif_gen"] = STATE.get("whatif_gen", 0) + 1
    STATE.pop("whatif_error", None)
    return True


def _step_slots(trace: dict, step: int) -> list[int]:
    """The slots the answer's decode step ``step`` unmasked."""
    rec = next((d for d in trace.get("decode") or [] if d["phase"] in ("phase_c", "decode")
                and int(d["step"]) == step), None)
    return list(rec["slots"]) if rec else []


def _first_token_note(trace: dict, step: int, slot: int, token: int) -> str:
    """What forcing the list's first token at ``slot`` of step ``step`` does: nothing only
    when the run wrote exactly that token there at this very step and nothing else."""
    own = run_token_at(trace, slot)
    if own is None or own[0] != token:
        return "the model's most likely token at this step."
    if own[1] == step and _step_slots(trace, step) == [slot]:
        return "the run's own token here, written at this very step: forcing it changes nothing."
    if own[1] == step:
        return ("the run's own token here, written at this step beside other slots: forcing "
                "it alone decodes the step's other slots afresh.")
    return (f"the run's own token here, but written at step {own[1]}: forcing it now commits "
            "it earlier, which can change the order and the other slots.")


def _position(trace: dict, w: dict) -> tuple[int | None, int | None, str]:
    """(node, step, description) of the what-if request."""
    from ..timeline import positions
    pos = positions(trace)
    p = pos[w["pos"]] if isinstance(w.get("pos"), int) and 0 <= w["pos"] < len(pos) else None
    if w.get("step"):
        if p is None or p.kind != "decode":
            raise MedalError("that position is not a decoding step")
        rec = trace["decode"][p.index]
        if rec["phase"] not in ("phase_c", "decode"):
            raise MedalError(f"this step decodes another candidate ({rec['phase']}), not the "
                             "answer; pick a step of the answer's decoding")
        return None, int(rec["step"]), f"decode step {rec['step']}"
    node = w.get("node")
    nodes = (trace.get("tree") or {}).get("nodes") or []
    if isinstance(node, bool) or not isinstance(node, int) or not 0 <= node < len(nodes):
        raise MedalError("pick a tree node in the inspector")
    return node, None, f"node {node}"


def _masked_slots(trace: dict, node, step) -> list[int]:
    if node is not None:
        return [i for i, m in enumerate(trace["tree"]["nodes"][node]["masked"]) if m]
    rec = next(d for d in trace["decode"] if d["phase"] in ("phase_c", "decode")
               and int(d["step"]) == step)
    return [i for i, h in enumerate(rec["entropy"]) if h is not None]


def run_token_at(trace: dict, slot: int) -> tuple[int, int, str] | None:
    """(token, step, text) the run's answer decode wrote at ``slot``, or None (a search
    commitment, or never written)."""
    for d in trace.get("decode") or []:
        if d["phase"] in ("phase_c", "decode") and slot in d["slots"]:
            k = d["slots"].index(slot)
            return int(d["tokens"][k]), int(d["step"]), d["token_texts"][k]
    return None


def token_options(model, trace: dict, node, step, slot: int) -> list[tuple[int, str]]:
    """(token id, label) for a slot: the tokens the run saw there first (the node's top
    tokens with their probabilities; for a step, the token the run put there), then the
    model's vocabulary (when it is small enough to list)."""
    seen: dict[int, str] = {}
    if node is not None:
        top = (trace["tree"]["nodes"][node].get("top") or [])
        for t in (top[slot] if slot < len(top) else None) or []:
            seen.setdefault(int(t["token"]), f"{t['text']!r}  (p {t['p']:.3g} here)")
    else:
        from ..fork import step_probabilities
        own = run_token_at(trace, slot)
        # this step's own probabilities: one forward on the state the step began from (a
        # trace keeps only a step's chosen tokens)
        for tid, p in step_probabilities(trace, model, step, slot):
            text = model.token_text(tid)
            mine = own is not None and own[0] == tid
            seen.setdefault(tid, f"{text!r}  (p {p:.3g} at this step"
                            + (f"; the run's, at step {own[1]})" if mine else ")"))
        if own is not None:
            seen.setdefault(own[0], f"{own[2]!r}  (the run's, at step {own[1]})")
    out = [(tid, lab) for tid, lab in seen.items() if tid != model.mask_id]
    try:
        size = int(model.vocab_size)
    except Exception:  # noqa: BLE001 -- no vocabulary size: the top tokens only
        size = 0
    if 0 < size <= MAX_VOCAB_LISTED:
        for tid in range(size):
            if tid not in seen and tid != model.mask_id:
                out.append((tid, f"{model.token_text(tid)!r}"))
    return out


def _vocab_size(model) -> int:
    try:
        return int(model.vocab_size)
    except Exception:  # noqa: BLE001
        return 0


def _model_for(trace: dict):
    """The model that made ``trace``, if this server offers it (else ModelLoadError)."""
    spec = ((trace.get("run") or {}).get("model") or {}).get("name") or ""
    settings = _serving()
    try:
        serving.check_model(settings, spec)
    except ModelLoadError:
        raise ModelLoadError(
            f"this run was made with the model {spec[:80]}, which this server does not "
            "offer; a fork runs that model again, so it cannot be forked here (its views "
            "and Compare still work)") from None
    options = serving.load_options(settings)
    key = (spec, tuple(sorted(options.items())))
    return serving.MODEL_CACHE.get(
        key, lambda: serving.load_allowed_model(settings, spec, dict(options)))


def whatif_form(trace: dict | None, source_id: str | None, label: str) -> None:
    """The What-if form for the run shown, when its inspector asked for one."""
    w = STATE.get("whatif")
    if not w or trace is None or w.get("source") != source_id:
        return
    gen = STATE.get("whatif_gen", 0)
    with st.container(border=True, key="whatif_box"):
        head, close = st.columns([6, 1])
        head.subheader("What if…")
        close.button("Close", key=f"wi{gen}_close", on_click=lambda: STATE.pop("whatif", None))
        err = STATE.get("whatif_error")
        if err:
            st.error(md(err))
        try:
            node, step, where = _position(trace, w)
        except MedalError as exc:
            st.error(md(f"Cannot fork here: {exc}"))
            return
        if trace.get("fork"):
            st.warning("This run is itself a fork; fork its original instead (forcing all the "
                       "actions at one position).")
            return
        if trace.get("result") is None:
            st.info("Finish the run first (Run to end): a fork replays the whole run.")
            return
        try:
            with st.spinner("Loading the model…"):
                model = _model_for(trace)
        except MedalError as exc:
            st.error(md(f"Cannot fork this run: {exc}"))
            return
        st.text(f"Force tokens at {where} of {label}, then see where the run goes.")
        masked = _masked_slots(trace, node, step)
        if not masked:
            st.info("Every slot is already unmasked here: nothing to force.")
            return
        default = ([s for s in _step_slots(trace, step) if s in masked] or masked[:1]) \
            if step is not None else masked[:1]
        slots = st.multiselect("Slots to force (0 is the first answer slot)", masked,
                               default=default, key=f"wi{gen}_slots")
        picks = {}
        for s in slots:
            opts = token_options(model, trace, node, step, s)
            labels = dict(opts)
            ids = [t for t, _ in opts]
            picks[s] = st.selectbox(f"Token at slot {s} (the tokens seen here first)", ids,
                                    index=1 if len(ids) > 1 else 0, key=f"wi{gen}_tok{s}",
                                    format_func=lambda t, labels=labels: f"{labels[t]}  #{t}")
            if len(ids) > 1:         # the default said, never silent (issue 28 #8)
                st.caption(md(f"Preselected: the second in the list, {labels[ids[1]]} -- "
                              f"the first, {labels[ids[0]]}, is "
                              + (_first_token_note(trace, step, s, ids[0])
                                 if node is None else "this node's most likely token here.")
                              + " Pick any other."))
            if len(ids) < _vocab_size(model) - 1:     # a large vocabulary: any other token too
                other = st.text_input(f"… or any other token at slot {s} (its text, or #id)",
                                      key=f"wi{gen}_other{s}", max_chars=200)
                if other:
                    picks[s] = other
        if node is not None:
            then = st.radio("Then", ["search", "decode"], key=f"wi{gen}_then", horizontal=True,
                            format_func=lambda x: {"search": "then search (MCTS goes on below it)",
                                                   "decode": "then decode (phase C from it)"}[x])
        else:
            then = "decode"
        # the callback reads the choices as the browser sends them with the click (values
        # bound here would be this script run's, which can lag behind the page)
        st.button("Fork and compare", key=f"wi{gen}_go", type="primary",
                  disabled=not slots, on_click=_fork_from_form,
                  args=(source_id, label, node, step, gen, [(s, picks[s]) for s in slots], then))


def _fork_from_form(source_id, label, node, step, gen, drawn, then) -> None:
    """The What-if form's button: the slots, tokens and "then" as the form holds them at
    the click (``drawn``/``then``: as this script run drew them, for what it lacks)."""
    state = st.session_state
    chosen = dict(drawn)
    slots = state.get(f"wi{gen}_slots", [s for s, _ in drawn])
    actions = []
    for s in slots:
        other = state.get(f"wi{gen}_other{s}")
        token = other if other else state.get(f"wi{gen}_tok{s}", chosen.get(s))
        if token is not None:
            actions.append((s, token))
    if node is not None:
        then = state.get(f"wi{gen}_then", then)
    # run on the page's next run, at its top (run_pending_fork): there it shows its
    # progress, and opens Compare before the source's widget is drawn
    STATE["fork_pending"] = (source_id, label, node, step, actions, then)


def run_pending_fork() -> None:
    """The fork the What-if form asked for, with a progress bar (a fork re-runs the whole
    run: minutes for a large one)."""
    pending = STATE.pop("fork_pending", None)
    if not pending:
        return
    bar = st.progress(0.0, text="Forking: replaying the run up to the forced position…")

    def shown(frac: float, caption: str) -> None:
        bar.progress(min(1.0, max(0.0, frac)), text=f"Forking: {caption}")

    try:
        _do_fork(*pending, progress=shown)
    finally:
        bar.empty()


# ---------------------------------------------------------------------- the session's budget

def fork_budget(settings):
    """The budget of one fork: the operator's per-run budget, its CPU capped by what is
    left of this session's (:data:`SESSION_RUNS` runs' worth for all its forks), so a
    visitor cannot fork without end; the server's memory limit as for every run."""
    from .controller import OverBudget
    from . import controller
    budget = controller.run_budget(settings)
    total = SESSION_RUNS * budget.cpu_seconds
    used = float(STATE.get("session_cpu", 0.0))
    live = STATE.get("budget")
    used_live = float(getattr(live, "used_cpu", 0.0) or 0.0)
    left = total - used - used_live
    if left <= 0:
        raise OverBudget(f"this session has used its {total:g} CPU seconds of forks and "
                         f"runs ({SESSION_RUNS} x the operator's MEDAL_RUN_CPU_SECONDS); "
                         "open a new session (reload the page) to fork again")
    budget.cpu_seconds = min(budget.cpu_seconds, left)
    return budget


def _charge(budget) -> None:
    if budget is not None:
        STATE["session_cpu"] = float(STATE.get("session_cpu", 0.0)) + budget.used_cpu


def _trace_memory(trace: dict) -> int:
    """About what a kept fork holds in memory (its trace, then its frames)."""
    import json
    try:
        from ..trace.toprows import TopRows
        return FORK_MEMORY_FACTOR * len(json.dumps(
            trace, separators=(",", ":"),
            default=lambda o: list(o) if isinstance(o, TopRows) else str(o)))
    except (TypeError, ValueError):
        return 0


def keep_forks_within(settings, protect: str | None = None) -> list[str]:
    """Drop the oldest forks until this session keeps at most :data:`MAX_FORKS` whose
    memory fits the per-run memory budget (the newest is always kept); returns the
    dropped forks' names. Their traces, frames and compare data go with them."""
    forks = STATE.get("forks") or []
    most = settings.limits["run_memory_mb"] * 2 ** 20
    dropped = []
    while len(forks) > 1 and (len(forks) > MAX_FORKS
                              or sum(f.get("bytes", 0) for f in forks) > most):
        old = forks.pop(0)
        dropped.append(old["label"].split(":", 1)[0])
    if not dropped:
        return []
    STATE["forks"] = forks
    # fork ids shift: forget what was keyed by them (frames and the compared pair)
    live = {f"cmpsrc-fork:{k}-{f['id']}" for k, f in enumerate(forks)}
    held = STATE.get("fork_frames") or {}
    for key in [k for k in held if k not in live]:
        del held[key]
    STATE["fork_compare"] = None
    return dropped


def _do_fork(source_id, label, node, step, actions, then, progress=None) -> None:
    """Run the fork on the server (within the limits and budget), then open the Compare
    view with the original as A and the fork as B. ``progress(fraction, caption)``: told
    after each chunk of the run."""
    import time as _time

    from ..views import progress as run_progress

    from ..config import GenerationConfig
    from ..fork import fork
    from .controller import OverBudget, advance, release

    trace = source_trace(source_id)
    settings = _serving()
    run = None
    budget = None
    try:
        if trace is None:
            raise MedalError("the run is no longer loaded")
        serving.check_limits(settings, GenerationConfig.from_json(dict(trace["run"]["config"])))
        budget = fork_budget(settings)
        model = _model_for(trace)
        run = fork(trace, node=node, step=step, actions=list(actions), then=then, model=model)
        while not run.done:
            advance(run, "end", budget=budget, max_seconds=CHUNK_SECONDS)
            if progress is not None and run.trace is not None:
                progress(*run_progress(run.trace))
        child = run.trace
        release(run, collect=False)   # the engine's tree and generator: the trace stays
        run = None
    except OverBudget as exc:
        if run is not None:
            release(run)
        _charge(budget)
        STATE["whatif_error"] = f"The fork was stopped: {exc}"
        return
    except MedalError as exc:
        STATE["whatif_error"] = f"Cannot fork: {exc}"
        return
    except Exception as exc:  # noqa: BLE001 -- the model or the engine failed
        STATE["whatif_error"] = f"The fork failed: {type(exc).__name__}: {exc}"
        return
    _charge(budget)
    forced = ", ".join(f"{f['slot']}:{f['token_text']}" for f in child["fork"]["forced"])
    where = f"node {node}" if node is not None else f"step {step}"
    forks = STATE.setdefault("forks", [])
    made = STATE["forks_made"] = STATE.get("forks_made", len(forks)) + 1
    forks.append({"label": f"Fork #{made}: {forced} at {where}, then {then}",
                  "trace": child, "parent": source_id, "id": f"{made}-{_time.time()}",
                  "bytes": _trace_memory(child)})
    dropped = keep_forks_within(settings, protect=source_id)
    if dropped:
        STATE["fork_note"] = (
            f"{' and '.join(dropped)} {'was' if len(dropped) == 1 else 'were'} dropped to "
            f"make room: a session keeps at most {MAX_FORKS} forks in "
            f"{settings.limits['run_memory_mb']} MiB (the operator's MEDAL_RUN_MEMORY_MB); "
            "download a fork's trace to keep it")
    forks = STATE["forks"]
    STATE["cmp_a"] = source_id if source_id in sources() else f"fork:{len(forks) - 1}"
    STATE["cmp_b"] = f"fork:{len(forks) - 1}"
    STATE["w_source"] = "Compare"
    STATE.pop("whatif", None)
    STATE.pop("whatif_error", None)
