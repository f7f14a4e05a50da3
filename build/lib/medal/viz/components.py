"""The Run page's two in-page components (``st.components.v2``: inline JS, no iframe).

* :func:`tree` mounts vis-network once (inlined from the installed pyvis package, never a
  CDN) and, on every later page run, updates its nodes and edges in place: the zoom and
  pan survive, nodes keep the positions computed by :func:`medal.viz.tree.layout`. A click
  on a node comes back to Python as the trigger ``node`` (its id).
* :func:`navigator` has no visible part: it turns the arrow keys (and Space, Home, End)
  into the trigger ``nav`` and, while the timeline plays, sends a ``tick`` after the
  chosen delay.

Only this module imports Streamlit; the data handed to both is built by plain functions.
Everything from a trace reaches the page as data: node labels are drawn on a canvas, and
tooltips are built from escaped text (see :func:`medal.viz.tree.node_tooltip`).
"""
from __future__ import annotations

import functools
import re

_TREE_JS = r"""
const STATE = new WeakMap();

function prep(nodes) {
  return nodes.map((n) => {
    const c = Object.assign({}, n);
    if (typeof c.title === "string") {
      const d = document.createElement("div");
      d.innerHTML = c.title;            // built from escaped text only
      c.title = d;
    }
    return c;
  });
}

function sync(ds, items) {
  const keep = new Set(items.map((i) => i.id));
  const gone = ds.getIds().filter((i) => !keep.has(i));
  if (gone.length) ds.remove(gone);
  ds.update(items);
}

function initialView(s, data) {
  s.network.fit({animation: false});
  const scale = s.network.getScale();
  if (scale < data.min_scale) {
    // too large to fit at a readable scale: the root near the top edge, the tree below it
    const focus = s.network.getPositions([data.focus])[data.focus] || {x: 0, y: 0};
    const below = Math.max(0, (s.box.clientHeight || data.height) / 2 - 60) / data.min_scale;
    s.network.moveTo({position: {x: focus.x, y: focus.y + below}, scale: data.min_scale,
                      animation: false});
  } else {
    // it fits: at most 1.1 (labels 15-16 px x 1.1: readable, not bloated), its top near
    // the top edge of the box, so that a young tree's simulation labels are on the first
    // screen at 1024x768 too (centred in the box, they fell below it)
    const k = Math.min(scale, 1.1);
    let top = Infinity, left = Infinity, right = -Infinity;
    for (const id of s.network.body.nodeIndices) {
      const bb = s.network.getBoundingBox(id);
      if (!bb) continue;
      top = Math.min(top, bb.top); left = Math.min(left, bb.left);
      right = Math.max(right, bb.right);
    }
    if (top === Infinity) return;
    const boxH = s.box.clientHeight || data.height;
    s.network.moveTo({position: {x: (left + right) / 2, y: top + (boxH / 2 - 16) / k},
                      scale: k, animation: false});
  }
}

// The view follows the growing tree (re-fitted at every update) until the user zooms or
// pans: then it is left exactly where the user put it. "Fit tree" hands it back.
function autoView(s, data) {
  initialView(s, data);
  s.auto = {scale: s.network.getScale(), pos: s.network.getViewPosition()};
}

function untouched(s) {
  if (!s.auto) return false;
  const scale = s.network.getScale(), pos = s.network.getViewPosition();
  return Math.abs(scale - s.auto.scale) < 1e-6 && Math.abs(pos.x - s.auto.pos.x) < 0.5
    && Math.abs(pos.y - s.auto.pos.y) < 0.5;
}

export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  let s = STATE.get(parentElement);
  if (!s || s.view !== data.view) {
    if (s) { s.network.destroy(); s.root.remove(); }
    const root = document.createElement("div");
    root.className = "medal-tree-root";
    const box = document.createElement("div");
    box.className = "medal-tree";
    box.id = "medal-tree";
    const bar = document.createElement("div");
    bar.className = "medal-bar";
    const fit = document.createElement("button");
    fit.textContent = "Fit tree";
    fit.className = "medal-fit";
    const legend = document.createElement("div");
    legend.className = "medal-legend";
    bar.append(fit, legend);
    root.append(box, bar);
    box.style.height = data.height + "px";   // before the first fit, so it fits this box
    parentElement.append(root);
    const nodes = new vis.DataSet(prep(data.nodes));
    const edges = new vis.DataSet(data.edges);
    const network = new vis.Network(box, {nodes: nodes, edges: edges}, data.options);
    s = {root, box, legend, nodes, edges, network, view: data.view, send: setTriggerValue};
    network.on("click", (p) => {
      const id = p.nodes && p.nodes.length ? p.nodes[0] : null;
      if (typeof id === "number") s.send("node", id);
    });
    fit.onclick = () => { autoView(s, s.data); };
    STATE.set(parentElement, s);
    globalThis.__medalTreeNetwork = network;     // for the browser tests and benchmark
    globalThis.__medalTreeBox = box;
    s.data = data;
    autoView(s, data);
  } else {
    const follow = untouched(s);
    sync(s.nodes, prep(data.nodes));
    sync(s.edges, data.edges);
    s.data = data;
    if (follow) autoView(s, data);
  }
  s.send = setTriggerValue;
  s.box.style.height = data.height + "px";
  s.legend.innerHTML = data.legend;       // built from escaped text only
  s.network.once("afterDrawing", () => {
    s.box.setAttribute("data-drawn", String(data.seq));
    globalThis.__medalTreeDrawn = {seq: data.seq, t: performance.now(), nodes: data.nodes.length};
  });
  s.network.redraw();
}
"""

