"""A trace as one self-contained HTML file: the viewer (``medal/viewer``) inlined with the
run's frames -- tree, task view, candidates, entropy, order and inspector, stepped
position by position -- with no server and no network (the page's Content-Security-Policy
forbids every request).

The app and a notebook host the same viewer; this module only writes the file. The
frames share every value that did not change from one position to the next
(:mod:`medal.viewer`), so the file grows linearly with the run's positions, and they travel
gzipped and base64-encoded inside a ``<script>`` element, so no token can close it.

    medal export trace.json out.html
"""
from __future__ import annotations

from pathlib import Path

from . import bundle, page


def export_html(trace: dict) -> str:
    """The whole run as one HTML document."""
    return page(trace)


def frames(trace: dict) -> dict:
    """What the page carries: the viewer's bundle for ``trace``."""
    return bundle(trace)


def write_html(trace: dict, path: str | Path) -> Path:
    """Write the page atomically (a temporary file renamed over ``path``): a kill or a full
    disk mid-write leaves any earlier file whole."""
    from ..files import write_atomic
    return write_atomic(path, export_html(trace))
