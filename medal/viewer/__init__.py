"""One viewer for a run, in the browser; three hosts (the Streamlit app, the HTML export,
a Jupyter notebook).

Python turns a trace into *frames*, one per timeline position (:mod:`medal.timeline`
orders them); the viewer's script (``viewer-*.js`` beside this file, joined into one by
:func:`viewer_js`, with ``viewer.css``) draws and steps them:
the tree (vis-network from the installed pyvis package), the task view, the candidates,
the entropy heatmaps (a small SVG renderer), the unmasking order, the inspector, the
timeline, the keys and play. Nothing is fetched from outside the page.

**Frames share what did not change.** A frame is a set of keyed *parts* -- ``h`` (the
header), ``n`` and ``e`` (every drawn tree node and edge, each with its complete style),
``s`` (each node's figures at this position), ``a`` (each node's fixed card: sequence and
action set), ``g`` (heatmap grids, one item per row), ``v`` (the other views). Every
distinct value is stored once in a *pool*; a frame records only the keys whose value
changed since the previous frame (``[key, pool index, ...]``, index -1: removed). An
MCTS phase changes a path's worth of nodes, so the bundle grows linearly with the
positions, not with positions x nodes. The browser rebuilds each position's full state
once, when the frames arrive, and a step then updates only what differs.

Every tree node and edge carries *every* style field (colour, width, dashes, font,
outline, label...): vis-network's in-place update keeps any field a new item omits, which
once left old path colours on edges that had left the path.

    bundle = medal.viewer.bundle(trace)          # what the hosts hand to the viewer's script
    html = medal.viewer.page(trace)              # a self-contained page (the export)
    medal.show(trace)                            # inline in a notebook

The modules, by job: :mod:`.tree_frame` (the tree's part of a frame: every node and edge
styled, the legend, reward outliers), :mod:`.parts` (a frame's parts at one position,
the run's meta), :mod:`.sharing` (the pool and per-frame changes, :class:`Frames`,
:func:`bundle`), :mod:`.examples_cache` (the shipped examples' frames, once per process),
:mod:`.html_page` (the self-contained page, the script's parts joined) and
:mod:`.notebook` (:func:`show`).
"""
from __future__ import annotations

from ..extensions import lend
from .examples_cache import example_frames, warm_examples
from .html_page import CSP, JS_PARTS, pack, page, standalone_page, viewer_css, viewer_js
from .notebook import Display, Trace, show
from ..views.parts import card_parts, explanation, frame_parts, meta, stats_parts
from ..views.frames import FORMAT, Encoder, Frames, bundle
from ..views.tree_frame import (EDGE_COLOUR, MAX_NODES, OUTLIER_SHARE, highlighted_path,
                         legend, reward_outlier, tree_parts)

__all__ = ["CSP", "Display", "EDGE_COLOUR", "Encoder", "FORMAT", "Frames",
           "JS_PARTS", "MAX_NODES", "OUTLIER_SHARE", "Trace", "bundle", "card_parts",
           "example_frames", "explanation", "frame_parts", "highlighted_path", "legend",
           "meta", "pack", "page", "reward_outlier", "show", "standalone_page", "stats_parts",
           "tree_parts", "viewer_css", "viewer_js", "warm_examples"]

lend("show", show)   # a traced Run's notebook display (medal.extensions)
