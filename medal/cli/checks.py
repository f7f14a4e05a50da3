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
    """Fail before any work if an output could not be written: a missing folder, a
    directory in the way, a device such as /dev/full, no permission."""
    if not path:
        return
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
