"""The Run page's controls and warnings in Chromium (issue 10, part C), where AppTest
alone covered them: "Run to end" in *animate* mode, a prompt the task cannot read, and K2
above what a node can have or above the engine's range.

Reuses ``test_browser``'s server, browser and ``page`` (a fresh session whose requests to
hosts that are not local are aborted and counted; the count must stay 0).
"""
from __future__ import annotations

import pytest

import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_browser import (ARTIFACTS, browser, click, expect, page,  # noqa: E402,F401
                          phase_is, server, set_number, shot, wait_idle)

SPEED = 0.5        # seconds per position (one of medal.viz.controller.SPEEDS)
HEADER = re.compile(r"^Phase: ")


def header(pg) -> str | None:
    heads = pg.get_by_role("heading", name=HEADER)
    try:
        return heads.first.inner_text(timeout=2_000).strip() if heads.count() else None
    except Exception:        # re-rendered between count() and inner_text()
        return None


def watch(pg, until, seconds: float) -> list[tuple[float, str]]:
    """The header's changes, (time, text), polled every 50 ms until ``until(changes)``."""
    changes: list[tuple[float, str]] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        text = header(pg)
        if text and (not changes or changes[-1][1] != text):
            changes.append((time.monotonic(), text))
            if until(changes):
                break
        pg.wait_for_timeout(50)
    return changes


def intermediate(changes) -> list[str]:
    return [t for _, t in changes if t not in ("Phase: Start", "Phase: Finished")]


def test_run_to_end_animates_at_the_chosen_speed(page):
    pg = page
    set_number(pg, "L_c: slots committed by the search", 2)
    set_number(pg, "C: candidates to collect", 2)
    set_number(pg, "Max iterations", 12)
    pg.get_by_text("Playback", exact=True).click()
    speed = pg.get_by_role("slider", name="Speed (seconds per position)")
    expect(speed).to_be_visible()
    speed.focus()
    speed.press("ArrowLeft")                     # 1.0 -> 0.5 s per position
    expect(speed).to_have_attribute("aria-valuetext", str(SPEED))
    pg.get_by_text("animate", exact=True).click()
    wait_idle(pg)

    click(pg, "Run to end")
    changes = watch(pg, lambda c: len(intermediate(c)) >= 4, 180)
    assert len(intermediate(changes)) >= 4, f"no animation: the header went {changes}"
    # the page stays usable while it animates: Pause stops it where it is ...
    pause = pg.get_by_role("button", name="Pause", exact=True)
    expect(pause).to_be_enabled()
    shot(pg, "13-animating")
    pause.click()
    expect(pg.get_by_role("button", name="Play", exact=True)).to_be_visible(timeout=30_000)
    wait_idle(pg)
    held = header(pg)
    pg.wait_for_timeout(int(4 * SPEED * 1000))
    assert header(pg) == held, "the animation went on after Pause"
    assert held != "Phase: Finished"
    # ... and Run to end animates on from there to the end of the run
    click(pg, "Run to end")
    more = watch(pg, lambda c: c[-1][1] == "Phase: Finished", 400)
    assert more and more[-1][1] == "Phase: Finished", f"never finished: {more[-6:]}"
    assert len(intermediate(more)) >= 3, f"jumped to the end: {more}"
    expect(pg.get_by_text(re.compile(r"^finished · position (\d+) of \1$"))).to_be_visible()
    # at the chosen speed: each position is shown for at least SPEED seconds (minus the
    # 50 ms polling on either side); a loaded machine only makes the steps slower
    gaps = [b[0] - a[0] for a, b in zip(changes, changes[1:])] + \
           [b[0] - a[0] for a, b in zip(more, more[1:])]
    assert min(gaps) >= SPEED - 0.15, f"steps faster than {SPEED} s: {sorted(gaps)[:5]}"
    print(f"animate: {len(changes) + len(more)} header changes, gaps "
          f"{min(gaps):.2f}-{max(gaps):.2f} s")


def test_malformed_prompt_is_flagged_before_the_run(page):
    pg = page
    prompt = pg.get_by_label("Prompt", exact=True)
    prompt.fill("make twenty please")
    prompt.press("Control+Enter")
    wait_idle(pg)
    warning = pg.locator('section[data-testid="stSidebar"] [data-testid="stAlert"]')
    expect(warning.get_by_text("not a countdown problem", exact=False)).to_be_visible(
        timeout=30_000)
    expect(pg.get_by_role("heading", name=HEADER)).to_have_count(0)   # nothing has run
    shot(pg, "14-malformed-prompt")
    prompt.fill("Use 4, 18, 13 to make 20.")
    prompt.press("Control+Enter")
    wait_idle(pg)
    expect(pg.get_by_text("not a countdown problem", exact=False)).to_have_count(0)


def test_k2_above_the_possible_and_above_the_range(page):
    pg = page
    set_number(pg, "K2: actions per expansion", 500)
    wait_idle(pg)
    click(pg, "Next phase")
    phase_is(pg, "Start")
    wait_idle(pg)
    expect(pg.get_by_text(re.compile(r"K2 = 500 is more than the actions a node can have: "
                                     r"at most K1 × open slots"))).to_be_visible()
    click(pg, "Reset")
    wait_idle(pg)
    set_number(pg, "K2: actions per expansion", 100000)
    wait_idle(pg)
    click(pg, "Next phase")
    wait_idle(pg)
    expect(pg.get_by_text("k2 must be between 1 and 1000", exact=False)).to_be_visible(
        timeout=30_000)
    expect(pg.get_by_role("heading", name=HEADER)).to_have_count(0)   # refused: no run
    shot(pg, "15-k2-refused")
