"""Strings from a trace or a model, made safe to show: as text, never as markup.

Streamlit's ``st.markdown``/``st.caption``/``st.info``... render Markdown (links,
images, emphasis, ``:material/...:`` icons, ``$`` LaTeX); plotly renders a subset of
HTML (``<a href>``, ``<b>``) in labels. A trace is untrusted input (an upload), so any
of its strings that goes into such an element passes through one of these first --
or is shown with ``st.text`` / ``st.code``.
"""
from __future__ import annotations

import html
import re

# what Markdown (CommonMark + GFM + Streamlit's extras) would turn into something other
# than the characters typed: emphasis, code, links and images, HTML and entities, LaTeX,
# :colour[...] / :material/...: directives and emoji, autolinked URLs and e-mail addresses
_ALWAYS = re.compile(r"([\\`*~\[\]<>!&$|@]|(?<!\w)_|_(?!\w))")   # in_word_ underscores are text
_COLON = re.compile(r":(?=\S)")                    # ":smile:", "http://" (not "error: x")
_WWW = re.compile(r"(?i)(?<=www)\.")
# GFM autolink literals are found in the *text* after Markdown is parsed, so a backslash
# escape does not stop them: ``https://x``, ``www.x`` and ``a@b.c`` would still become
# links. A word joiner (U+2060, invisible, no width) inside each pattern breaks it.
_JOIN = "\u2060"
_SCHEME = re.compile(r"(?i)(?<=[a-z0-9]):(?=/)")
_AT = re.compile(r"@")
_LINE_START = re.compile(r"(?m)^(\s*)([#>+=-]|\d+(?=[.)]))")


def md(value) -> str:
    """``value`` as literal text inside Markdown (``st.markdown``, ``st.caption``,
    ``st.info``...): the characters that would start a construct are backslash-escaped
    (CommonMark allows that for any ASCII punctuation), so ``14*3*2`` shows as is and
    ``[x](http://...)``, ``![](...)``, ``<b>``, ``:red[...]`` or ``$x$`` show as typed,
    never as a link, image, style or formula; bare URLs, ``www.`` hosts and e-mail
    addresses get an invisible word joiner so that no autolink finds them. Ordinary text
    reads unchanged."""
    text = "" if value is None else str(value)
    text = _SCHEME.sub(_JOIN + ":", text)   # "https⁠://": no autolinked URL
    text = _AT.sub(_JOIN + "@", text)       # "user⁠@host": no autolinked e-mail address
    text = _ALWAYS.sub(r"\\\1", text)
    text = _COLON.sub(r"\\:", text)
    text = _WWW.sub(_JOIN + r"\\.", text)  # "www⁠.host": no autolinked www. host
    return _LINE_START.sub(_line_start, text)


def _line_start(m) -> str:
    lead, mark = m.group(1), m.group(2)
    if mark[0].isdigit():  # "1. x" would be a list: escape the dot ("1\. x"), not the digit
        return lead + mark + "\\"
    return lead + "\\" + mark


def plotly_text(value) -> str:
    """``value`` for a plotly label or hover text (HTML entities, shown literally)."""
    return html.escape("" if value is None else str(value), quote=False)
