"""Shared helpers for the app and viz tests: a tiny random stand-in model and its traces.

The stand-in has the built-in model's interface (character tokenizer, 28 answer slots)
with random weights, so these tests need neither the trained assets nor much CPU.
"""
from __future__ import annotations

import functools
import tempfile

RANDOM_SPEC = "test:random"


@functools.lru_cache(maxsize=1)
def random_model():
    import torch

    from medal.models.builtin import BuiltinModel
    from medal.models.tiny import CharTokenizer, TinyConfig, TinyDLM, load_checkpoint, save_checkpoint

    directory = tempfile.mkdtemp(prefix="medal-random-model-")
    torch.manual_seed(0)
    save_checkpoint(TinyDLM(TinyConfig(vocab_size=len(CharTokenizer()), n_layer=1, n_embd=32)),
                    directory, {"task": "random"})
    net, meta = load_checkpoint(directory)
    return BuiltinModel(net, meta, "builtin:random")


def make_trace(strategy: str = "medal", **config) -> dict:
    """A finished run's trace (with the greedy comparison) on the random model."""
    from medal.config import GenerationConfig
    from medal.engine import Run

    cfg = {"max_iterations": 12, **config}
    run = Run(random_model(), task="countdown", prompt="Use 4, 18, 13 to make 20.",
              strategy=strategy, config=GenerationConfig(**cfg), trace=True, compare_greedy=True)
    run.finish()
    return run.trace


def patch_load_model(monkeypatch) -> None:
    """Make ``medal.models.load_model`` answer RANDOM_SPEC (and ``RANDOM_SPEC-anything``,
    for tests that need a fresh model-cache entry) with the random model."""
    import medal.models

    original = medal.models.load_model

    def load_model(spec, **options):
        if spec.strip().startswith(RANDOM_SPEC):
            return random_model()
        return original(spec, **options)

    monkeypatch.setattr(medal.models, "load_model", load_model)


def show_tab(at, name: str):
    """Select the Run page's tab ``name`` in an AppTest and rerun: the page builds only the
    selected tab's content (as a browser user's click on the tab does)."""
    at.session_state["w_tab"] = name
    return at.run()


def drawn(trace: dict, index: int | None = None, max_nodes: int = 300) -> dict:
    """The tree as the viewer draws it at position ``index`` (the last by default): the
    frame's node items by id ("nodes", "+k↓" after the token where the cap hides k), its edges
    ("edges") and the header's tree info ("info") -- the one path users run."""
    from medal.views.frames import bundle as make_bundle
    st = states(make_bundle(trace, max_nodes=max_nodes))
    st = st[-1 if index is None else index]
    nodes = st.get("n", {})
    return {"nodes": {int(k) if k.isdigit() else k: v for k, v in nodes.items()},
            "edges": list(st.get("e", {}).values()), "info": st["h"]["0"]["tree"],
            "stats": st.get("s", {})}


def states(bundle: dict) -> list[dict]:
    """Each position's full state, rebuilt from a viewer bundle's shared frames as
    viewer.js does (a frame lists, per part, key/pool-index pairs; -1 removes a key)."""
    pool, out, cur = bundle["pool"], [], {}
    for delta in bundle["frames"]:
        cur = {p: dict(items) for p, items in cur.items()}
        for part, changes in delta.items():
            items = cur.setdefault(part, {})
            for k, i in zip(changes[::2], changes[1::2]):
                if i < 0:
                    items.pop(k, None)
                else:
                    items[k] = pool[i]
        out.append(cur)
    return out


def app_test(path, *, source: str | None = "live", timeout: float = 120):
    """An AppTest of the app (or a page) opened as the URL ``?source=<source>`` opens it:
    a new session opens on an example unless its URL names a source (issue 18), and most
    tests drive the live run. ``source=None``: the plain URL. Not run yet."""
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(path), default_timeout=timeout)
    if source is not None:
        at.query_params["source"] = source
    return at


# ---- shared by test modules in several folders (a test module imports helpers from here,
# never from another folder's test module: run alone, that folder is not on sys.path)

class Press:
    """A press of one of the viewer's controls that reach the server (issue 18: the viewer
    steps computed positions in the browser and asks the page only to grow a live run):
    what the component's ``request`` trigger hands the page."""

    OPS = {"Next phase": "step", "Next iteration": "iteration", "Run to end": "end",
           "Stop": "stop", "Reset": "reset", "Play": "step"}

    def __init__(self, at, label):
        self.at, self.op = at, self.OPS[label]

    def click(self):
        from medal.timeline import positions
        run = self.at.session_state["run"] if "run" in self.at.session_state else None
        have = len(positions(run.trace)) if run is not None else 0
        seq = (self.at.session_state["_seq"] if "_seq" in self.at.session_state else 0) + 1
        self.at.session_state["_seq"] = seq
        self.at.session_state["pending_request"] = {"op": self.op, "want": have + 1,
                                                    "seq": seq, "from": have - 1}
        return self.at


def upload(at, name: str, content: bytes):
    at.radio(key="w_source").set_value("Uploaded trace").run()
    at.file_uploader(key="w_upload").set_value((name, content, "application/json")).run()
    assert not at.exception
    return at


def export_data(html: str) -> dict:
    """The frames an exported page carries (gzipped JSON inside it)."""
    import base64
    import gzip
    import json
    import re
    m = re.search(r'<script id="medal-data" type="application/gzip;base64">(.*?)</script>',
                  html, re.S)
    return json.loads(gzip.decompress(base64.b64decode(m.group(1))))


def render_everything(trace: dict) -> None:
    """Every view function the pages call, on the trace and on replay positions, and the
    viewer's frames at every position."""
    import json

    from medal import views as viz
    from medal.trace import dumps, json_default
    from medal.viewer import bundle
    from medal.views import inspector, teaching
    n_iter = viz.iteration_count(trace)
    for k in sorted({0, n_iter // 2, n_iter}):
        t = viz.trace_at_iteration(trace, k)
        for cap in (3, 300):
            json.dumps(bundle(t, max_nodes=cap))   # the tree drawn, capped and whole
        viz.entropy_grid(t)
        viz.order_summary(t)
        info = viz.current_phase(t)
        viz.phase_cycle_html(info.key)
        viz.progress(t)
        ids = inspector.node_ids(t)
        for nid in ids[:4] + ids[-2:]:
            inspector.node_label(t, nid)
            inspector.node_badges(t, nid)
            inspector.sequence_html(t, nid)
            inspector.node_stats(t, nid)
            inspector.ucb_breakdown(t, nid)
            inspector.reward_breakdown(t, nid)
            inspector.action_table(t, nid)
        inspector.candidate_report(t)
        for name in ("score_example", "action_set_example", "ucb_example",
                     "information_gain_example", "candidate_example", "phase_c_example"):
            getattr(teaching, name)(t)
    json.dumps(bundle(trace))       # what the app, the export and a notebook draw
    json.dumps(trace, allow_nan=False, default=json_default).encode("utf-8")   # as JSON
    dumps(trace)
