"""What if the run had decided otherwise? A fork re-runs a run and changes one decision.

    forked = fork(trace, node=4, actions=[(5, "+")], then="search").finish()
    forked = run.fork(step=9, actions=[(12, "7")])          # a Run, not yet started

A fork is a **replay with one intervention**: it runs the parent again from what its trace
records (model, prompt, strategy, every parameter, seed) and changes one decision at the
fork's position. Everything before the position is the parent's; if the forced decision
is the one the parent made there, everything after it is the parent's too, so the fork's
trace equals the parent's apart from its ``fork`` record (tested).

Positions and what "go on" means:

* ``step=K`` -- the decode step whose recorded ``step`` is K (phase C of a MEDAL run, or a
  baseline's decode). That step unmasks the forced (slot, token) pairs -- any masked
  slot, any token, in or out of the current block -- plus, if the step unmasks more slots,
  the most confident others; the decode goes on by the run's own rule. ``then`` is
  "decode" (the only choice). In a run with token editing (``edit_threshold`` > 0), a
  forced slot already written in the step's block is rewritten: an edit the step makes
  whatever the threshold says (the trace's edit records its probability), in place of
  the step's own edit of that slot; a post step (one that only rewrites) takes rewrites
  only.
* ``node=ID`` -- a node of MEDAL's tree. The parent's search runs as it did; then the
  forced actions are committed at the node, one tree node per action (a node the tree
  already has is reused; a new one costs one forward and gets its r_IG, completion (by
  argmax) and backed-up reward as an expansion's child would). Then:

  - ``then="search"`` (default): the search goes on from the forced node -- selection
    follows the committed path and searches below it -- until C candidates extend the
    commitment (those the parent already found below it count), the subtree is
    exhausted, or ``max_iterations`` more iterations. If the commitment keeps every
    candidate the parent found and adds no node, nothing changes.
  - ``then="decode"``: phase C starts from the forced node, whatever the search would have
    chosen (the candidate report says both).

The new trace records its parent: ``trace["fork"] = {"parent_sha256", "node" | "step",
"forced": [{"slot", "token_id", "token_text"}], "then"}``, and for node forks
``after_iteration`` (the parent's search iterations before the fork) and ``forced_nodes``.
``parent_sha256`` is the SHA-256 of the parent's canonical JSON (:func:`trace_sha256`:
the bytes of a file written by ``--trace``).

A fork needs the model that made the parent (``trace["run"]["model"]["name"]``): without
it, :class:`~medal.errors.ModelLoadError` says so.
"""
from __future__ import annotations


from dataclasses import dataclass

from .errors import InputError, ModelLoadError
from .extensions import lend
from .trace.writing import trace_sha256  # noqa: F401  (the name medal.fork had)

THEN = ("search", "decode")


@dataclass(frozen=True)
class ForkSpec:
    """One intervention: ``forced`` (slot, token id) pairs at tree ``node`` or decode
    ``step``; ``then`` "search" or "decode"; ``texts`` the tokens' texts."""
    forced: tuple[tuple[int, int], ...]
    node: int | None = None
    step: int | None = None
    then: str = "decode"
    parent_sha256: str | None = None
    texts: tuple[str, ...] = ()

    def record(self) -> dict:
        """The trace's ``fork`` record, as it starts (the engine adds the rest)."""
        out = {"parent_sha256": self.parent_sha256}
        if self.node is not None:
            out["node"] = self.node
        else:
            out["step"] = self.step
        out["forced"] = [{"slot": s, "token_id": t, "token_text": x}
                         for (s, t), x in zip(self.forced, self.texts)]
        out["then"] = self.then
        return out


# ---------------------------------------------------------------------- actions

def parse_action(text: str) -> tuple[int, str]:
    """``SLOT:TOKEN`` -> (slot, token as given). The slot is before the first colon."""
    slot, sep, token = str(text).partition(":")
    if not sep or not token:
        raise InputError(f"--action {text!r}: write SLOT:TOKEN, e.g. 5:+ or 5:#17 (a token "
                         "by its text, or its id after #)")
    try:
        if not slot.strip().isascii():   # int() reads '٣' as 3; '²' passes isdigit()
            raise ValueError(slot)
        return int(slot), token
    except ValueError:
        raise InputError(f"--action {text!r}: the slot must be a whole number (0 is the "
                         f"first answer slot), got {slot!r}") from None


