"""Regenerate the example traces shipped in medal/assets/examples/ (opened in one click from the
Run page; checked to reproduce by tests/views/test_examples.py).

    python scripts/make_examples.py            # all seven, with the shipped built-in models
    python scripts/make_examples.py --only countdown-longer-search   # one example

Each example is a MEDAL run with the greedy comparison, found by scanning a fixed list
of problems (generated from a fixed seed) with the shipped model, in order:

* ``countdown-medal-fixes-greedy``: MEDAL's answer verifies, greedy's does not;
* ``countdown-medal-does-not-fix``: greedy's answer is wrong and MEDAL's is wrong too
  (the search does not rescue every problem);
* ``sudoku``: a Sudoku puzzle, preferring one where MEDAL and greedy unmask differently
  and both are shown on the board;
* ``countdown-longer-search``: not the default settings -- L_c = 4 and c = 0.5 -- so the
  search runs at least 8 iterations and UCB visibly weighs siblings (a selection that
  does not take the child with the best Q);
* ``pick-medal-does-not-fix``: the attempted positive control (issue 20), where MEDAL
  does not beat greedy: both write letters of the two words mixed. The shipped Pick model
  writes each letter from its own marginal whatever was written before (it never learnt to
  stay with one word), so no early commitment helps: the first problem where greedy's
  answer is a mix and MEDAL's is too, with the search's tree and candidates to show it;
* ``twins-medal-fixes-greedy``: the positive control (issue 20), where MEDAL beats greedy:
  greedy writes the most likely letters of two slots of different pairs in one step and
  mixes the words; MEDAL's search commits one letter at a time, the model follows it, and
  its answer is one of the words -- the first problem where that happens.
* ``countdown-large-search``: a search at the size a real model's makes (issue 28): L_c = 6,
  c = 0.5 and the probability floor 0.02 (actions below p = 0.02 left out, so the search
  branches where the model hesitates); the first problem whose tree has at least 300 nodes.
  The viewer folds its low-visit leaves; the e2e tests read its pixels.

The scan is deterministic (same model, same seed: same examples). Re-run this after the
built-in models or the trace format change, and commit the new files.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from medal.config import GenerationConfig  # noqa: E402
from medal.engine import Run  # noqa: E402
from medal.models import load_model  # noqa: E402
from medal.tasks import get_task  # noqa: E402
from medal.trace import write_trace  # noqa: E402
from medal.examples import EXAMPLES_DIR, INDEX  # noqa: E402

SCAN = 300  # problems looked at, at most, per example


def _run(model, task: str, problem, config=None) -> tuple[dict, bool | None, bool | None]:
    run = Run(model, task=task, problem=problem, strategy="medal",
              config=config or GenerationConfig(), compare_greedy=True, trace=True)
    result = run.finish()
    return run.trace, result.verified, run.comparison.verified


def find(model, task: str, want, seed: int, greedy_wrong: bool = False,
         config=None) -> tuple[dict, int]:
    """The first problem (of SCAN generated with ``seed``) whose run satisfies ``want``
    (``greedy_wrong``: only problems greedy gets wrong, checked first -- it is cheap)."""
    problems = get_task(task).generate(SCAN, seed=seed)
    for i, problem in enumerate(problems):
        if greedy_wrong and Run(model, task=task, problem=problem, strategy="greedy").finish().verified:
            continue
        print(f"  {task} problem #{i}", flush=True)
        trace, medal_ok, greedy_ok = _run(model, task, problem, config)
        if want(trace, medal_ok, greedy_ok):
            return trace, i
    raise SystemExit(f"no {task} problem among {SCAN} (seed {seed}) fits; widen the scan")


def explorations(trace: dict) -> int:
    """Selections that took a child other than the one with the best Q (UCB's bonus)."""
    out = 0
    for it in trace["iterations"]:
        for level in it["selection"]["levels"]:
            if len(level) >= 2:
                best = max(level, key=lambda r: r["Q"])["node"]
                out += next(r["node"] for r in level if r["chosen"]) != best
    return out


LONGER = GenerationConfig(lc=4, c=0.5)
LARGE = GenerationConfig(lc=6, c=0.5, min_action_prob=0.02)
CONFIGS = {"countdown-longer-search": LONGER, "countdown-large-search": LARGE}


def _differs(trace: dict) -> bool:
    return trace["result"]["order"] != trace["comparison"]["result"]["order"]


def main() -> int:
    EXAMPLES_DIR.mkdir(parents=True, exist_ok=True)
    countdown, sudoku = load_model("builtin:countdown"), load_model("builtin:sudoku")
    pick, twins = load_model("builtin:pick"), load_model("builtin:twins")
    specs = [
        ("countdown-medal-fixes-greedy", "countdown", countdown,
         lambda t, m, g: m is True and g is False,
         "Countdown: MEDAL fixes greedy's answer",
         "Greedy decoding answers wrong; MEDAL's search commits different first tokens and "
         "its answer verifies."),
        ("countdown-medal-does-not-fix", "countdown", countdown,
         lambda t, m, g: m is False and g is False,
         "Countdown: MEDAL does not fix it",
         "Greedy answers wrong and so does MEDAL: the search's commitments do not lead to a "
         "right answer on this problem."),
        ("sudoku", "sudoku", sudoku,
         lambda t, m, g: m is True and _differs(t),
         "Sudoku 4x4: the board, MEDAL beside greedy",
         "A 4x4 puzzle: each cell coloured by the step it was unmasked; the row separators "
         "are fixed, so the search commits only digits."),
        ("countdown-longer-search", "countdown", countdown,
         lambda t, m, g: len(t["iterations"]) >= 8 and explorations(t) >= 3,
         "Countdown: a longer search that explores",
         "Not the default settings: L_c = 4 (default 2) and c = 0.5 (default 0.1), so the "
         "search goes four levels deep over 20+ iterations and UCB = Q + c·√(ln N / n) "
         "often picks a sibling other than the one with the best Q."),
        ("pick-medal-does-not-fix", "pick", pick,
         lambda t, m, g: m is False and g is False,
         "Pick: where the order should matter, MEDAL does not fix it",
         "Write any one of the listed words. Greedy mixes letters of different words; so "
         "does MEDAL: its search commits a letter where the words differ, but this model "
         "writes every other letter from its own marginal anyway (it never learnt to stay "
         "with one word), so no early order helps. docs/RESULTS.md has the figures."),
        ("twins-medal-fixes-greedy", "twins", twins,
         lambda t, m, g: m is True and g is False,
         "Twins: where the order matters, MEDAL fixes greedy",
         "Write any one of the four words; words 1 and 2 share half their letters, words 3 "
         "and 4 the other half. Greedy writes two letters per step, the most likely ones, "
         "one from each pair, and mixes the words. MEDAL's search commits one letter at a "
         "time; the model follows it, and the answer is one of the words. Default settings "
         "(2 slots per step, the task's default). docs/RESULTS.md has the figures."),
        ("countdown-large-search", "countdown", countdown,
         lambda t, m, g: len(t["tree"]["nodes"]) >= 300,
         "Countdown: a large search (300+ nodes)",
         "A tree at the size a real model's search makes: L_c = 6, c = 0.5 and the "
         "probability floor 0.02 (actions below p = 0.02 left out), so the search goes six "
         "levels deep over ~100 iterations and 400+ nodes. Low-visit leaves fold into '+k' "
         "boxes that open on click; 'Go to node' finds any node."),
    ]
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    index = []
    for name, task, model, want, title, description in specs:
        index_entry = {"name": name, "title": title, "description": description, "task": task}
        if only and name != only:
            index.append(index_entry)
            continue
        config = CONFIGS.get(name)
        trace, i = find(model, task, want, seed=2026,
                        greedy_wrong=task in ("countdown", "pick", "twins") and config is None,
                        config=config)
        write_trace(trace, EXAMPLES_DIR / f"{name}.json")
        res, comp = trace["result"], trace["comparison"]["result"]
        print(f"{name}: problem #{i} {trace['run']['prompt']!r}: MEDAL {res['text']!r} "
              f"({res['verified']}), greedy {comp['text']!r} ({comp['verified']}), "
              f"{len(trace['iterations'])} iterations")
        index.append(index_entry)
    (EXAMPLES_DIR / INDEX).write_text(json.dumps({"examples": index}, indent=1) + "\n")
    print(f"wrote {len(index)} examples and {INDEX} to {EXAMPLES_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
