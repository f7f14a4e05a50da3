"""Counting work instead of timing it (issue 40): a test that bounds how long something
takes fails on a loaded or slower machine, and passes a slow algorithm on a fast one.
:func:`lines_run` counts the Python lines a call executes (``sys.settrace``: the same
count on any machine, under any load, for the same inputs), and stops the call once it
passes a ceiling, so a quadratic regression ends as a failure, never as a hang.

What it does not see is work inside C (a ``sort``, a ``json.loads``): tests bound those by
counting the calls that do it, or the memory they take (tracemalloc).
"""
from __future__ import annotations

import sys


class TooMuchWork(AssertionError):
    """The call executed more lines than its ceiling."""


def lines_run(fn, most: int | None = None):
    """``(fn(), lines)``: its result and the Python lines it executed (in this thread);
    TooMuchWork as soon as the count passes ``most``."""
    count = 0
    previous = sys.gettrace()

    def local(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
            if most is not None and count > most:
                sys.settrace(previous)
                raise TooMuchWork(f"more than {most:,} Python lines")
        return local

    def call(frame, event, arg):
        return local

    sys.settrace(call)
    try:
        out = fn()
    finally:
        sys.settrace(previous)
    return out, count


def growth(fn, small, large, most: int | None = None) -> float:
    """How the lines :func:`lines_run` counts grow from ``fn(small)`` to ``fn(large)``:
    ``lines(large) / lines(small)`` (for a linear ``fn`` about ``large / small``)."""
    _, a = lines_run(lambda: fn(small), most)
    _, b = lines_run(lambda: fn(large), most)
    return b / a


#: a ceiling for a child process, a page or a server that hangs -- never a claim about
#: speed, so far above any load that only a hang reaches it (an hour)
HANG = 3600


def wait_for_server(proc, url: str, ceiling: float = HANG) -> str:
    """Wait until ``proc`` answers ``url`` (Streamlit's ``/_stcore/health``): the body of
    the first answer. Waits on the process, not on a clock: while it is alive and not yet
    listening, it is starting (a loaded machine takes longer, that is all); if it exits,
    AssertionError with its exit status. ``ceiling`` only ends a hang."""
    import time
    import urllib.request
    start = time.monotonic()
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited with status {proc.returncode} before "
                                 f"answering {url}")
        try:
            with urllib.request.urlopen(url, timeout=60) as r:
                return r.read().decode()
        except OSError:
            pass
        if time.monotonic() - start > ceiling:
            raise AssertionError(f"the server is alive but has not answered {url} "
                                 f"in {ceiling:.0f} s: a hang")
        time.sleep(0.5)


def increments(fn, n: int, most: int | None = None) -> float:
    """How the extra work grows when the size doubles, whatever the fixed work around it:
    ``(lines(4n) - lines(2n)) / (lines(2n) - lines(n))`` -- 2 for work linear in the size,
    4 for quadratic, 8 for cubic."""
    w = [lines_run(lambda: fn(k * n), most)[1] for k in (1, 2, 4)]
    return (w[2] - w[1]) / (w[1] - w[0])


def calls_run(fn):
    """``(fn(), calls)``: its result and the Python and C function calls it made
    (``sys.setprofile``: the same count on any machine, under any load)."""
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    sys.setprofile(count)
    try:
        out = fn()
    finally:
        sys.setprofile(None)
    return out, calls
