"""Writing the files the CLI makes, atomically: the whole new content or the old file,
never a mix (issue 21).

Every output goes to a temporary file in the same directory, is flushed to disk, and
then renamed over the target (``os.replace``: atomic on POSIX and Windows). A kill, a
full disk or an exception mid-write leaves the previous file as it was and no partial
file behind.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import InputError


def write_atomic(path: str | Path, data: str | bytes, encoding: str = "utf-8") -> Path:
    """Write ``data`` to ``path`` through a temporary file renamed over it."""
    path = Path(path)
    raw = data.encode(encoding) if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".",
                               prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        try:  # keep the permissions an existing file had (mkstemp makes it 0600)
            os.chmod(tmp, os.stat(path).st_mode & 0o777)
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether two paths name the same file (through links, ``./`` and case alike)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return Path(os.path.abspath(a)) == Path(os.path.abspath(b))


def refuse_overwriting_input(inputs, output: str | Path, flag: str) -> None:
    """An output that is also an input is refused (``export t.json t.json`` would put
    the page where the trace was)."""
    for src in inputs:
        if src and output and same_file(src, output):
            raise InputError(f"{flag} {output} is also the input {src}; give another file "
                             "name for the output")