def _vocab_size(model) -> int | None:
    try:
        return int(model.vocab_size)
    except (NotImplementedError, AttributeError, TypeError):
        return None


def _text_to_id(model, trace: dict, text: str) -> int | None:
    """The id of the one token whose text is ``text``: from the model's tokenizer, else
    from the tokens the trace records; None if none is."""
    tok = getattr(model, "tokenizer", None)
    if tok is not None:
        for call in (lambda: tok.encode(text, add_special_tokens=False),
                     lambda: tok.encode(text)):
            try:
                ids = list(call())
            except TypeError:
                continue
            except Exception:   # a tokenizer's own refusal: try the trace's tokens
                break
            if len(ids) == 1 and model.token_text(ids[0]) == text:
                return int(ids[0])
            break
    seen = set()
    for node in (trace.get("tree") or {}).get("nodes") or []:
        for a in node.get("action_set") or []:
            if a.get("token_text") == text:
                seen.add(a["token"])
        for row in node.get("top") or []:
            for t in row or []:
                if t.get("text") == text:
                    seen.add(t["token"])
    for step in trace.get("decode") or []:
        for t, x in zip(step["tokens"], step["token_texts"]):
            if x == text:
                seen.add(t)
    return seen.pop() if len(seen) == 1 else None


def resolve_token(model, trace: dict, token) -> tuple[int, str]:
    """A token given by its text, its id (an int, or ``#ID``), -> (id, text). Plain digits
    are read as an id only when they are no token's text."""
    if isinstance(token, bool):
        raise InputError(f"token {token!r}: give a token's text or its id")
    if isinstance(token, int):
        tid = token
    else:
        token = str(token)
        tid = None
        if token.startswith("#") and token[1:].isascii() and token[1:].isdigit():
            tid = int(token[1:])
        elif token.startswith("#") and token[1:].isdigit():   # '#²': isdigit, not a number
            raise InputError(f"token {token!r}: an id after # is written with the digits "
                             "0-9, e.g. #17")
        else:
            tid = _text_to_id(model, trace, token)
            if tid is None and token.isascii() and token.isdigit():
                tid = int(token)
        if tid is None:
            raise InputError(f"token {token!r} is not one token of {model.name}'s vocabulary; "
                             "give a single token's text (as the trace shows it) or its id "
                             "as #ID")
    size = _vocab_size(model)
    if tid < 0 or (size is not None and tid >= size):
        raise InputError(f"token id {tid} is outside {model.name}'s vocabulary "
                         f"(0..{(size or 1) - 1})")
    if tid == model.mask_id:
        raise InputError(f"token id {tid} is the mask token; force a real token")
    return tid, model.token_text(tid)


# ---------------------------------------------------------------------- the fork

def _load_model(trace: dict):
    from .models.recorded import load_recorded_model
    name = ((trace.get("run") or {}).get("model") or {}).get("name")
    try:
        return load_recorded_model(trace, "medal fork")
    except ModelLoadError as exc:
        if "--model SPEC" in str(exc):
            raise
        raise ModelLoadError(
            f"this trace was made with the model {str(name)[:120]!r}, which cannot be loaded "
            f"here ({exc}); a fork runs the model again: give that model (the same weights) "
            "with --model SPEC, or model= in Python") from None
    except InputError as exc:
        raise ModelLoadError(f"this trace was made with the model {name!r}, which cannot "
                             f"be loaded here ({exc}); give it with --model SPEC") from None


def _decode_records(trace: dict) -> list[dict]:
    """The run's answer decode: phase C (MEDAL) or a baseline's steps."""
    return [d for d in trace.get("decode") or [] if d["phase"] in ("phase_c", "decode")]


