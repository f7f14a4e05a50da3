"""The command line's parser: every command, its flags and the function that runs it."""
from __future__ import annotations

import argparse

from ..config import MAX_LOCK_STEP
from .checks import MAX_PROBLEMS, TRAIN_RANGES, Parser
from .run_commands import (bench_command, generate_command, lm_eval_command,
                           lm_eval_tasks_command, serve_command, train_command)
from .settings import add_config_arguments
from .trace_commands import (candidates_command, diff_command, export_command, fork_command,
                             repro_command)


DESCRIPTION = ("Command line: ``medal {generate,bench,app,export,repro,fork,diff,candidates,"
               "train,...} ...`` (the same as ``python -m medal ...``).")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m medal", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)

    from ..config import STRATEGY_ALIASES as ALIASES
    from ..config import STRATEGY_NAMES as STRATEGIES
    from ..models.options import add_model_arguments
    g = sub.add_parser(
        "generate", help="answer one prompt with MEDAL or a baseline",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Answer one prompt with MEDAL (MCTS initialisation + confidence-guided "
                    "decoding) or a baseline; print the answer and, for tasks with a verifier, "
                    "whether it is right.")
    add_model_arguments(g)
    g.add_argument("--task", default="countdown", help="task: prompt format and verifier")
    src = g.add_mutually_exclusive_group()
    src.add_argument("--prompt", help='prompt text, e.g. "Use 4, 18, 13 to make 20."')
    src.add_argument("--problem", help='a structured problem, e.g. \'{"numbers": [4, 18, 13], '
                                       '"target": 20}\'')
    g.add_argument("--strategy", default="medal",
                   help=f"one of: {', '.join(STRATEGIES)} (aliases: {', '.join(ALIASES)})")
    g.add_argument("--seed", type=int, default=0, help="seed for every random choice")
    g.add_argument("--trace", metavar="FILE", help="write the JSON trace of the run here")
    g.add_argument("--no-compare", action="store_true",
                   help="with --trace: skip the greedy run recorded for comparison")
    g.add_argument("--json", action="store_true",
                   help="print one JSON object (answer, verified, forwards, seconds, ...)")
    add_config_arguments(g)
    g.set_defaults(func=generate_command)

    b = sub.add_parser(
        "bench", help="compare strategies on many problems",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Run strategies on a task's problems; print accuracy (95%% Wilson CI), "
                    "mean forwards and time; write every output and verdict to --out. "
                    "Shard over processes with `accelerate launch --multi_gpu --num_processes 2 "
                    "-m medal bench ...` (same results as one process).")
    add_model_arguments(b)
    b.add_argument("--task", default="countdown", help="task")
    bsrc = b.add_mutually_exclusive_group()
    bsrc.add_argument("--problems", help="problems, one JSON object per line")
    bsrc.add_argument("--n", type=int, help=f"generate this many fresh problems; range 1..{MAX_PROBLEMS}")
    b.add_argument("--strategies", default=",".join(STRATEGIES),
                   help="comma-separated strategies")
    b.add_argument("--seed", type=int, default=0, help="base seed (problem i uses seed + i)")
    b.add_argument("--out", default="results.json", help="results JSON")
    b.add_argument("--sweep", action="append", default=[], metavar="PARAM=V1,V2,...",
                   help="also sweep one MEDAL parameter (lc, k2, max_iterations, candidates, c, "
                        "gamma, k1); writes PARAM.json and PARAM.html next to --out")
    b.add_argument("--frontier", action="store_true",
                   help="write frontier.html: accuracy against sequence forwards per strategy")
    b.add_argument("--ui", action="store_true",
                   help="also time one live app step: the engine step, the viewer's new frames and the bundle sent to the browser")
    b.add_argument("--no-progress", action="store_true", help="no progress bar")
    b.add_argument("--lock-step", type=int, default=1, metavar="N",
                   help="advance N runs together, their forwards in one model call "
                        "(mctx-style batched search; the same records as one at a time "
                        "where the network's rows do not depend on their batch: the "
                        "built-in models on a CPU); 1: one at a time; range "
                        f"1..{MAX_LOCK_STEP}")
    b.add_argument("--profile", action="store_true",
                   help="instead: MEDAL and greedy on each problem, MEDAL's search time split "
                        "into network, scoring and tree bookkeeping, sequences against greedy "
                        "(see medal/profile.py)")
    b.add_argument("--parts", action="store_true",
                   help="with --profile: also split the tree bookkeeping by the search's "
                        "phases (root, selection, expansion, simulation, backpropagation, "
                        "candidates), read from the run's events")
    add_config_arguments(b)
    b.set_defaults(func=bench_command)

    t = sub.add_parser("train", help="train a built-in tiny diffusion LM",
                       description="Train a built-in tiny diffusion LM with the masked-diffusion "
                                   "objective on generated task data; writes safetensors + JSON.")
    t.add_argument("--task", default="countdown", help="task whose data to train on")
    t.add_argument("--out", default="medal/assets/countdown", help="checkpoint directory")
    t.add_argument("--steps", type=int, default=5000, help="optimizer steps")
    t.add_argument("--batch-size", type=int, default=128, help="examples per step")
    t.add_argument("--lr", type=float, default=1.5e-3, help="peak learning rate (cosine decay)")
    t.add_argument("--seed", type=int, default=0, help="seed for data and initialisation")
    t.add_argument("--layers", type=int, default=4, help="transformer layers")
    t.add_argument("--width", type=int, default=128, help="embedding width")
    t.add_argument("--prompt-length", type=int, default=None,
                   help="prompt tokens the model reads (default: the task's; countdown 24, sudoku 26)")
    t.add_argument("--answer-length", type=int, default=None,
                   help="answer slots the model fills (default: the task's; countdown 28, sudoku 19)")
    t.add_argument("--threads", type=int, default=None, help="torch threads (default: all cores)")
    t.add_argument("--decompose-share", type=float, default=None,
                   help="Countdown: share of training prompts in the step (decomposed) form, 0..1 "
                        "(default 0.5)")
    t.add_argument("--four-share", type=float, default=None,
                   help="Countdown: share of training problems with four numbers, 0..1 (default 0.1)")
    t.add_argument("--uniform-target-share", type=float, default=None,
                   help="Countdown: share of three-number problems drawn like the test problems "
                        "(target uniform over the reachable ones), 0..1 (default 0)")
    t.add_argument("--canonical-answers", action="store_true",
                   help="Countdown: answer the test-like problems (--uniform-target-share) with "
                        "one canonical solution each instead of a random one")
    t.add_argument("--templates", type=int, default=None,
                   help="train on the task's first N prompt templates, each prompt's drawn "
                        "uniformly (default: 1, the task's own form; avoid: 2, always). The "
                        "model records it, and a run in a template it was not trained on is "
                        "refused); range 1..the task's templates (2 for every task with them)")
    t.add_argument("--init", default=None,
                   help="go on training from this checkpoint directory (a later stage of a "
                        "recipe; its architecture must match --layers/--width)")
    t.add_argument("--bf16", action="store_true",
                   help="forward and backward under bfloat16 autocast (weights stay float32); "
                        "about 1.4x faster on CPUs with native bfloat16 (AVX-512 BF16), slower "
                        "on others")
    for action in t._actions:
        if action.dest in TRAIN_RANGES:
            low, high = TRAIN_RANGES[action.dest]
            action.help += f"; range {low}..{high}"
        elif action.dest in ("decompose_share", "four_share", "uniform_target_share"):
            action.help += "; range 0..1"
        elif action.dest == "seed":
            action.help += "; range 0..4294967295"
        elif action.dest == "lr":
            action.help += "; range (0, 10]"
    t.set_defaults(func=train_command)

    for name in ("app", "serve"):
        v = sub.add_parser(
            name, help=("start the app in the browser, from any directory" if name == "app"
                        else "the same as 'app' (serve the app to others)"),
            description="Start the Streamlit app (the package's own copy: it runs from any "
                        "directory). By default it listens on localhost; give this machine's "
                        "LAN IP to serve a room. Visitors pick from the operator's model list "
                        "and run within the operator's limits; remote model code runs only if "
                        "allowed here. Flags after the address and port: --trust-remote-code, "
                        "--models SPEC,SPEC, --max-gen-length N, --max-iterations N, "
                        "--max-samples N, --max-problems N (or the MEDAL_* environment "
                        "variables, see medal/serving.py).")
        v.add_argument("--address", default="localhost",
                       help="the address to listen on: this machine's LAN IP to serve a room "
                            "(a specific address: Streamlit then asks the internet nothing)")
        v.add_argument("--port", type=int, default=8501, help="port; range 1..65535")
        v.set_defaults(func=serve_command)

    r = sub.add_parser(
        "repro", help="re-run a trace from its own record: identical, equal within float "
                      "tolerance, or different (the first difference named)",
        description="Load TRACE through the trace gate, run again what it records (model, "
                    "task, prompt, strategy, every resolved parameter, seed) and compare "
                    "the new run with it (timing and the environment aside). Exit 0 when "
                    "they match (identical, equal within float tolerance, or equal up to a "
                    "recorded near tie), 1 when they differ, 2 on an error. The "
                    "environment's changes (versions, device, checkpoint hashes) are "
                    "listed beside the verdict.")
    r.add_argument("trace", help="trace JSON file")
    r.add_argument("--json", action="store_true", help="print one JSON object")
    add_model_arguments(r)
    for action in r._actions:
        if action.dest == "model":
            action.help = ("load this model spec instead of the one the trace names (e.g. "
                           "the same checkpoint in another folder)")
    r.set_defaults(func=repro_command)

    x = sub.add_parser("export", help="write a trace as one self-contained HTML page",
                       description="Write a trace (from --trace or the app) as one HTML file "
                                   "with the tree, heatmap, order, candidates and inspector, "
                                   "stepped phase by phase; it needs no server and no network.")
    x.add_argument("trace", help="trace JSON file")
    x.add_argument("out", help="HTML file to write")
    x.set_defaults(func=export_command)

    e = sub.add_parser("lm-eval", add_help=False,
                       help="lm-evaluation-harness's own command line with the medal model "
                            "(the same as medal-lm-eval; needs the eval extra; docs/LM_EVAL.md)")
    e.add_argument("harness_args", nargs=argparse.REMAINDER)
    e.set_defaults(func=lm_eval_command)
    et = sub.add_parser("lm-eval-tasks",
                        help="print the folder of lm-eval tasks shipped with medal "
                             "(an --include_path: medal_countdown)")
    et.set_defaults(func=lm_eval_tasks_command)
    add_debug_commands(sub)
    return parser


def add_debug_commands(sub) -> None:
    """``fork``, ``diff`` and ``candidates`` (issue 19; docs/DEBUGGING.md)."""
    f = sub.add_parser(
        "fork", help="re-run a trace with a decision changed (what if...?)",
        description="Re-run the run a trace records (same model, prompt, parameters, seed) "
                    "and force (slot, token) actions at one position: a tree node (--node) "
                    "or a decode step (--step, the `step` of the trace's decode records). "
                    "Everything before the position is the parent's; forcing what the "
                    "parent did there gives the parent's trace again. Writes the new trace "
                    "(with a `fork` record naming its parent) and says where it parts from "
                    "the parent. Needs the model that made the trace. A session step by "
                    "step: docs/DEBUGGING.md.")
    f.add_argument("parent", metavar="TRACE", help="the trace to fork (JSON)")
    where = f.add_mutually_exclusive_group(required=True)
    where.add_argument("--node", type=int, metavar="ID",
                       help="a node of MEDAL's tree: commit the actions there")
    where.add_argument("--step", type=int, metavar="K",
                       help="a decode step (phase C, or a baseline's decode): unmask the "
                            "actions at that step")
    f.add_argument("--action", action="append", required=True, metavar="SLOT:TOKEN",
                   help="force TOKEN at answer slot SLOT (0 is the first); TOKEN is a token's "
                        "text (e.g. 5:+) or its id as #ID (5:#19); repeat to fix several "
                        "slots. Any masked slot and any token, in the action set or not")
    f.add_argument("--then", choices=["search", "decode"], default=None,
                   help="how the run goes on: search (default for --node: MCTS continues "
                        "below the forced node) or decode (phase C from it; the only choice "
                        "for --step)")
    f.add_argument("--trace", metavar="OUT", required=True, help="write the fork's trace here")
    f.add_argument("--model", default=None, metavar="SPEC",
                   help="the model to run (default: the one the trace names, "
                        "trace.run.model.name); it must be the same weights")
    f.add_argument("--json", action="store_true", help="print one JSON object")
    f.set_defaults(func=fork_command)

    d = sub.add_parser(
        "diff", help="compare two traces: where they part, and why",
        description="Compare two traces along the run's timeline: the first divergence "
                    "(an MCTS iteration and phase, the candidate choice or a decode step) "
                    "with its cause (the two selections and their UCB values, a near tie "
                    "to float32 rounding, a different action set, a forced action, a "
                    "different sample, a different configuration), then per phase same or "
                    "different, then answers, verdicts and costs side by side. Exit status: "
                    "0 identical (timing, fork record and environment aside), 1 different, "
                    "2 an error. See docs/DEBUGGING.md.")
    d.add_argument("a", metavar="A.json", help="a trace")
    d.add_argument("b", metavar="B.json", help="another trace")
    d.add_argument("--json", action="store_true", help="print one JSON object")
    d.add_argument("--html", default=None, metavar="OUT.html",
                   help="also write the two runs side by side on one timeline, with where "
                        "they part, as one self-contained offline HTML page")
    d.add_argument("--rel", type=float, default=None,
                   help="relative float tolerance of 'equal within tolerance' (default 1e-4)")
    d.add_argument("--abs", type=float, default=None, dest="abs_tol",
                   help="absolute float tolerance (default 5e-6)")
    d.set_defaults(func=diff_command)

    c = sub.add_parser(
        "candidates", help="two nodes of one trace's tree, slot by slot",
        description="Compare two nodes of a trace's MEDAL tree (two candidates, as a rule: "
                    "see the trace's search.candidates) slot by slot: which slots differ, "
                    "their tokens and remaining entropies, and each slot's part of the "
                    "difference in cumulative information gain, (sum H_root - sum "
                    "H_remaining) / sum H_root: a slot's part is (H_b - H_a) / sum H_root, "
                    "and the parts add up to the difference.")
    c.add_argument("trace", metavar="TRACE", help="a MEDAL trace")
    c.add_argument("node_a", type=int, metavar="A", help="a node id (e.g. the winner)")
    c.add_argument("node_b", type=int, metavar="B", help="another node id (e.g. the runner-up)")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.set_defaults(func=candidates_command)
