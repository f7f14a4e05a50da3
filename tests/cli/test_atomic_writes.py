"""Every file the CLI writes is written atomically (issue 21): a kill at the first write
or a full disk leaves the previous file intact and no partial file; an output that is
also an input is refused."""
from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from work import HANG

from medal import files
from medal.cli import main
from medal.config import GenerationConfig
from medal.engine import Run
from medal.trace import dumps, write_trace

ROOT = Path(__file__).resolve().parents[2]
OLD = "<html>the previous, good page</html>\n"


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory, builtin_model):
    run = Run(builtin_model, problem={"numbers": [4, 18, 13], "target": 20}, strategy="medal",
              config=GenerationConfig(seed=0, max_iterations=4, candidates=2, lc=2),
              trace=True)
    run.finish()
    path = tmp_path_factory.mktemp("t") / "t.json"
    write_trace(json.loads(dumps(run.trace)), path)
    return path


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".part")]


class _FullDisk:
    """A file object that takes 1 MiB, then fails as a full disk does."""

    def __init__(self, fh):
        self.fh = fh

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.fh.close()

    def write(self, data):
        self.fh.write(data[: 2 ** 20])
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name):
        return getattr(self.fh, name)


def test_a_full_disk_leaves_the_old_file_and_exits_2(tmp_path, trace_file, monkeypatch, capsys):
    out = tmp_path / "out.html"
    out.write_text(OLD)
    real = os.fdopen
    monkeypatch.setattr(files.os, "fdopen", lambda fd, mode="r", *a, **k: _FullDisk(real(fd, mode, *a, **k)))
    assert main(["export", str(trace_file), str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "No space left" in err and err.count("\n") == 1
    assert out.read_text() == OLD
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("what", ["export", "generate", "bench"])
def test_a_kill_at_the_first_write_leaves_the_old_file(tmp_path, trace_file, what):
    """The process is killed (SIGKILL) at its first write to the output, as the issue's
    strace reproducer did: the old file stays whole."""
    out = tmp_path / ("out.html" if what == "export" else "out.json")
    out.write_text(OLD)
    argv = {"export": ["export", str(trace_file), str(out)],
            "generate": ["generate", "--problem", '{"numbers": [4, 18, 13], "target": 20}',
                         "--strategy", "greedy", "--trace", str(out)],
            "bench": ["bench", "--n", "1", "--strategies", "greedy", "--out", str(out),
                      "--no-progress"]}[what]
    code = f"""
import os, signal, sys
import medal.files as f
real = os.fdopen
class Killer:
    def __init__(self, fh): self.fh = fh
    def __enter__(self): return self
    def __exit__(self, *a): self.fh.close()
    def write(self, data): os.kill(os.getpid(), signal.SIGKILL)
    def __getattr__(self, n): return getattr(self.fh, n)
f.os.fdopen = lambda fd, mode="r", *a, **k: Killer(real(fd, mode, *a, **k))
from medal.cli import main
sys.exit(main({argv!r}))
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=HANG)
    assert proc.returncode == -9, proc.stderr[-2000:]
    assert out.read_text() == OLD
    assert out.stat().st_size == len(OLD)


def test_an_output_that_is_its_input_is_refused(trace_file, capsys):
    before = trace_file.read_bytes()
    assert main(["export", str(trace_file), str(trace_file)]) == 2
    assert "is also the input" in capsys.readouterr().err
    assert trace_file.read_bytes() == before
    # the same file by another name
    other = trace_file.parent / "." / trace_file.name
    assert main(["export", str(trace_file), str(other)]) == 2


def test_writes_keep_the_files_permissions(tmp_path):
    path = tmp_path / "x.json"
    path.write_text("old")
    os.chmod(path, 0o640)
    files.write_atomic(path, "new")
    assert path.read_text() == "new" and (os.stat(path).st_mode & 0o777) == 0o640
    assert leftovers(tmp_path) == []


def test_a_kill_at_fsync_leaves_a_part_file_the_next_write_removes(tmp_path):
    """Issue 31: a SIGKILL between the write and the rename (at fsync, as the campaign's
    strace did) keeps the old file but leaves the temporary file; the next write of the
    same file removes it, and nothing else."""
    out = tmp_path / "out.html"
    out.write_text(OLD)
    code = f"""
import os, signal
import medal.files as f
f.os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)
f.write_atomic({str(out)!r}, "x" * 100000)
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=HANG)
    assert proc.returncode == -9, proc.stderr[-2000:]
    assert out.read_text() == OLD
    left = leftovers(tmp_path)
    assert len(left) == 1 and left[0].startswith(".out.html.")   # what a SIGKILL leaves
    # a live writer's file, another file's, and an old-style recent one stay
    live = tmp_path / f".out.html.{os.getpid()}.abcdefgh.part"
    live.write_text("being written")
    other = tmp_path / ".other.html.1.abcdefgh.part"
    other.write_text("not ours")
    recent_old_style = tmp_path / ".out.html.abcdefgh.part"
    recent_old_style.write_text("maybe being written by an older version")
    files.write_atomic(out, "new")
    assert out.read_text() == "new"
    assert sorted(leftovers(tmp_path)) == sorted([live.name, other.name,
                                                  recent_old_style.name])
    # an old-style leftover older than an hour goes too
    os.utime(recent_old_style, (0, 0))
    files.write_atomic(out, "newer")
    assert sorted(leftovers(tmp_path)) == sorted([live.name, other.name])
