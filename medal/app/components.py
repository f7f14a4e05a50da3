"""The Run page's one component: the viewer (``medal/viewer``), mounted in the page with
``st.components.v2`` (inline JS, no iframe, nothing fetched: vis-network comes from the
installed pyvis package, the viewer's JS and CSS from this package).

The viewer steps every position it holds in the browser, with no server round trip; it
asks the server only to grow a live run (``request``: step to a number of positions, run
an iteration, run to the end, stop, reset) and, if its copy of the frames ever misses a
piece, for the rest (``need``). The server sends only what the browser does not have yet
(:class:`Sender`).

Only this module imports Streamlit.
"""
from __future__ import annotations

import functools
import re

_ADAPTER = r"""
const VIEWERS = new WeakMap();
// vis-network and the viewer (~0.5 MB) come once per browser session, in the data of the
// first run that draws the viewer (``lib``), not with the component's code: Streamlit
// sends a component's inline code with every run of the page, and every live step is one
const haveLib = (data) => {
  if (!globalThis.MedalViewer && typeof data.lib === "string") (0, eval)(data.lib);
  return !!globalThis.MedalViewer;
};
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  if (!haveLib(data)) {          // the run that carried it never reached this browser
    setTriggerValue("need", {lib: true, key: data.key || null, pool: 0, frames: 0});
    return;
  }
  let v = VIEWERS.get(parentElement);
  if (!v) {
    const root = document.createElement("div");
    parentElement.append(root);
    v = new MedalViewer.Viewer(root, {request: (p) => v._send("request", p)});
    VIEWERS.set(parentElement, v);
    globalThis.__medalViewer = v;
  }
  v._send = setTriggerValue;
  if (data.presenter !== undefined && data.presenter !== v._presenter) {
    v._presenter = data.presenter;
    if (data.presenter) v.presenter(true);
  }
  if (!data.key) { v.store = null; v.empty(); return; }
  const out = v.load(data);
  if (out.need) setTriggerValue("need", out.need);
}
"""


@functools.lru_cache(maxsize=1)
def viewer_lib() -> str:
    """vis-network and the viewer's JavaScript, evaluated once per browser session by the
    component (see :func:`viewer`)."""
    from ..viewer import viewer_js
    from ..viewer.html_page import vis_assets
    js, _css = vis_assets()
    return js + "\n" + viewer_js() + "\n//# sourceURL=medal-viewer-lib.js\n"


@functools.lru_cache(maxsize=1)
def _viewer_component():
    import streamlit as st

    from ..viewer import viewer_css
    from ..viewer.html_page import vis_assets
    _js, css = vis_assets()
    tooltip = "".join(m.group(0) for m in re.finditer(r"div\.vis-tooltip\{[^}]*\}", css))
    # only the adapter: Streamlit sends a component's inline code with every run of the
    # page; the library goes once per session in the data (viewer_lib, Sender.lib_sent)
    return st.components.v2.component("medal_viewer", js=_ADAPTER, css=tooltip + viewer_css())


def trigger(key: str, event: str):
    """The value of trigger ``event`` of the component mounted with ``key`` (for its
    on_<event>_change callback), or None."""
    import streamlit as st
    state = st.session_state.get(key)
    if state is None:
        return None
    try:
        return state[event]
    except (KeyError, TypeError, AttributeError):
        return getattr(state, event, None)


class Sender:
    """What the browser already holds, per run: the page sends only the rest; and whether
    it holds the viewer's library (:func:`viewer_lib`, sent once per session)."""

    def __init__(self):
        self.sent: dict[str, tuple[int, int]] = {}
        self.lib_sent = False
        self.compare_sent: str | None = None     # the pair the Compare view holds

    def data(self, frames, *, live: bool, done: bool, ack=None) -> dict:
        pool_n, frames_n = self.sent.get(frames.key, (0, 0))
        frames_n = min(frames_n, frames.dirty_from, len(frames.enc.frames))
        pool_n = min(pool_n, len(frames.enc.pool))
        out = frames.bundle(pool_from=pool_n, frames_from=frames_n, live=live, done=done)
        out["ack"] = ack
        self.sent[frames.key] = (len(frames.enc.pool), len(frames.enc.frames))
        frames.dirty_from = len(frames.enc.frames)
        return out

    def compare_data(self, data: dict) -> dict:
        """A pair for the Compare view: whole the first time, then only its key (the view
        keeps a pair it holds; it asks again, ``need``, if it lost it)."""
        if data.get("key") and data["key"] == self.compare_sent:
            return {"key": data["key"], "frames_sent": False}
        self.compare_sent = data.get("key")
        return {**data, "frames_sent": True}

    def need(self, value: dict) -> None:
        if not isinstance(value, dict):
            return
        if "compare" in value:        # the Compare view lacks its pair
            self.compare_sent = None
        if value.get("lib"):          # the browser has no viewer yet: it holds nothing
            self.lib_sent = False
            self.sent.clear()
            self.compare_sent = None
        key = value.get("key")
        if key and isinstance(key, str) and len(key) <= 200:
            self.sent[key] = (visitor_int(value.get("pool")), visitor_int(value.get("frames")))

    def with_lib(self, data: dict) -> dict:
        """``data``, with the viewer's library when this session has not sent it yet."""
        if self.lib_sent:
            return data
        self.lib_sent = True
        return {**data, "lib": viewer_lib()}


