"""Run the pre-registered comparison of docs/PREREGISTRATION.md and keep its records.

    python scripts/prereg.py [--n 1000] [--seed 380] [--dry-run] [--only t0-main,...]
    python scripts/prereg.py --pilot        # the pilot that fixed Best-of-N's N (before)

Every arm is one ``medal bench`` command (written out below, exactly as the
pre-registration lists them), on the Avoid task's fresh problems (generator seed
10000 + SEED, problem i with seed SEED + i), once per prompt template. Each run's full
output goes to ``results/avoid/prereg/`` (git-ignored), the command, when it started, its
wall time and the load after it to ``OUT.cmd``, and its compact per-problem records to
``docs/records/avoid/prereg/`` through ``scripts/records.py`` (the format of
docs/records/README.md). One process at a time, one thread, niced: the machine is shared.
A run whose output exists is skipped (re-running the script resumes).

``python scripts/prereg_table.py`` recomputes the results table from the records alone.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASK = "avoid"
#: Best-of-N's N, fixed before the run from the pilot (docs/PREREGISTRATION.md, "Arms"):
#: the N whose mean sequence forwards are closest to MEDAL --search explore's in the pilot
N_BST = 12
#: the arms: (name, strategies, extra flags); each runs once per template
ARMS = (
    ("main", "greedy,medal,medal-order,medal-random-choice,ots,soar", []),
    ("explore", "medal,medal-random-choice", ["--search", "explore"]),
    ("bst", "bst5", ["--samples", str(N_BST)]),
    # exploratory, beyond the paper: the verifier in the search's reward
    ("verifier", "medal", ["--search", "explore", "--reward", "ig+verifier"]),
)
TEMPLATES = (0, 1)
OUT = ROOT / "results" / TASK / "prereg"


#: the pilot (before the pre-registration, on other problems: for planning only): the
#: arms but Best-of-N and the verifier, and Best-of-N at these N, to fix N_BST
PILOT_BST = {0: (2, 3, 4, 6, 8, 10, 12), 1: (2, 3, 4)}
PILOT = ROOT / "results" / TASK / "pilot"


def _argv(path: Path, n: int, seed: int, t: int, strategies: str, extra) -> list[str]:
    return ["python", "-m", "medal", "bench", "--task", TASK, "--n", str(n), "--seed",
            str(seed), "--template", str(t), "--strategies", strategies, *extra, "--out",
            str(path.relative_to(ROOT)), "--no-progress"]


def commands(n: int, seed: int) -> list[tuple[str, Path, list[str]]]:
    """(name, output, argv) of every run, in the order they run."""
    out = []
    for t in TEMPLATES:
        for name, strategies, extra in ARMS:
            path = OUT / f"t{t}-{name}.json"
            out.append((f"t{t}-{name}", path, _argv(path, n, seed, t, strategies, extra)))
    return out


def pilot_commands(n: int = 100, seed: int = 0) -> list[tuple[str, Path, list[str]]]:
    """The pilot's runs: the arms on ``n`` problems of generator seed 10000 + ``seed``
    (the headroom's), and Best-of-N at every N of :data:`PILOT_BST`."""
    out = []
    for t in TEMPLATES:
        for name, strategies, extra in ARMS[:2]:
            path = PILOT / f"pilot-t{t}-{name}.json"
            out.append((path.stem, path, _argv(path, n, seed, t, strategies, extra)))
        for s in PILOT_BST[t]:
            path = PILOT / f"pilot-t{t}-bst{s}.json"
            out.append((path.stem, path, _argv(path, n, seed, t, "bst5", ["--samples", str(s)])))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=380)
    ap.add_argument("--dry-run", action="store_true", help="print the commands only")
    ap.add_argument("--only", default="", help="comma-separated run names (t0-main, ...)")
    ap.add_argument("--pilot", action="store_true",
                    help="run the pilot instead (100 problems of the headroom's seed; "
                         "Best-of-N at several N): what fixed N_BST, before the comparison")
    args = ap.parse_args(argv)
    only = {s for s in args.only.split(",") if s}
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    runs = pilot_commands() if args.pilot else commands(args.n, args.seed)
    for name, path, cmd in runs:
        if only and name not in only:
            continue
        line = " ".join(cmd)
        if args.dry_run:
            print(line)
            continue
        if path.exists():
            print(f"== skip {name} ({path.relative_to(ROOT)} exists)")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        print(f"== {started} {name}: {line}", flush=True)
        t0 = time.time()
        subprocess.run(["nice", "-n", "10", *cmd], cwd=ROOT, env=env, check=True)
        Path(str(path) + ".cmd").write_text(json.dumps({
            "command": line, "started": started, "seconds": round(time.time() - t0, 1),
            "load_after": [round(x, 1) for x in os.getloadavg()],
            "machine": f"{os.cpu_count()} CPU cores shared with other work, no GPU, "
                       f"Python {platform.python_version()}"}, indent=1))
        subprocess.run([sys.executable, "scripts/records.py", str(path)], cwd=ROOT, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
