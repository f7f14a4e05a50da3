"""Issue 40's low items, as a user meets them on the command line: outputs checked before
any work, empty and negative values refused with one line, and the export page (``medal
export``) neither expanding a title's placeholders nor letting a trace's bidirectional
text or a long token spill over the page."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import medal.models
from medal.cli import main
from medal.trace import dumps, load_trace

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "medal" / "assets" / "examples" / "countdown-medal-fixes-greedy.json"
P = '{"numbers": [4, 18, 13], "target": 20}'
#: Debian's Chromium; MEDAL_CHROMIUM names another build of it (e.g. one unpacked from its
#: package into a folder, with LD_LIBRARY_PATH set by a wrapper script)
CHROMIUM = os.environ.get("MEDAL_CHROMIUM", "/usr/bin/chromium")


@pytest.fixture
def no_model(monkeypatch):
    """Loading a model is the work a refused command must not start: counted."""
    loads: list = []

    def load_model(*args, **kwargs):
        loads.append(args)
        raise AssertionError("the command loaded a model before checking its output")
    monkeypatch.setattr(medal.models, "load_model", load_model)
    return loads


@pytest.mark.parametrize("argv, flag", [
    (["generate", "--problem", P, "--trace", "/proc/x.json"], "--trace /proc/x.json"),
    (["bench", "--n", "1", "--strategies", "greedy", "--out", "/proc/x.json"],
     "--out /proc/x.json"),
])
def test_an_output_in_a_folder_that_takes_no_file_is_refused_first(argv, flag, no_model,
                                                                   capsys):
    """/proc is a folder every permission check passes as root, yet no file can be made
    in it: the whole job ran before the write failed (issue 40). Now a temporary file is
    tried first, as the atomic write makes one."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {flag}: cannot create a file in /proc") and \
        "writable folder" in err and err.count("\n") == 1
    assert no_model == []


@pytest.mark.parametrize("argv, message", [
    (["generate", "--problem", P, "--trace", ""], "--trace needs a file name, got ''"),
    (["generate", "--problem", P, "--mask-id", "-1"],
     "--mask-id must be a token id from 0 to the vocabulary size - 1, got -1"),
    (["bench", "--n", "1", "--mask-id", "-5"], "--mask-id must be a token id"),
])
def test_an_empty_trace_name_and_a_negative_mask_id_are_refused(argv, message, no_model,
                                                                 capsys):
    """Both were accepted silently: ``--trace ''`` ran and wrote no trace."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: " + message) and err.count("\n") == 1
    assert no_model == []


def _hostile_trace(tmp_path, prompt: str, token: str | None = None) -> Path:
    trace = load_trace(EXAMPLE)
    trace["run"]["prompt"] = prompt
    if token is not None:
        for step in trace["decode"]:
            step["token_texts"] = [token] + step["token_texts"][1:]
    path = tmp_path / "hostile.json"
    path.write_text(dumps(trace), encoding="utf-8")
    return path


def test_the_export_title_is_substituted_after_the_placeholders(tmp_path, capsys):
    """A prompt of "{{VIS_JS}}{{JS}}{{CSS}}" grew the page by 590 kB of vis-network inside
    <title>: the title was substituted first, then scanned for the later placeholders."""
    sizes, titles = {}, {}
    for name, prompt in (("plain", "Use 4, 18, 13 to make 20.XXXXXXXXXXXX"),
                         ("placeholders", "{{VIS_JS}}{{JS}}{{CSS}}{{DATA}}")):
        src = _hostile_trace(tmp_path, prompt)
        out = tmp_path / f"{name}.html"
        assert main(["export", str(src), str(out)]) == 0
        page = out.read_text(encoding="utf-8")
        titles[name] = re.search("<title>(.*?)</title>", page, re.S).group(1)
        sizes[name] = len(page)
    assert titles["placeholders"] == "MEDAL trace: medal on {{VIS_JS}}{{JS}}{{CSS}}{{DATA}}"
    # the same page around a title of the same length (the data differ by the prompt only)
    assert abs(sizes["placeholders"] - sizes["plain"]) < 200, sizes


def _chromium():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing: apt-get install chromium (or set MEDAL_CHROMIUM)")
    return pytest.importorskip("playwright.sync_api", reason="pip install playwright")


def test_bidirectional_text_and_a_long_token_stay_in_their_place(tmp_path):
    """In the exported page: a right-to-left override in the prompt (U+202E) reversed the
    rest of the header line (the strategy and the model after it); a 190-character token
    widened the page from 1,024 to 1,517 px. Every position is drawn and measured."""
    sync_api = _chromium()
    src = _hostile_trace(tmp_path, "Use 4, 18, \u202e13 to make 20.", "W" * 190)
    out = tmp_path / "page.html"
    assert main(["export", str(src), str(out)]) == 0
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM,
                                    args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1024, "height": 768})
            page.goto(out.as_uri())
            page.wait_for_function("window.medalViewer && window.medalViewer.store")
            boxes = page.evaluate("""() => {
                const p = document.querySelector('.mv-prompt'), m = p.nextElementSibling;
                return [p.getBoundingClientRect().right, m.getBoundingClientRect().left]; }""")
            assert boxes[1] >= boxes[0] - 1, f"the text after the prompt moved: {boxes}"
            widest = []
            for tab in ("Tree", "Unmasking order"):
                page.click(f'.mv-tab:text-is("{tab}")')
                n = page.evaluate("window.medalViewer.store.states.length")
                for i in range(n):
                    page.evaluate(f"window.medalViewer.show({i})")
                    widest.append((page.evaluate("document.documentElement.scrollWidth"), i, tab))
            assert max(widest)[0] <= 1024, max(widest)
        finally:
            browser.close()