def visitor_int(value, default: int = 0, low: int = 0, high: int = 10 ** 9) -> int:
    """A whole number from the browser (a visitor can send anything: "abc", {"a": 1},
    1e308, true): the value when it is one within [low, high], else ``default``. Never
    raises: a hostile value is ignored, not an error in the visitor's session."""
    if isinstance(value, bool):
        return default
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    elif isinstance(value, str) and value.strip().isascii() and value.strip().isdigit() \
            and len(value.strip()) <= 12:
        value = int(value.strip())
    if type(value) is not int or not low <= value <= high:
        return default
    return value


def session_sender() -> Sender:
    """This browser session's :class:`Sender` (one for the viewer and the Compare view: the
    library, once evaluated, serves both)."""
    import streamlit as st
    if "viewer_sender" not in st.session_state:
        st.session_state["viewer_sender"] = Sender()
    return st.session_state["viewer_sender"]


def viewer(data: dict, *, key: str, on_request, on_need, sender: Sender | None = None) -> None:
    """Mount (first call) or feed (later calls) the viewer. ``sender``: the session's
    :class:`Sender`, which adds the viewer's library to the first call's data (without
    one, every call carries it)."""
    data = sender.with_lib(data) if sender is not None else {**data, "lib": viewer_lib()}
    _viewer_component()(key=key, data=data, on_request_change=on_request,
                        on_need_change=on_need, height="content")


# ---------------------------------------------------------------------- compare (issue 19)
_COMPARE_ADAPTER = r"""
const COMPARES = new WeakMap();
const haveLib = (data) => {
  if (!globalThis.MedalViewer && typeof data.lib === "string") (0, eval)(data.lib);
  return !!globalThis.MedalViewer;
};
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  let c = COMPARES.get(parentElement);
  if (c && c._key === data.key) return;          // the same pair: keep where it stands
  // the library and a pair's frames come once (Sender): ask for what this browser lacks
  if (!haveLib(data) || (data.key && !data.frames_sent)) {
    setTriggerValue("need", {lib: !globalThis.MedalViewer, compare: data.key || null});
    return;
  }
  if (c) { c.stop(); c.root.remove(); COMPARES.delete(parentElement); }   // (the styles stay)
  if (!data.key) return;
  const root = document.createElement("div");
  parentElement.append(root);
  c = MedalViewer.compare(root, data, {host: "app"});
  c._key = data.key;
  if (data.part && data.part.row) c.go(data.part.row);   // open where they part
  COMPARES.set(parentElement, c);
  globalThis.__medalCompare = c;
}
"""


@functools.lru_cache(maxsize=1)
def _compare_component():
    import streamlit as st

    from ..viewer import viewer_css
    from ..viewer.html_page import vis_assets
    _js, css = vis_assets()
    tooltip = "".join(m.group(0) for m in re.finditer(r"div\.vis-tooltip\{[^}]*\}", css))
    # only the adapter, as for the viewer: the library and the pair's frames go in the
    # data, each once per browser session (Sender.with_lib, Sender.compare_data)
    return st.components.v2.component("medal_compare", js=_COMPARE_ADAPTER,
                                      css=tooltip + viewer_css())


def compare(data: dict, *, key: str, on_need=None, sender: Sender | None = None) -> None:
    """Two runs side by side on one timeline (:class:`medal.viewer.comparison.Comparison`'s bundle).
    ``sender``: the session's :class:`Sender`, which sends the library and a pair's frames
    once (without one, every call carries both)."""
    if sender is None:
        data = {**data, "lib": viewer_lib(), "frames_sent": True}
    else:
        data = sender.with_lib(sender.compare_data(data))
    _compare_component()(key=key, data=data, height="content",
                         on_need_change=on_need or (lambda: None))
