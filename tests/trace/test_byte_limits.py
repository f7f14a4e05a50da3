"""Every byte limit, at the limit, with text of every UTF-8 width (issue 40): a planted bug
-- the gate counting characters, not bytes -- passed the whole fast tier, because no test
fed multi-byte text near a limit.

The size limits counted in bytes: a trace (``loads_trace`` given text or bytes,
``load_trace`` given a file), a benchmark results file (``loads_results``) and the
warning ``medal generate`` gives for a trace above the app's upload limit. For each, a
document of exactly N bytes is read under a limit of N and refused under N - 1 with the
byte count in the message -- with 1-, 2-, 3- and 4-byte characters (ASCII, é, €, an emoji
outside the BMP), so a document of fewer characters than the limit but more bytes is
refused. (The gate's other limits -- a token's text, a prompt, an answer's texts -- are
counted in characters on purpose: tests/trace/test_trace_gate_strict.py.)
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from medal.errors import TraceError
from medal.trace import dumps, load_trace, loads_trace
from medal.trace.gate import size_text

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "medal" / "assets" / "examples" / "twins-medal-fixes-greedy.json"
#: one character of each UTF-8 width
WIDTHS = {1: "a", 2: "\u00e9", 3: "\u20ac", 4: "\U0001F600"}


def _padded(template: str, width: int, size: int) -> str:
    """``template`` (JSON with one ``"PAD"`` string) with PAD replaced by characters of
    ``width`` UTF-8 bytes (and ASCII for the remainder) so that the text is exactly
    ``size`` bytes."""
    base = len(template.replace("PAD", "").encode("utf-8"))
    room = size - base
    assert room >= width
    n, rest = divmod(room, width)
    text = template.replace("PAD", WIDTHS[width] * n + "a" * rest)
    assert len(text.encode("utf-8")) == size
    return text


@pytest.fixture(scope="module")
def trace_template():
    """A real trace whose prompt is the padding (a prompt holds up to 200,000 characters)."""
    trace = load_trace(EXAMPLE)
    trace["run"]["prompt"] = "PAD"
    return dumps(trace)


@pytest.mark.parametrize("width", sorted(WIDTHS))
@pytest.mark.parametrize("given", ["text", "bytes", "file"])
def test_a_trace_at_the_size_limit(trace_template, width, given, tmp_path):
    size = len(trace_template.encode()) + 40_000
    text = _padded(trace_template, width, size)
    if width > 1:   # fewer characters than bytes: a count of characters would pass it
        assert len(text) < size - 1

    def read(limit):
        if given == "text":
            return loads_trace(text, max_bytes=limit)
        if given == "bytes":
            return loads_trace(text.encode("utf-8"), max_bytes=limit)
        path = tmp_path / "t.json"
        path.write_bytes(text.encode("utf-8"))
        return load_trace(path, max_bytes=limit)
    assert read(size)["run"]["prompt"] == json.loads(text)["run"]["prompt"]
    with pytest.raises(TraceError, match=rf"{size:,} bytes; the limit is {size - 1:,} bytes"):
        read(size - 1)
    assert size_text(size, size - 1) in _refusal(read, size - 1)


def _refusal(read, limit) -> str:
    try:
        read(limit)
    except TraceError as exc:
        return str(exc)
    raise AssertionError("not refused")


@pytest.mark.parametrize("width", sorted(WIDTHS))
@pytest.mark.parametrize("given", ["text", "bytes"])
def test_a_results_file_at_the_size_limit(width, given):
    from medal.views.results import ResultsError, loads_results
    doc = {"task": "countdown", "model": "PAD", "problems": 10,
           "summary": {"greedy": {"n": 10, "accuracy": 0.5, "ci95": [0.2, 0.8],
                                  "mean_forwards": 28.0, "mean_sequence_forwards": 28.0}}}
    template = json.dumps(doc)
    size = len(template.encode()) + 5_000
    text = _padded(template, width, size)

    def read(limit):
        return loads_results(text if given == "text" else text.encode("utf-8"), limit)
    try:
        read(size)
    except ResultsError as exc:          # refused for its content, never for its size
        assert "bytes; the limit is" not in str(exc), exc
    with pytest.raises(ResultsError, match=rf"the file is {size:,} bytes; the limit is "
                                           rf"{size - 1:,} bytes"):
        read(size - 1)


@pytest.mark.parametrize("width", sorted(WIDTHS))
def test_a_written_traces_size_is_its_bytes(width, tmp_path):
    """``write_trace`` returns the file's size in bytes -- what ``medal generate`` holds
    against the app's upload limit -- whatever the width of the text it holds."""
    from medal.trace import write_trace
    trace = load_trace(EXAMPLE)
    trace["run"]["prompt"] = WIDTHS[width] * 5_000
    path = tmp_path / "t.json"
    size = write_trace(trace, path)
    assert size == path.stat().st_size >= 5_000 * width


def test_generate_warns_about_a_trace_above_the_upload_limit_in_bytes(capsys, tmp_path):
    """``medal generate --trace``'s warning: at the limit none, one byte above it one line
    naming both sizes in bytes; and the command prints it for a trace it wrote above it."""
    import medal.trace
    from medal.cli import main
    from medal.cli.checks import upload_limit_warning
    assert upload_limit_warning(20 * 2 ** 20, 20 * 2 ** 20) is None
    assert upload_limit_warning(20 * 2 ** 20 + 1, 20 * 2 ** 20) == (
        "medal: warning: the trace is 20,971,521 bytes, above the app's upload limit of "
        "20,971,520 bytes: the app will refuse it. Fewer --max-iterations or a shorter "
        "--gen-length make it smaller")
    limit, medal.trace.MAX_TRACE_BYTES = medal.trace.MAX_TRACE_BYTES, 1_000
    try:
        assert main(["generate", "--problem", '{"numbers": [4, 18, 13], "target": 20}',
                     "--strategy", "greedy", "--trace", str(tmp_path / "t.json")]) == 0
    finally:
        medal.trace.MAX_TRACE_BYTES = limit
    size = (tmp_path / "t.json").stat().st_size
    assert capsys.readouterr().err == upload_limit_warning(size, 1_000) + "\n"
