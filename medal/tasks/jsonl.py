"""Problems on disk: one JSON object per line (shared by every task)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterable

from ..errors import InputError


def json_problem(text: str, example: str):
    """A problem's JSON text parsed; an error names the problem and shows ``example``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"problem is not valid JSON ({exc.msg}); expected {example}") from None


def save_jsonl(problems: Iterable, path: str | Path) -> None:
    """Write each problem's ``to_json()`` on its own line."""
    with open(path, "w") as fh:
        for p in problems:
            fh.write(json.dumps(p.to_json()) + "\n")


def load_jsonl(path: str | Path, parse: Callable[[dict], object], example: str) -> list:
    """Parse every non-blank line with ``parse``; an error names the file and line."""
    if not Path(path).is_file():
        raise InputError(f"no problem file at {path}")
    problems = []
    with open(path) as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}, line {lineno}: not valid JSON ({exc.msg})") from None
            try:
                if not isinstance(obj, dict):
                    raise InputError(f"each line is an object like {example}, "
                                     f"got {line.strip()[:60]!r}")
                problems.append(parse(obj))
            except InputError as exc:
                raise InputError(f"{path}, line {lineno}: {exc}") from None
    return problems
