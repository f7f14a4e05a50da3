"""Writing the files the CLI makes, atomically: the whole new content or the old file,
never a mix (issue 21).

Every output goes to a temporary file in the same directory, is flushed to disk, and
then renamed over the target (``os.replace``: atomic on POSIX and Windows). A kill, a
full disk or an exception mid-write leaves the previous file as it was and no partial
file behind -- except a SIGKILL, which leaves the temporary file; it is named after its
writer's process (``.NAME.<pid>.XXXXXXXX.part``) and the next write of NAME removes it.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import InputError


#: a leftover of the old naming (``.NAME.XXXXXXXX.part``, no writer's id) this old is
#: removed by the next write to NAME: no write takes an hour
STALE_PART_S = 3600


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True   # someone else's process: assume it is still writing
    return True


def clean_leftovers(path: str | Path) -> list[Path]:
    """Remove the temporary files that killed writes of ``path`` left beside it (a
    SIGKILL between the write and the rename leaves no chance to clean up): every
    ``.NAME.<pid>.XXXXXXXX.part`` whose writer process is gone, and old-style
    ``.NAME.XXXXXXXX.part`` files older than :data:`STALE_PART_S`. Called by every
    :func:`write_atomic`, so the next write of a file cleans what the last one left.
    Returns what it removed; never raises."""
    import time

    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    head = f".{path.name}."
    removed = []
    try:
        names = [n for n in os.listdir(folder) if n.startswith(head) and n.endswith(".part")]
    except OSError:
        return removed
    for name in names:
        middle = name[len(head):-len(".part")]
        pid_text, _, rand = middle.partition(".")
        try:
            if rand and "." not in rand and pid_text.isascii() and pid_text.isdigit():
                stale = not _alive(int(pid_text))
            elif not rand and len(middle) == 8:   # the old naming (mkstemp's 8 characters)
                stale = time.time() - os.lstat(folder / name).st_mtime > STALE_PART_S
            else:
                continue
            if stale:
                os.unlink(folder / name)
                removed.append(folder / name)
        except (OSError, ValueError, OverflowError):
            continue
    return removed


def write_atomic(path: str | Path, data: str | bytes, encoding: str = "utf-8") -> Path:
    """Write ``data`` to ``path`` through a temporary file renamed over it. The temporary
    file is ``.NAME.<pid>.XXXXXXXX.part`` beside it; what a killed earlier write left
    there is removed first (:func:`clean_leftovers`)."""
    path = Path(path)
    raw = data.encode(encoding) if isinstance(data, str) else data
    clean_leftovers(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".",
                               prefix=f".{path.name}.{os.getpid()}.", suffix=".part")
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