def check_position(trace: dict, node, step, forced_slots: list[int], then: str | None
                   ) -> str:
    """Check a fork's position and slots against the parent trace; returns ``then``."""
    L = trace["run"]["config"]["gen_length"]
    strategy = trace["run"]["strategy"]
    if (node is None) == (step is None):
        raise InputError("give one fork position: --node ID (a tree node) or --step K (a "
                         "decode step)")
    if then is not None and then not in THEN:
        raise InputError(f"--then must be search or decode, got {then!r}")
    if not forced_slots:
        raise InputError("give at least one --action SLOT:TOKEN to force")
    if len(set(forced_slots)) != len(forced_slots):
        raise InputError("each slot can be forced once; give one --action per slot")
    for s in forced_slots:
        if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < L:
            raise InputError(f"slot {s} is outside the answer; slots are 0..{L - 1}")
    if node is not None:
        tree = trace.get("tree")
        if not tree:
            steps = [d["step"] for d in _decode_records(trace)]
            raise InputError(f"this trace has no search tree (strategy {strategy}); fork a "
                             f"decode step with --step K"
                             + (f" ({steps[0]}..{steps[-1]})" if steps else ""))
        n = len(tree["nodes"])
        if isinstance(node, bool) or not isinstance(node, int) or not 0 <= node < n:
            raise InputError(f"node {node} is not in the tree; nodes are 0..{n - 1}")
        rec = tree["nodes"][node]
        for s in forced_slots:
            if not rec["masked"][s]:
                masked = [i for i, m in enumerate(rec["masked"]) if m]
                raise InputError(f"slot {s} is already unmasked at node {node}; force one of "
                                 f"its masked slots ({_ranges(masked)})")
        return then or "search"
    if then == "search":
        raise InputError("--then search continues MCTS from a tree node: give --node ID "
                         "(a decode step comes after the search; its fork goes on decoding)")
    if strategy == "bst5":
        raise InputError("bst5 decodes several samples; a step fork needs one decode (fork "
                         "a MEDAL run or a single-decode baseline)")
    records = _decode_records(trace)
    if isinstance(step, bool) or not isinstance(step, int):
        raise InputError(f"--step must be a whole number, got {step!r}")
    rec = next((d for d in records if d["step"] == step), None)
    if rec is None:
        steps = [d["step"] for d in records]
        raise InputError(f"no decode step {step} in this trace; its decode steps are "
                         + (f"{steps[0]}..{steps[-1]}" if steps else "none"))
    editable = _editable_slots(trace, rec)
    for s in forced_slots:
        if rec["entropy"][s] is None and s not in editable:
            masked = [i for i, h in enumerate(rec["entropy"]) if h is not None]
            raise InputError(f"slot {s} is already unmasked at step {step}; force one of "
                             f"the slots still masked there ({_ranges(masked)})"
                             + (f", or rewrite (edit) a written slot of its block "
                                f"({_ranges(sorted(editable))})" if editable else ""))
        if rec["entropy"][s] is not None and not rec["slots"] and editable:
            raise InputError(f"step {step} only rewrites written slots (its block has no "
                             f"mask left): force one of them ({_ranges(sorted(editable))}), "
                             "or fork another step")
    return "decode"


def _editable_slots(trace: dict, rec: dict) -> set[int]:
    """The slots a step fork may rewrite (an edit) at decode step ``rec``: with token
    editing on (the run's ``edit_threshold`` > 0), the written slots of the step's block
    (blocks counted back from the answer's end, :func:`medal.decoding.block_of`) that are
    not a task's fixed slots; none without editing."""
    cfg = trace["run"]["config"]
    if not cfg.get("edit_threshold"):
        return set()
    L, B = cfg["gen_length"], cfg["block_length"]
    start = -((-L) % B) + rec["block"] * B
    fixed = {f["slot"] for f in trace["run"].get("fixed_slots") or []}
    return {s for s in range(max(start, 0), min(start + B, L))
            if rec["entropy"][s] is None and s not in fixed}


def _ranges(slots: list[int]) -> str:
    if not slots:
        return "none"
    out, start, prev = [], slots[0], slots[0]
    for s in slots[1:] + [None]:
        if s is not None and s == prev + 1:
            prev = s
            continue
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
        if s is not None:
            start = prev = s
    return ", ".join(out)


