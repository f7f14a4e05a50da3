"""Two runs side by side on one timeline (issue 19): ``medal.compare`` and its offline
HTML page (``Comparison.save_html``, ``medal diff A B --html``), in Chromium with every
request blocked; and the app's Compare view and What if… (a fork opens beside its
original).
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_browser import (ARTIFACTS, CHROMIUM_ARGS, browser, expect,  # noqa: E402,F401
                          offline_session, server, wait_idle)

from viewer_checks import open_offline  # noqa: E402

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
    return open_offline(browser, path, {"width": 1440, "height": 1000},
                        "window.medalCompare && window.medalCompare.views.length === 2")


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
        from medal.timeline import positions
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


def test_one_numbering_of_decode_steps_everywhere(browser, pair, tmp_path, capsys):
    """Issue 28 #4: the step a fork forced was "step 4" in the viewer's header, "step 3" in
    the Compare row, "step 5 of 28" in the progress line and /decode/2/ in "Where they
    part"; copying "step 3" into `medal fork --step 3` forked another step. Every view
    and the command line now name it "decode step K", K the number `medal fork --step`
    takes, and no internal phase name (phase_c) shows."""
    from medal.cli import main
    from medal.trace import write_trace
    parent, child = pair
    k = child["fork"]["step"]
    cmp = medal.compare(parent, child)
    path = cmp.save_html(tmp_path / "compare.html")
    ctx, pg, blocked, errors = open_page(browser, path)
    try:
        pg.click(".mv-cmp-controls .mv-toPart")
        s = pg.evaluate(STATE)
        progress = pg.locator(".mv-cmp-col[data-side=a] .mv-caption").inner_text()
        panel = pg.inner_text(".mv-cmp-part")
        seen = {"header A": s["ta"], "header B": s["tb"], "Compare row": s["caption"],
                "Where they part": panel, "step detail": s["da"]}
        for where, text in seen.items():
            assert f"decode step {k}" in text, (where, text)
            named = {int(x) for x in re.findall(r"decode step (\d+)", text)}
            assert named == {k}, (where, text)
        assert "/decode/" not in panel.replace(f"(/decode/", "")   # a path only beside its words
        assert not re.search(r"\bstep \d+ of \d+", progress), progress   # a count, not a name
        assert "phase_c" not in pg.inner_text("body")
        assert blocked == [] and errors == []
    finally:
        ctx.close()
    a, b = tmp_path / "parent.json", tmp_path / "fork.json"
    write_trace(parent, a)
    write_trace(child, b)
    assert main(["diff", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert f"decode step {k}" in out and "phase_c" not in out, out
    # the number read off the page is the one `medal fork --step` takes
    rec = next(d for d in parent["decode"] if d["step"] == k)
    again = tmp_path / "again.json"
    assert main(["fork", str(a), "--step", str(k), "--action",
                 f"{rec['slots'][0]}:#{rec['tokens'][0]}", "--trace", str(again), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["fork"]["step"] == k and report["identical_to_parent"] is True


# ---------------------------------------------------------------------- the app

@pytest.fixture
def app(browser, server):
    context, pg, offline = offline_session(browser, server, {"width": 1400, "height": 1600})
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    context.close()
    assert offline.blocked == [], f"requests left the machine: {offline.blocked}"
    assert errors == []


CMP = """() => { const c = globalThis.__medalCompare; if (!c || !c.root.isConnected) return null;
  return {row: c.row, rows: c.n(), names: c.data.names, part: c.data.part,
          a: Number(c.views[0].root.dataset.position), b: Number(c.views[1].root.dataset.position),
          na: c.views[0].n(), nb: c.views[1].n(), caption: c.el.caption.textContent}; }"""


def test_app_compares_two_examples_and_shows_where_they_part(app):
    from medal.examples import list_examples
    shipped = list_examples()
    pg = app
    pg.get_by_text("Compare", exact=True).click()
    expect(pg.locator(".mv-cmp-part")).to_be_visible(timeout=60_000)
    state = pg.evaluate(CMP)
    assert state["names"] == [f"Example: {shipped[0].title}", f"Example: {shipped[1].title}"]
    assert state["na"] > 10 and state["nb"] > 10           # both runs' frames are there
    part = pg.inner_text(".mv-cmp-part")
    assert "Where they part" in part and "configuration" in part and "prompt" in part
    # the shared timeline moves both views
    pg.locator(".mv-cmp-controls .mv-next").click()
    pg.locator(".mv-cmp-controls .mv-next").click()
    s = pg.evaluate(CMP)
    assert (s["row"], s["a"], s["b"]) == (2, 2, 2)
    pg.locator(".mv-cmp-controls .mv-toPart").click()
    s = pg.evaluate(CMP)
    assert s["row"] == s["part"]["row"] and "they part here" in s["caption"]
    side = pg.inner_text(".mv-cmp-side")
    from medal.examples import load_example
    for ex in shipped[:2]:
        assert load_example(ex)["result"]["answer"] in side
    pg.screenshot(path=str(ARTIFACTS / "compare-app-examples.png"))


#: counts the page's WebSocket messages that carry the viewer's library (viewer.js's code)
WS_LIB = """(() => { globalThis.__lib = 0; globalThis.__bytes = 0; const O = WebSocket;
  const dec = new TextDecoder();
  globalThis.WebSocket = function (...a) { const w = new O(...a);
    w.addEventListener("message", (e) => {
      const b = e.data instanceof ArrayBuffer ? e.data : null;
      if (!b) return;
      globalThis.__bytes += b.byteLength;
      if (dec.decode(b).includes("Viewer.prototype.drawTree")) globalThis.__lib += 1; });
    return w; };
  globalThis.WebSocket.prototype = O.prototype; Object.assign(globalThis.WebSocket, O); })()"""


def pick(pg, label: str, option: str) -> None:
    """Choose ``option`` in the Streamlit selectbox labelled ``label``."""
    pg.get_by_label(label, exact=True).click()
    pg.get_by_role("option", name=option, exact=True).click()


def test_app_compare_opened_first_gets_the_library_once(browser, server):
    """Issue 18: the Compare view carried the viewer's library (~0.5 MB) as its code with
    every run of the page. Opened first (the URL's ?source=compare: no viewer has brought
    the library yet), it gets the library once; choosing another pair brings that pair's
    frames, not the library again."""
    from medal.examples import list_examples
    shipped = list_examples()
    context, pg, offline = offline_session(browser, server, {"width": 1400, "height": 1200},
                                           query="?source=compare")
    context.add_init_script(WS_LIB)
    pg.reload()
    expect(pg.locator(".mv-cmp-part")).to_be_visible(timeout=60_000)
    assert pg.evaluate("globalThis.__lib") == 1
    for other in (shipped[2], shipped[1]):
        pg.evaluate("globalThis.__lib = 0; globalThis.__bytes = 0")
        pick(pg, "Run B", f"Example: {other.title}")
        pg.wait_for_function(f"(() => {{ const s = ({CMP})(); return s && s.names[1] === "
                             f"{json.dumps('Example: ' + other.title)}; }})()", timeout=60_000)
        wait_idle(pg)
        assert pg.evaluate("globalThis.__lib") == 0, "the library came again"
        assert pg.evaluate("globalThis.__bytes") > 20_000       # the new pair's frames did
    context.close()
    assert offline.blocked == []


def test_app_what_if_forks_and_opens_beside_the_original(app):
    pg = app
    pg.get_by_role("button", name="Countdown: MEDAL fixes greedy's answer").click()
    pg.wait_for_function("globalThis.__medalViewer && globalThis.__medalViewer.store && "
                         "globalThis.__medalViewer.store.key === "
                         "'example-countdown-medal-fixes-greedy'", timeout=60_000)
    pg.locator(".mv .mv-tab[data-tab=inspector]").first.click()
    btn = pg.locator(".mv-whatif-node")
    expect(btn).to_be_visible(timeout=10_000)
    node = int(btn.inner_text().rsplit(" ", 1)[1])
    btn.click()
    expect(pg.get_by_text(f"Force tokens at node {node} of this example")).to_be_visible(
        timeout=30_000)
    expect(pg.get_by_text("Token at slot 0")).to_be_visible()
    pg.get_by_text("then decode (phase C from it)").click()
    expect(pg.get_by_role("radio", name="then decode (phase C from it)")).to_be_checked()
    wait_idle(pg)               # the page has rerun with the choice: the button carries it
    pg.get_by_role("button", name="Fork and compare").click()
    expect(pg.locator(".mv-cmp-part")).to_be_visible(timeout=180_000)
    s = pg.evaluate(CMP)
    assert s["names"][0] == "Example: Countdown: MEDAL fixes greedy's answer"
    assert s["names"][1].startswith("Fork #1: 0:") and f"at node {node}, then decode" in s["names"][1]
    assert s["part"]["cause"] == "forced action"
    assert s["row"] == s["part"]["row"]                      # it opens where they part
    assert s["na"] > 10 and s["nb"] > 10
    assert "forced action" in pg.inner_text(".mv-cmp-part")
    pg.locator(".mv-cmp-controls .mv-next").click()
    s2 = pg.evaluate(CMP)
    assert s2["row"] == s["row"] + 1 and s2["a"] > s["a"] and s2["b"] > s["b"]
    pg.screenshot(path=str(ARTIFACTS / "compare-app-fork.png"))


def test_app_what_if_needs_the_model_that_made_the_trace(app, tmp_path):
    """An uploaded trace from a model this server does not offer: the form says it cannot
    be forked here, and nothing breaks."""
    from medal.trace import write_trace
    from medal.examples import list_examples, load_example
    trace = load_example(list_examples()[0])
    trace["run"]["model"]["name"] = "llada-8b-instruct"
    path = tmp_path / "other-model.json"
    write_trace(trace, path)
    pg = app
    pg.get_by_text("Uploaded trace", exact=True).click()
    pg.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(str(path))
    expect(pg.get_by_text("Loaded other-model.json", exact=False)).to_be_visible(timeout=30_000)
    pg.locator(".mv .mv-tab[data-tab=inspector]").first.click()
    pg.locator(".mv-whatif-node").click()
    expect(pg.get_by_text("which this server does not offer", exact=False)).to_be_visible(
        timeout=30_000)
    expect(pg.get_by_role("button", name="Fork and compare")).to_have_count(0)
    # the page still works: the trace can be compared
    pg.get_by_text("Compare", exact=True).click()
    expect(pg.locator(".mv-cmp-part")).to_be_visible(timeout=60_000)


def test_app_what_if_at_a_decode_step(app):
    """At a phase-C step the inspector offers a fork of that step; the fork then decodes
    and opens beside the original, parting at that step."""
    from medal.examples import list_examples, load_example
    from medal.timeline import positions
    ex = next(e for e in list_examples() if e.name == "countdown-medal-fixes-greedy")
    trace = load_example(ex)
    pos = positions(trace)
    i = [k for k, p in enumerate(pos) if p.kind == "decode"
         and trace["decode"][p.index]["phase"] == "phase_c"][3]
    step = trace["decode"][pos[i].index]["step"]
    pg = app
    pg.get_by_role("button", name=ex.title).click()
    pg.wait_for_function("globalThis.__medalViewer && globalThis.__medalViewer.store && "
                         f"globalThis.__medalViewer.store.key === 'example-{ex.name}'",
                         timeout=60_000)
    pg.evaluate(f"globalThis.__medalViewer.go({i})")
    pg.locator(".mv .mv-tab[data-tab=inspector]").first.click()
    pg.locator(".mv-whatif-step").click()
    expect(pg.get_by_text(f"Force tokens at decode step {step} of this example")).to_be_visible(
        timeout=30_000)
    expect(pg.get_by_text("then decode (phase C from it)")).to_have_count(0)   # a step decodes on
    pg.get_by_role("button", name="Fork and compare").click()
    expect(pg.locator(".mv-cmp-part")).to_be_visible(timeout=180_000)
    s = pg.evaluate(CMP)
    assert f"at step {step}, then decode" in s["names"][1]
    assert s["part"]["cause"] == "forced action" and s["row"] == s["part"]["row"]
    assert s["part"]["position"]["kind"] == "decode"
