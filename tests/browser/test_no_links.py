"""No links from data, in Chromium (issue 21): text from a trace or a results file --
bare URLs, www. hosts, e-mail addresses, Markdown links and images, HTML -- is shown as
text on every page that shows it: no <a> made from it, no image fetched.

Reuses test_browser.py's server and its request blocking; every request the page makes
is recorded too (the payloads point at 127.0.0.1:8618, which the blocking would let
through), and none may name a payload.
"""
from __future__ import annotations

import gzip
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_browser import (browser, expect, offline_session, server,  # noqa: E402,F401
                          wait_idle)

HOSTILE = Path(__file__).resolve().parents[1] / "data" / "hostile"
PAYLOAD = ("evil.example", "8618", "mailto:", "javascript:", ".gif")


def hostile_file(tmp_path: Path, name: str, as_name: str | None = None) -> Path:
    path = tmp_path / (as_name or name)
    path.write_bytes(gzip.decompress((HOSTILE / f"{name}.gz").read_bytes()))
    return path


def links_from_data(pg) -> list[str]:
    """Every <a href> in the page and its frames that points at a payload."""
    found = []
    for frame in pg.frames:
        try:
            hrefs = frame.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
        except Exception:  # noqa: BLE001 -- a frame that went away
            continue
        found += [h for h in hrefs if any(p in h for p in PAYLOAD)]
    return found


def images_from_data(pg) -> list[str]:
    found = []
    for frame in pg.frames:
        try:
            srcs = frame.eval_on_selector_all("img[src]", "els => els.map(e => e.src)")
        except Exception:  # noqa: BLE001
            continue
        found += [s for s in srcs if any(p in s for p in PAYLOAD)]
    return found


@pytest.fixture
def session(browser, server):
    context, pg, offline = offline_session(browser, server, {"width": 1400, "height": 1400})
    requests: list[str] = []
    pg.on("request", lambda r: requests.append(r.url))
    yield pg, requests
    context.close()
    assert offline.blocked == [], f"requests left the machine: {offline.blocked}"


def check(pg, requests, where: str) -> None:
    wait_idle(pg)
    assert links_from_data(pg) == [], where
    assert images_from_data(pg) == [], where
    assert [u for u in requests if any(p in u for p in PAYLOAD)] == [], where


@pytest.mark.parametrize("name", ["web_autolink_links_in_trace.json",
                                  "web_markdown_trace.json"])
def test_a_trace_full_of_links_shows_none(session, tmp_path, name):
    pg, requests = session
    pg.get_by_text("Uploaded trace", exact=True).click()
    wait_idle(pg)
    pg.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(
        str(hostile_file(tmp_path, name)))
    expect(pg.get_by_text("Loaded", exact=False).first).to_be_visible(timeout=60_000)
    check(pg, requests, "after the upload (sidebar 'Loaded ...' line)")
    tabs = pg.get_by_role("tab")
    for i in range(tabs.count()):
        label = tabs.nth(i).inner_text()
        tabs.nth(i).click()
        check(pg, requests, f"tab {label!r}")
    # the candidate "why" box: the inspector of the winner
    pg.get_by_role("link", name="How MEDAL works").click()
    expect(pg.get_by_role("heading", name="1. Confidence-adjusted score")).to_be_visible(
        timeout=30_000)
    check(pg, requests, "How MEDAL works (its caption and examples)")


def test_a_results_file_full_of_links_shows_none(session, tmp_path):
    pg, requests = session
    pg.get_by_role("link", name="Benchmark").click()
    expect(pg.get_by_role("heading", name="Benchmark results")).to_be_visible(timeout=30_000)
    upload = pg.locator('[data-testid="stFileUploader"] input[type="file"]')
    # the file name itself is Markdown: an image (relative URL) and an autolinked host
    upload.set_input_files(str(hostile_file(
        tmp_path, "results_markdown_in_error.json",
        "![f](fname.gif) www.evil.example admin@evil.example.json")))
    expect(pg.get_by_text("Cannot read", exact=False)).to_be_visible(timeout=30_000)
    check(pg, requests, "an invalid results file's error")
    upload.set_input_files(str(hostile_file(tmp_path, "results_links_in_plot.json")))
    expect(pg.get_by_text("Loaded results_links_in_plot.json")).to_be_visible(timeout=30_000)
    expect(pg.locator('[data-testid="stPlotlyChart"] .main-svg').first).to_be_attached(
        timeout=30_000)
    check(pg, requests, "the frontier plot's labels and title")


def test_a_trace_full_of_links_shows_none_in_compare(session, tmp_path):
    """The Compare view (issue 19): a hostile trace uploaded to compare goes through the
    gate and its strings (prompt, tokens, file name) reach the page as text."""
    pg, requests = session
    pg.get_by_text("Compare", exact=True).click()
    expect(pg.locator(".mv-cmp-part")).to_be_visible(timeout=60_000)
    pg.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(
        str(hostile_file(tmp_path, "web_markdown_trace.json",
                         "![f](fname.gif) www.evil.example.json")))
    expect(pg.locator(".mv-cmp-head")).to_contain_text("evil", timeout=60_000)
    check(pg, requests, "the compare view with a hostile trace as B")
    for tab in ("answer", "cands", "inspector"):
        pg.locator(f".mv-cmp-col[data-side=b] .mv-tab[data-tab={tab}]").click()
        check(pg, requests, f"compare, tab {tab}")
