"""What a command-line value may be: ranges, JSON given as a flag, files to read and
files to write -- each refused with one line that says the fix."""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from ..errors import InputError, error_line


#: ranges of the flags that are not GenerationConfig fields (those: medal.config.RANGES)
MAX_PROBLEMS = 100_000


TRAIN_RANGES = {"steps": (1, 10_000_000), "batch_size": (1, 65_536), "layers": (1, 64),
                "width": (8, 4096), "prompt_length": (1, 4096), "answer_length": (1, 4096),
                "threads": (1, 1024)}


class Parser(argparse.ArgumentParser):
    """Bad flags give one ``error:`` line (and exit status 2), like every other error."""

    def error(self, message):
        self.exit(2, error_line(f"{message} (see {self.prog} --help)") + "\n")


def range_help(name: str, low, high) -> str:
    return f"{low}..{high}"


def check_range(name: str, value, low, high, flag: str | None = None) -> None:
    if value is not None and not low <= value <= high:
        raise InputError(f"{flag or '--' + name.replace('_', '-')} must be between {low} and "
                         f"{high}, got {value}")


def safe_json(text: str, what: str):
    """JSON from the command line or a file: any failure is an InputError naming it."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{what} is not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise InputError(f"{what} is nested too deeply") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise InputError(f"{what}: {exc}") from None


def check_problem(text: str | None) -> None:
    """A --problem that is JSON must parse within limits (the task then reads it)."""
    if text is not None and text.strip()[:1] in "{[":
        safe_json(text, "--problem")


def check_problems_file(path: str) -> None:
    """--problems: an existing, non-empty UTF-8 file of JSON lines."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"no problem file at {path}")
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path} is not UTF-8 text (byte {exc.start}); save it as UTF-8, one "
                         "JSON object per line") from None
    lines = [(i, line) for i, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        raise InputError(f"{path} holds no problems; write one JSON object per line")
    if len(lines) > MAX_PROBLEMS:
        raise InputError(f"{path} holds {len(lines)} problems; at most {MAX_PROBLEMS}")
    for i, line in lines:
        safe_json(line, f"{path}, line {i}")


def check_output(path: str | None, flag: str, directory: bool = False) -> None:
    """Fail before any work if an output could not be written: an empty name, a missing
    folder, a directory in the way, a device such as /dev/full, no permission, a folder
    that takes no new file (/proc, a read-only mount: tried with a temporary file, as the
    write itself will make one, whoever runs it -- root passes every permission check)."""
    if path is None:
        return
    if not str(path).strip():
        raise InputError(f"{flag} needs a file name, got {path!r} (leave the flag out to "
                         "write nothing)")
    p = Path(path)
    if directory:
        if p.exists() and not p.is_dir():
            raise InputError(f"{flag} {path} is not a directory")
        parent = p if p.is_dir() else p.parent
    else:
        if p.is_dir():
            raise InputError(f"{flag} {path} is a directory; give a file name")
        if p.exists() and not p.is_file():
            raise InputError(f"{flag} {path} is not a regular file")
        if p.exists() and not os.access(p, os.W_OK):
            raise InputError(f"{flag} {path} is not writable")
        parent = p.parent
    parent = parent if str(parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"{flag} {path}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{flag} {path}: the folder {parent} is not writable")
    _try_a_file_in(parent, flag, path)


def _try_a_file_in(folder: Path, flag: str, path) -> None:
    """Create and remove a temporary file in ``folder`` (what an atomic write does first)."""
    import tempfile
    try:
        fd, name = tempfile.mkstemp(dir=folder, prefix=".medal-check-")
    except OSError as exc:
        raise InputError(f"{flag} {path}: cannot create a file in {folder} "
                         f"({exc.strerror or exc}); give a path in a writable folder") from None
    os.close(fd)
    os.unlink(name)


def check_mask_id(args) -> None:
    """--mask-id: a token id is at least 0 (its upper end is the vocabulary's, checked
    when the model loads)."""
    mask_id = getattr(args, "mask_id", None)
    if mask_id is not None and mask_id < 0:
        raise InputError(f"--mask-id must be a token id from 0 to the vocabulary size - 1, "
                         f"got {mask_id}")


def upload_limit_warning(size: int, limit: int) -> str | None:
    """The line ``medal generate --trace`` prints for a written trace of ``size`` bytes
    above the app's upload limit of ``limit`` bytes (both in bytes: the file's), else None."""
    if size <= limit:
        return None
    return (f"medal: warning: the trace is {size:,} bytes, above the app's upload limit of "
            f"{limit:,} bytes: the app will refuse it. Fewer --max-iterations or a shorter "
            "--gen-length make it smaller")
