"""Traces recorded before the runner/search speed refactor (issue 8 part B, issue 11 item 5).

``tests/algorithm/test_runner.py`` re-runs these configurations and checks that every number the
old code recorded is unchanged. The file ``tests/data/reference_traces.json.gz`` was written
by ``python tests/reference_traces.py`` on the code at commit 022a20e (before the
refactor); re-recording it on newer code would make the test meaningless, so only do so
for a deliberate change of what the algorithm computes, and say so in the commit.
"""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
PATH = Path(__file__).resolve().parent / "data" / "reference_traces.json.gz"
PROBLEM = {"numbers": [4, 18, 13], "target": 20}

# name -> (model, strategy, explicit config); every field that exists today is set, so a
# later change of a default does not silently change what is compared
BASE = dict(k1=3, k2=5, candidates=3, gamma=5.0, c=0.1, max_iterations=200,
            scoring="confidence", simulation="argmax", reward="ig", verifier_bonus=1.0,
            complete_candidates=False, one_per_parent=False, temperature=0.0,
            slot_temperature=0.0, eb_threshold=0.5, samples=5, n_subtasks=3)
CASES = {
    "tiny-medal": ("tiny", "medal", dict(BASE, seed=0, lc=4)),
    "tiny-medal-blocks-sampled": ("tiny", "medal", dict(BASE, seed=3, lc=5, gen_length=28,
                                                         block_length=7, steps=28,
                                                         simulation="sample", temperature=0.7,
                                                         complete_candidates=True,
                                                         max_iterations=25)),
    "tiny-medal-verifier-k1-5": ("tiny", "medal", dict(BASE, seed=1, lc=3, k1=5, k2=7,
                                                        reward="ig+verifier", c=0.3,
                                                        one_per_parent=True)),
    "tiny-margin-only": ("tiny", "medal-margin-only", dict(BASE, seed=2, lc=4, max_iterations=12)),
    "scripted-medal": ("scripted", "medal", dict(BASE, seed=0, lc=4, candidates=4, c=0.3,
                                                 max_iterations=12)),
}


def tiny_model():
    """The same network as the ``tiny_model`` fixture in conftest.py."""
    from medal.models.builtin import BuiltinModel
    from medal.models.tiny import CharTokenizer, TinyConfig, TinyDLM
    torch.manual_seed(0)
    net = TinyDLM(TinyConfig(vocab_size=len(CharTokenizer()), n_layer=1, n_embd=32)).eval()
    return BuiltinModel(net, {}, "builtin:random-test")


def compact(value):
    """The trace's numbers and ids without what derives from them (token texts), floats
    to 10 significant digits: small enough to commit, exact enough to catch any change."""
    if isinstance(value, float):
        return float(f"{value:.10g}")
    if isinstance(value, list):
        return [compact(v) for v in value]
    if isinstance(value, dict):
        if set(value) == {"token", "text", "p"}:      # a top-token entry
            return [value["token"], compact(value["p"])]
        return {k: compact(v) for k, v in value.items() if k not in ("text", "token_text",
                                                                     "token_texts")}
    return value


def case_trace(name: str, models: dict) -> dict:
    from medal.config import GenerationConfig
    from medal.engine import Run
    from medal.trace import dumps
    model_name, strategy, cfg = CASES[name]
    run = Run(models[model_name], problem=PROBLEM, strategy=strategy,
              config=GenerationConfig(**cfg), trace=True, compare_greedy=True)
    run.finish()
    trace = json.loads(dumps(run.trace))
    trace.pop("timing")
    trace["run"].pop("versions")
    return compact(trace)


def main() -> None:
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    from scripted import ScriptedLM
    torch.set_num_threads(1)
    models = {"tiny": tiny_model(), "scripted": ScriptedLM()}
    out = {name: case_trace(name, models) for name in CASES}
    PATH.write_bytes(gzip.compress(json.dumps(out, separators=(",", ":")).encode(), 9, mtime=0))
    print(f"wrote {PATH} ({PATH.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()


def load() -> dict:
    return json.loads(gzip.decompress(PATH.read_bytes()))
