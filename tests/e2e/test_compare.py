"""Two runs side by side on one timeline (issue 19): ``medal.compare`` and its offline
HTML page (``Comparison.save_html``, ``medal diff A B --html``), in Chromium with every
request blocked; and the app's Compare view and What if… (a fork opens beside its
original).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_browser import (ARTIFACTS, CHROMIUM_ARGS, browser, expect,  # noqa: E402,F401
                          offline_session, server)

import medal  # noqa: E402
from medal.config import GenerationConfig  # noqa: E402
from medal.engine import Run  # noqa: E402
from medal.fork import fork_trace  # noqa: E402
from medal.models import builtin_names, load_model  # noqa: E402
from medal.trace import dumps, loads_trace  # noqa: E402


@pytest.fixture(scope="module")
def pair():
    """A MEDAL run and its fork: another token forced at a decode step."""
    if "countdown" not in builtin_names():
        pytest.skip("the built-in countdown model is not trained here")
    run = Run(load_model("builtin:countdown"), problem={"numbers": [16, 19, 15], "target": 18},
              trace=True, config=GenerationConfig(lc=2, candidates=3))
    run.finish()
    parent = loads_trace(dumps(run.trace))
    step = parent["decode"][-3]
    other = "+" if step["token_texts"][0] != "+" else "-"
    child = loads_trace(dumps(fork_trace(parent, step=step["step"],
                                         actions=[(step["slots"][0], other)])))
    return parent, child


def open_page(browser, path):
    ctx = browser.new_context(viewport={"width": 1440, "height": 1000})
    blocked = []

    def route(r):
        if r.request.url.startswith(("file:", "data:", "blob:")):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()
    ctx.route("**/*", route)
    pg = ctx.new_page()
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(Path(path).as_uri())
    pg.wait_for_function("window.medalCompare && window.medalCompare.views.length === 2",
                         timeout=60_000)
    return ctx, pg, blocked, errors


STATE = """() => { const c = window.medalCompare; return {row: c.row, rows: c.n(),
  a: Number(c.views[0].root.dataset.position), b: Number(c.views[1].root.dataset.position),
  ta: c.views[0].el.title.textContent, tb: c.views[1].el.title.textContent,
  da: c.views[0].el.detail.textContent, db: c.views[1].el.detail.textContent,
  caption: c.el.caption.textContent}; }"""


def test_compare_page_is_offline_and_steps_both_runs(browser, pair, tmp_path):
    parent, child = pair
    cmp = medal.compare(parent, child)
    assert cmp.names == ("parent", "fork")
    part = cmp.where_they_part()
    assert part["cause"] == "forced action" and part["row"] == cmp.part_row
    path = cmp.save_html(tmp_path / "compare.html")
    html = path.read_text(encoding="utf-8")
    # self-contained: no script or stylesheet from anywhere
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)\s*=", html, re.I)
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", html, re.I)
    assert "MedalViewer.compare" in html
    ctx, pg, blocked, errors = open_page(browser, path)
    try:
        s0 = pg.evaluate(STATE)
        assert s0["rows"] == len(cmp.rows) and (s0["a"], s0["b"]) == (0, 0)
        # both runs are on the page: each view holds its own run's frames
        n = pg.evaluate("() => window.medalCompare.views.map(v => v.n())")
        from medal.viz.timeline import positions
        assert n == [len(positions(parent)), len(positions(child))]
        # the shared timeline's Next steps both views
        pg.click(".mv-cmp-controls .mv-next")
        s1 = pg.evaluate(STATE)
        assert (s1["row"], s1["a"], s1["b"]) == (1, 1, 1)
        assert s1["ta"] != s0["ta"] and s1["tb"] != s0["tb"]
        pg.keyboard.press("ArrowRight")
        assert pg.evaluate(STATE)["row"] == 2
        # Where they part: the parting row, the cause, each run's own step there
        pg.click(".mv-cmp-controls .mv-toPart")
        s2 = pg.evaluate(STATE)
        assert s2["row"] == cmp.part_row and "they part here" in s2["caption"]
        i, j = cmp.rows[cmp.part_row]
        assert (s2["a"], s2["b"]) == (i, j)
        assert s2["da"] != s2["db"]          # the two steps unmask other tokens
        panel = pg.inner_text(".mv-cmp-part")
        assert "Where they part" in panel and "forced action" in panel
        side = pg.inner_text(".mv-cmp-side")
        assert parent["result"]["answer"] in side and child["result"]["answer"] in side
        # the slider moves both too
        pg.evaluate("() => { const s = window.medalCompare.el.slider; s.value = '0';"
                    " s.dispatchEvent(new Event('input')); }")
        s3 = pg.evaluate(STATE)
        assert (s3["row"], s3["a"], s3["b"]) == (0, 0, 0)
        # a tab chosen in one view is chosen in the other
        pg.click(".mv-cmp-col[data-side=a] .mv-tab[data-tab=answer]")
        assert pg.evaluate("() => window.medalCompare.views.map(v => v.tab)") == ["answer"] * 2
        ARTIFACTS.mkdir(exist_ok=True)
        pg.screenshot(path=str(ARTIFACTS / "compare-export.png"))
        assert blocked == [] and errors == []
    finally:
        ctx.close()


def test_diff_html_on_the_command_line(pair, tmp_path, capsys):
    from medal.cli import main
    from medal.trace import write_trace
    parent, child = pair
    a, b = tmp_path / "parent.json", tmp_path / "fork.json"
    write_trace(parent, a)
    write_trace(child, b)
    out = tmp_path / "cmp.html"
    assert main(["diff", str(a), str(b), "--html", str(out)]) == 1
    assert "wrote" in capsys.readouterr().out
    html = out.read_text(encoding="utf-8")
    assert "MedalViewer.compare" in html and not re.search(r"https?://[^\"' ]*\.js", html)
    assert not list(tmp_path.glob(".*.part"))        # written through a temporary file
    before = a.read_bytes()
    assert main(["diff", str(a), str(b), "--html", str(a)]) == 2   # never over an input
    assert "is also the input" in capsys.readouterr().err and a.read_bytes() == before
