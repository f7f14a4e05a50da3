"""The example notebook (examples/medal.ipynb) runs from top to bottom, and every display
it makes is the offline viewer: a run and a trace show themselves, ``medal.show`` shows
either. The displayed HTML is then opened in Chromium (tests/browser/test_viewer.py drives
the same viewer further): it draws the tree, steps with the keys, and asks for nothing
off the page."""
from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="pip install -e .[test] (nbformat, nbclient)")
nbclient = pytest.importorskip("nbclient", reason="pip install -e .[test] (nbclient, ipykernel)")
pytest.importorskip("ipykernel", reason="pip install -e .[test] (ipykernel)")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "medal.ipynb"
CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def executed():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(ROOT)}})
    client.execute()
    return nb


def _html_outputs(nb) -> list[str]:
    return [out["data"]["text/html"] for cell in nb.cells if cell.cell_type == "code"
            for out in cell.get("outputs", []) if "text/html" in out.get("data", {})]


def test_notebook_runs_and_every_display_is_the_viewer(executed):
    shown = _html_outputs(executed)
    assert len(shown) == 3                      # the run, medal.show(trace), medal.Trace
    for out in shown:
        assert out.startswith('<iframe class="medal-show" srcdoc="')
        doc = html.unescape(re.search(r'srcdoc="(.*?)"', out, re.S).group(1))
        assert "default-src 'none'" in doc and "MedalViewer.mount" in doc
        assert not re.search(r'<(script|img|iframe|link)[^>]+(src|href)=', doc)


def test_the_displayed_viewer_works_offline(executed, tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing")
    sync_api = pytest.importorskip("playwright.sync_api")
    out = _html_outputs(executed)[0]
    doc = html.unescape(re.search(r'srcdoc="(.*?)"', out, re.S).group(1))
    page_file = tmp_path / "cell.html"
    page_file.write_text(doc, encoding="utf-8")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1024, "height": 768})
        asked = []
        page.on("request", lambda r: asked.append(r.url) if not r.url.startswith(("file:", "data:", "blob:")) else None)
        page.goto(page_file.as_uri())
        page.wait_for_function("window.medalViewer && globalThis.__medalTreeDrawn", timeout=30000)
        n = page.evaluate("medalViewer.n()")
        assert page.evaluate("medalViewer.pos") == n - 1
        page.keyboard.press("Home")
        for _ in range(3):
            page.keyboard.press("ArrowRight")
        assert page.evaluate("medalViewer.pos") == 3
        assert page.evaluate("medalViewer.nodes.length") >= 1
        browser.close()
    assert asked == []