_TREE_CSS = """
.medal-tree { width: 100%; border: 1px solid #e0e0e0; background: #ffffff; }
.medal-bar { display: flex; align-items: flex-start; gap: 10px; padding: 4px 2px;
  font-family: sans-serif; font-size: 13px; color: #333; }
.medal-fit { flex: none; font-size: 12px; padding: 2px 8px; border: 1px solid #bbb;
  border-radius: 4px; background: #fafafa; cursor: pointer; }
.medal-legend span.k { display: inline-block; margin-right: 14px; }
div.vis-tooltip { font-family: sans-serif; font-size: 13px; max-width: 460px;
  white-space: normal; line-height: 1.35; }
"""

_NAV_JS = r"""
export default function (component) {
  const { data, setTriggerValue } = component;
  const g = globalThis.__medalNav || (globalThis.__medalNav = {});
  g.send = setTriggerValue;
  if (!g.installed) {
    g.installed = true;
    const keys = {ArrowRight: "next", ArrowLeft: "prev", " ": "toggle", Home: "first",
                  End: "last"};
    document.addEventListener("keydown", (e) => {
      if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
      const t = (e.composedPath && e.composedPath()[0]) || e.target;
      const tag = ((t && t.tagName) || "").toLowerCase();
      const role = t && t.getAttribute ? t.getAttribute("role") : null;
      if (["input", "textarea", "select"].includes(tag) || (t && t.isContentEditable)
          || ["slider", "tab", "combobox", "option", "listbox", "radio", "switch",
              "checkbox"].includes(role)) return;
      if (tag === "button" && e.key === " ") return;     // Space presses a focused button
      const action = keys[e.key];
      if (!action || !g.enabled) return;
      e.preventDefault();
      g.send("nav", {action: action, at: Date.now()});
    });
  }
  g.enabled = data.enabled;
  clearTimeout(g.timer);
  if (data.playing) {
    // A tick that Streamlit drops (it can arrive while a rerun is busy) would stop the play
    // for good: no new position, so no new data and no new timer. Until the next position
    // arrives (every arrival clears this timer), tick again at the chosen speed, but never
    // faster than every 2 s; the server ignores ticks once playing stops.
    const tick = () => {
      g.send("nav", {action: "tick", at: Date.now()});
      g.timer = setTimeout(tick, Math.max(data.delay_ms, 2000));
    };
    g.timer = setTimeout(tick, data.delay_ms);
  }
}
"""


@functools.lru_cache(maxsize=1)
def _tree_component():
    import streamlit as st

    from .tree import vis_assets
    js, css = vis_assets()
    tooltip = "".join(m.group(0) for m in re.finditer(r"div\.vis-tooltip\{[^}]*\}", css))
    return st.components.v2.component("medal_tree", js=js + "\n" + _TREE_JS,
                                      css=tooltip + _TREE_CSS)


@functools.lru_cache(maxsize=1)
def _nav_component():
    import streamlit as st
    return st.components.v2.component("medal_nav", js=_NAV_JS)


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


def tree(data: dict, *, key: str, on_node) -> None:
    """Mount (first call) or update in place (later calls) the tree drawing."""
    _tree_component()(key=key, data=data, on_node_change=on_node, height="content")


def navigator(*, playing: bool, delay_ms: int, seq: int, enabled: bool, key: str,
              on_nav) -> None:
    """Arrow-key stepping and the play timer (invisible)."""
    _nav_component()(key=key, data={"playing": playing, "delay_ms": int(delay_ms),
                                    "seq": seq, "enabled": enabled},
                     on_nav_change=on_nav, height=0)
