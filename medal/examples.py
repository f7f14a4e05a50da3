"""Shipped example traces (``medal/assets/examples/``): listed, opened, and re-run from their own
configuration.

``medal/assets/examples/index.json`` lists each example: its file, a title and a one-line
description. ``scripts/make_examples.py`` writes them all; :func:`medal.repro.rerun_example` replays one from
the run metadata its trace records (model, task, prompt, strategy, resolved parameters,
seed), and :func:`comparable` drops what legitimately differs between two runs (wall
clock, library versions), so a test can check that an example still reproduces.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path

from .trace import load_trace

EXAMPLES_DIR = Path(__file__).resolve().parent / "assets" / "examples"
INDEX = "index.json"
TIMING_KEYS = ("seconds", "model_seconds", "search_seconds", "search_model_seconds",
               "comparison_seconds", "ms_per_step")


@dataclass(frozen=True)
class Example:
    name: str          # file stem, e.g. "countdown-medal-fixes-greedy"
    title: str
    description: str
    task: str

    @property
    def path(self) -> Path:
        return EXAMPLES_DIR / f"{self.name}.json"


def list_examples(directory: Path | None = None) -> list[Example]:
    """The shipped examples, in the index's order ([] if none are shipped)."""
    path = (directory or EXAMPLES_DIR) / INDEX
    if not path.is_file():
        return []
    return [Example(**e) for e in json.loads(path.read_text())["examples"]]


def load_example(example: Example):
    """The example's trace, validated like any uploaded trace."""
    return load_trace(example.path)


def comparable(trace: dict) -> dict:
    """``trace`` without wall-clock figures, library versions and the record of where it
    ran, its configuration complete (fields it predates at their defaults)."""
    from .config import GenerationConfig
    out = copy.deepcopy(trace)
    out.pop("timing", None)
    out.pop("reproducibility", None)
    out["run"].pop("versions", None)
    # a trace written before a configuration field existed ran with its default
    out["run"]["config"] = GenerationConfig.with_defaults(out["run"].get("config") or {})

    def strip(value):
        if isinstance(value, dict):
            for k in TIMING_KEYS:
                value.pop(k, None)
            for v in value.values():
                strip(v)
        elif isinstance(value, list):
            for v in value:
                strip(v)

    strip(out)
    return out