def fork(parent, *, node: int | None = None, step: int | None = None, actions,
         then: str | None = None, model=None, task: str | None = None,
         observers: tuple = ()):
    """A new :class:`~medal.engine.Run` that re-runs ``parent`` (a trace dict, or a
    finished Run made with ``trace=True``) with the ``actions`` forced at ``node`` or
    ``step``; not yet started (``.finish()`` runs it; its ``.trace`` has the fork record).

    ``actions``: [(slot, token), ...], a token by its text, its id (int) or ``"#ID"``.
    ``then``: "search" (default for a node) or "decode". ``model``: the model (default:
    load the one the trace names; :class:`ModelLoadError` if it cannot be). ``task``:
    default the trace's ``run.task`` (older traces: told from the problem). Bad positions, slots or tokens raise
    :class:`InputError` saying what to give instead."""
    from .engine import Run   # inside: ``import medal.fork`` stays light (no torch)

    if isinstance(parent, Run):
        if parent.trace is None:
            raise InputError("a fork replays the run from its trace: make the run with "
                             "trace=True")
        if not parent.done:
            raise InputError("finish the run before forking it (run.finish())")
        model = model or parent.model
        task = task or parent.task.name
        trace = parent.trace
    elif isinstance(parent, dict):
        trace = parent
        if trace.get("result") is None:
            raise InputError("this trace is of a run that did not finish (its result is "
                             "null: a run in progress or a replay position); fork a finished "
                             "run's trace (export it after the run ends)")
    else:
        raise InputError(f"fork a trace (dict) or a Run, not {type(parent).__name__}")
    if not isinstance(actions, (list, tuple)) or not all(
            isinstance(a, (list, tuple)) and len(a) == 2 for a in actions):
        raise InputError("actions are (slot, token) pairs, e.g. [(5, '+')]")
    if trace.get("fork"):
        raise InputError("this trace is itself a fork; forking a fork is not supported yet "
                         "(its replay would lose the first intervention): fork its parent, "
                         "forcing all the actions at one position")
    then = check_position(trace, node, step, [a[0] for a in actions], then)
    model = model or _load_model(trace)
    pairs, texts = [], []
    for slot, token in actions:
        tid, text = resolve_token(model, trace, token)
        pairs.append((slot, tid))
        texts.append(text)
    spec = ForkSpec(forced=tuple(pairs), node=node, step=step, then=then,
                    parent_sha256=trace_sha256(trace), texts=tuple(texts))
    return Run.from_trace(trace, model, task=task, fork=spec, observers=observers)


def step_state(trace: dict, step: int) -> list[tuple[int, int]]:
    """The (slot, token) pairs written when the answer's decode step ``step`` begins: the
    winner's search commitments (MEDAL) and the writes of the steps before it, edits
    applied in order."""
    out: dict[int, int] = {}
    tree = trace.get("tree") or {}
    win = (trace.get("search") or {}).get("winner")
    nodes = {n["id"]: n for n in tree.get("nodes") or []}
    cur, seen = win, set()
    while cur is not None and cur in nodes and cur not in seen:
        seen.add(cur)
        a = nodes[cur].get("action")
        if a:
            out.setdefault(a["slot"], a["token"])
        cur = nodes[cur].get("parent")
    for rec in _decode_records(trace):
        if rec["step"] >= step:
            break
        out.update(zip(rec["slots"], rec["tokens"]))
        for e in rec.get("edits") or ():
            out[e["slot"]] = e["new_token"]
    return sorted(out.items())


def step_probabilities(trace: dict, model, step: int, slot: int, k: int = 10
                       ) -> list[tuple[int, float]]:
    """The model's most probable tokens at ``slot`` when decode step ``step`` begins, with
    their probabilities (one forward on that state: a trace keeps a step's chosen tokens,
    not every slot's distribution). What a fork at that step can choose between."""
    from .engine import Run   # inside: ``import medal.fork`` stays light (no torch)
    run = Run.from_trace(trace, model)
    answer = run.runner.initial_answer()
    for s, t in step_state(trace, step):
        answer[s] = t
    ev = run.runner.evaluate([answer])[0]
    toks, probs = ev.top_tokens[slot].tolist(), ev.top_probs[slot].tolist()
    return [(int(t), float(q)) for t, q in zip(toks[:k], probs[:k])]


def fork_trace(parent, **kwargs) -> dict:
    """:func:`fork`, run to the end; returns the fork's trace."""
    run = fork(parent, **kwargs)
    run.finish()
    return run.trace


lend("fork", fork)     # run.fork(...) (medal.extensions: the engine imports nothing above it)
