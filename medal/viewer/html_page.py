"""The viewer as one self-contained HTML page (the export, a notebook's frame): vis-network,
the viewer's JavaScript (its parts joined here, :data:`JS_PARTS`) and CSS inlined with the
run's frames, gzipped and base64-encoded; a Content-Security-Policy that forbids every
request."""
from __future__ import annotations

import base64
import functools
import gzip
import html as _html
import json
import zlib
from pathlib import Path

from ..views.frames import bundle


HERE = Path(__file__).resolve().parent


# ---------------------------------------------------------------------- assets

#: the viewer's JavaScript, one file per job, joined in this order into one script (the
#: first opens its closure, the last closes it and exports ``MedalViewer``): the frames'
#: store, the viewer's shell and stepping; the tree; the beam tree (OTS, SOAR); the other
#: views, presenter mode and keys; the side-by-side Compare view
JS_PARTS = ("viewer-core.js", "viewer-tree.js", "viewer-beam.js", "viewer-views.js",
            "viewer-compare.js")


def viewer_js() -> str:
    """The viewer's script: :data:`JS_PARTS` joined."""
    return "".join((HERE / name).read_text(encoding="utf-8") for name in JS_PARTS)


def viewer_css() -> str:
    return (HERE / "viewer.css").read_text(encoding="utf-8")


# ---------------------------------------------------------------------- the page

def _inline(code: str, tag: str = "script") -> str:
    return code.replace(f"</{tag}", f"<\\/{tag}")


def pack(data: dict) -> str:
    """JSON, gzipped and base64-encoded: no token of a trace can close the <script>.

    The JSON text is made and compressed a piece at a time (each of the bundle's pool
    values and frames its own ``json.dumps``; the same text as one ``json.dumps``), so the
    whole text -- tens of MB at LLaDA's size, up to four bytes a character -- is never
    held at once (issue 41: the export's peak memory)."""
    gz = zlib.compressobj(9, zlib.DEFLATED, 31)        # gzip, as gzip.compress makes it
    out: list[bytes] = []
    for piece in _json_pieces(data):
        out.append(gz.compress(piece.encode("utf-8")))
    out.append(gz.flush())
    return base64.b64encode(b"".join(out)).decode("ascii")


def _dump(value) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _json_pieces(value, depth: int = 0):
    """``_dump(value)`` in pieces: objects and lists opened two levels deep (a bundle's
    pool and frames: one piece each of their items)."""
    if depth >= 2 or not isinstance(value, (dict, list)) or not value or (
            isinstance(value, dict) and not all(type(k) is str for k in value)):
        yield _dump(value)
        return
    if isinstance(value, dict):
        yield "{"
        for k, (key, item) in enumerate(value.items()):
            yield ("," if k else "") + _dump(key) + ":"
            yield from _json_pieces(item, depth + 1)
        yield "}"
    else:
        yield "["
        for k, item in enumerate(value):
            if k:
                yield ","
            yield from _json_pieces(item, depth + 1)
        yield "]"


CSP = ("default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; "
       "style-src 'unsafe-inline'; img-src data: blob:; font-src data:")


def page(trace: dict, *, title: str | None = None, height: int | None = None) -> str:
    """The whole run as one self-contained HTML document (the viewer inlined, no
    network: its Content-Security-Policy forbids any request)."""
    data = bundle(trace)
    m = data["meta"]
    title = title or f"MEDAL trace: {m.get('strategy')} on {m.get('prompt')}"
    return standalone_page(data, title)


def standalone_page(data: dict, title: str, *, mount: str = "mount",
                    element: str = "medal-viewer", name: str = "medalViewer") -> str:
    """One self-contained HTML document that inlines vis-network and the viewer and calls
    ``MedalViewer.<mount>(#element, data)``, keeping the result as ``window.<name>``
    (``mount``: one run; ``compare``: :class:`medal.viewer.comparison.Comparison`)."""
    import re
    vis_js, vis_css = vis_assets()
    values = {"CSP": CSP, "TITLE": _html.escape(title[:200]),
              "VIS_CSS": _inline(vis_css, "style"), "CSS": _inline(viewer_css(), "style"),
              "VIS_JS": _inline(vis_js), "JS": _inline(viewer_js()), "ELEMENT": element,
              "NAME": name, "MOUNT": mount, "DATA": pack(data)}
    # one pass over the template: a value (a run's prompt in the title, the scripts) is
    # never read for placeholders (issue 40: a prompt of "{{VIS_JS}}" put 590 kB of
    # vis-network in the title)
    return re.sub(r"\{\{([A-Z_]+)\}\}", lambda m: values[m.group(1)], _PAGE)


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{CSP}}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{TITLE}}</title>
<style>{{VIS_CSS}}</style>
<style>{{CSS}}</style>
<style>body { margin: 0; } .medal-standalone { padding: 8px 14px; }</style>
</head><body>
<div id="{{ELEMENT}}" class="medal-standalone"></div>
<script>{{VIS_JS}}</script>
<script>{{JS}}</script>
<script id="medal-data" type="application/gzip;base64">{{DATA}}</script>
<script>
MedalViewer.unpack(document.getElementById("medal-data").textContent).then(function (data) {
  window.{{NAME}} = MedalViewer.{{MOUNT}}(document.getElementById("{{ELEMENT}}"), data,
                                         {host: "page"});
}).catch(function (err) {
  document.getElementById("{{ELEMENT}}").textContent =
    "This browser cannot open the page (" + err + "); use a current Chromium, Firefox or Safari.";
});
</script>
</body></html>
"""


@functools.lru_cache(maxsize=1)
def vis_assets() -> tuple[str, str]:
    """(JavaScript, CSS) of vis-network as bundled inside the pyvis package."""
    import pyvis
    lib = Path(pyvis.__file__).parent / "lib"
    folders = sorted(lib.glob("vis-*"), key=lambda p: [int(x) if x.isdigit() else x
                                                        for x in p.name[4:].split(".")])
    for folder in reversed(folders):
        js, css = folder / "vis-network.min.js", folder / "vis-network.css"
        if js.is_file() and css.is_file():
            return js.read_text(encoding="utf-8"), css.read_text(encoding="utf-8")
    raise FileNotFoundError(f"no vis-network*.min.js/.css under {lib}; reinstall pyvis")
