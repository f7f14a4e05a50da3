"""Command line: ``python -m medal {generate,train,bench} ...``."""
from __future__ import annotations

import argparse
import sys

from .errors import InputError, MedalError


def _train(args) -> int:
    from .train import train
    info = train(task=args.task, out=args.out, steps=args.steps, batch_size=args.batch_size,
                 lr=args.lr, seed=args.seed, n_layer=args.layers, n_embd=args.width,
                 prompt_length=args.prompt_length, answer_length=args.answer_length,
                 threads=args.threads, decompose_share=args.decompose_share,
                 four_share=args.four_share)
    print(f"saved {args.out} ({info['training']['parameters']} parameters, "
          f"{info['training']['seconds']:.0f} s, final loss {info['training']['final_loss']})")
    return 0


def _config_from_args(args):
    from .config import GenerationConfig
    return GenerationConfig(
        k1=args.k1, k2=args.k2, lc=args.lc, candidates=args.candidates, gamma=args.gamma,
        c=args.c, max_iterations=args.max_iterations, scoring=args.scoring,
        simulation=args.simulation, reward=args.reward, verifier_bonus=args.verifier_bonus,
        complete_candidates=args.complete_candidates,
        one_per_parent=args.one_per_parent, gen_length=args.gen_length, steps=args.steps,
        block_length=args.block_length, temperature=args.temperature,
        slot_temperature=args.slot_temperature, eb_threshold=args.eb_threshold,
        samples=args.samples, logits_eos_inf=args.logits_eos_inf,
        confidence_eos_eot_inf=args.confidence_eos_eot_inf,
        decompose=args.decompose, n_subtasks=args.subtasks, seed=args.seed)


SWEEPABLE = {"lc": int, "k2": int, "k1": int, "max_iterations": int, "candidates": int,
             "c": float, "gamma": float}


def _parse_sweep(text: str) -> tuple[str, list]:
    name, _, values = text.partition("=")
    if name not in SWEEPABLE or not values:
        raise InputError(f"--sweep takes PARAM=V1,V2 with PARAM one of {', '.join(SWEEPABLE)}; "
                         f"got {text!r}")
    try:
        return name, [SWEEPABLE[name](v) for v in values.split(",")]
    except ValueError:
        raise InputError(f"--sweep {name}: values must be numbers, got {values!r}") from None


def _bench(args) -> int:
    from pathlib import Path

    from . import bench
    from .models import load_model, model_options

    config = _config_from_args(args)
    strategies = bench.parse_strategies(args.strategies)
    sweeps = [_parse_sweep(s) for s in args.sweep]
    problems, source = bench.load_or_generate(args.task, args.problems, args.n, args.seed)
    model = load_model(args.model or f"builtin:{args.task}", **model_options(args))
    out = Path(args.out)
    doc = bench.run_sharded(model, args.task, problems, strategies, config, out, source,
                            progress=not args.no_progress)
    if doc is None:  # a non-zero rank of a sharded run: rank 0 reports
        return 0
    print(bench.format_table(doc["summary"]))
    for name, m in doc["summary"].items():
        if "ms_per_iteration" in m:
            print(f"{name}: {m['mean_iterations']:.1f} MCTS iterations, "
                  f"{m['ms_per_iteration']:.1f} ms/iteration, tree bookkeeping "
                  f"{m['bookkeeping_share']:.1%} of search time")
    if doc.get("candidate_analysis"):
        print("candidates: " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                                         for k, v in doc["candidate_analysis"].items()))
    print(f"wrote {out}")
    if args.frontier:
        rows = [dict(m, strategy=s) for s, m in doc["summary"].items()]
        bench.plot_html(sorted(rows, key=lambda r: r["mean_sequence_forwards"]),
                        "mean_sequence_forwards", "accuracy",
                        f"{args.task}: accuracy against cost", out.with_name("frontier.html"),
                        labels=[r["strategy"] for r in sorted(rows, key=lambda r: r["mean_sequence_forwards"])])
        print(f"wrote {out.with_name('frontier.html')}")
    for name, values in sweeps:
        rows = bench.sweep(model, args.task, problems, name, values, config,
                           progress=not args.no_progress)
        path = out.with_name(f"sweep_{name}.json")
        bench._write(path, rows)
        bench.plot_html(rows, "value", "accuracy", f"{args.task}: MEDAL accuracy against {name}",
                        out.with_name(f"sweep_{name}.html"))
        print(f"sweep {name}: " + ", ".join(f"{r['value']}: {r['accuracy']:.1%} "
                                            f"({r['mean_sequence_forwards']:.0f} seqs)" for r in rows))
        print(f"wrote {path} and {out.with_name(f'sweep_{name}.html')}")
    if args.ui:
        from .viz.bench import measure_ui_step
        figures = measure_ui_step(model, task=args.task, threads=1)
        print("UI step: " + ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}"
                                      for k, v in figures.items()))
    return 0


def _generate(args) -> int:
    import json

    from tqdm.auto import tqdm

    from .engine import Run
    from .models import load_model, model_options
    from .trace import write_trace

    config = _config_from_args(args)  # bad parameters fail before the model loads
    if args.prompt is None and args.problem is None:
        raise InputError("give --prompt TEXT or --problem JSON")
    model = load_model(args.model or f"builtin:{args.task}", **model_options(args))
    run = Run(model, task=args.task, prompt=args.prompt, problem=args.problem,
              strategy=args.strategy, config=config, trace=bool(args.trace),
              compare_greedy=bool(args.trace) and not args.no_compare,
              decompose=args.decompose)
    bar = tqdm(desc=f"{run.strategy}", unit="event", disable=None, leave=False)
    while (event := run.step()) is not None:
        bar.update()
        if event.kind == "backpropagation":
            bar.set_postfix(iteration=event.iteration)
    bar.close()
    res = run.result
    if args.trace:
        write_trace(run.trace, args.trace)
    if args.json:
        out = {"answer": res.answer, "text": res.text, "verified": res.verified,
               "forwards": res.forwards, "sequence_forwards": res.sequence_forwards,
               "seconds": round(res.seconds, 4), "strategy": run.strategy,
               "prompt": run.model_prompt, "seed": config.seed}
        if "winner" in res.extra:
            out.update(stop_reason=res.extra["stop_reason"], iterations=res.extra["iterations"],
                       winner=res.extra["winner"])
        if args.trace:
            out["trace"] = args.trace
        print(json.dumps(out))
        return 0
    print(f"prompt:    {run.model_prompt}")
    print(f"answer:    {res.text}")
    if res.verified is not None:
        print(f"verified:  {'yes' if res.verified else 'no'}")
    if "winner" in res.extra:
        print(f"search:    {res.extra['iterations']} iterations, stopped by "
              f"{res.extra['stop_reason']}; winner node {res.extra['winner']}")
    print(f"forwards:  {res.forwards} model calls ({res.sequence_forwards} sequences), "
          f"{res.seconds:.2f} s")
    if args.trace:
        print(f"trace:     {args.trace}")
    return 0


def add_config_arguments(g) -> None:
    """Flags for every GenerationConfig field (generate and bench share them)."""
    s_ = g.add_argument_group("search (MEDAL)")
    s_.add_argument("--k1", type=int, default=3, help="K1: tokens kept per masked slot")
    s_.add_argument("--k2", type=int, default=5, help="K2: actions kept = children per expansion")
    s_.add_argument("--lc", type=int, default=None,
                    help="L_c: slots committed by the search (default: the task's)")
    s_.add_argument("--candidates", type=int, default=3, help="C: candidates to collect")
    s_.add_argument("--gamma", type=float, default=5.0, help="margin scale in sigmoid(gamma*margin)")
    s_.add_argument("--c", type=float, default=0.1, help="UCB exploration constant")
    s_.add_argument("--max-iterations", type=int, default=200, help="hard budget of MCTS iterations")
    s_.add_argument("--scoring", default="confidence", choices=["confidence", "margin"],
                    help="action scores: confidence-adjusted (paper) or top-2 margin only")
    s_.add_argument("--simulation", default="argmax", choices=["argmax", "sample"],
                    help="how a simulation fills the remaining masks")
    s_.add_argument("--reward", default="ig", choices=["ig", "ig+verifier"],
                    help="ig: the paper's information gain; ig+verifier (BEYOND the paper): "
                         "add --verifier-bonus when a simulation's completion verifies")
    s_.add_argument("--verifier-bonus", type=float, default=1.0,
                    help="reward bonus for a verified completion (with --reward ig+verifier)")
    s_.add_argument("--complete-candidates", action="store_true",
                    help="complete every candidate with phase C, not only the winner")
    s_.add_argument("--one-per-parent", action="store_true",
                    help="count at most one candidate per parent node (more diverse candidates)")
    d_ = g.add_argument_group("decoding")
    d_.add_argument("--gen-length", type=int, default=None,
                    help="answer slots (default: the model's)")
    d_.add_argument("--steps", type=int, default=None,
                    help="denoising steps (default: one slot per step)")
    d_.add_argument("--block-length", type=int, default=None,
                    help="semi-autoregressive block length (default: one block)")
    d_.add_argument("--temperature", type=float, default=0.0,
                    help="token sampling temperature (0: argmax; bst5 uses 1 when 0)")
    d_.add_argument("--slot-temperature", type=float, default=0.0,
                    help="phase C: sample slots ~ softmax(score / T) (0: most confident)")
    d_.add_argument("--eb-threshold", type=float, default=0.5,
                    help="EB sampler: unmask while sum(H) - max(H) <= this")
    d_.add_argument("--samples", type=int, default=5, help="bst5: number of samples voted on")
    d_.add_argument("--logits-eos-inf", action="store_true",
                    help="as LLaDA's generate.py: the EOS logit is -inf, so no slot is ever "
                         "filled with EOS (answers run to --gen-length)")
    d_.add_argument("--confidence-eos-eot-inf", action="store_true",
                    help="as LLaDA's generate.py: slots whose token is an end token (EOS, "
                         "end of turn) get the lowest confidence and are unmasked last")
    p_ = g.add_argument_group("prompt")
    p_.add_argument("--decompose", dest="decompose", action="store_true", default=None,
                    help="task decomposition prompt (default: on for MEDAL strategies with LLMs "
                         "as in the paper; off for baselines and for the built-in Countdown "
                         "model, where it was measured to hurt)")
    p_.add_argument("--no-decompose", dest="decompose", action="store_false",
                    help="use the original prompt")
    p_.add_argument("--subtasks", type=int, default=3, help="N: subtasks in the decomposition")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m medal", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    from .engine import ALIASES, STRATEGIES
    from .models import add_model_arguments
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
    g.set_defaults(func=_generate)

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
    bsrc.add_argument("--n", type=int, help="generate this many fresh problems")
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
                   help="also time one app UI step (engine step + render) on the model")
    b.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_config_arguments(b)
    b.set_defaults(func=_bench)

    t = sub.add_parser("train", help="train a built-in tiny diffusion LM",
                       description="Train a built-in tiny diffusion LM with the masked-diffusion "
                                   "objective on generated task data; writes safetensors + JSON.")
    t.add_argument("--task", default="countdown", help="task whose data to train on")
    t.add_argument("--out", default="assets/countdown", help="checkpoint directory")
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
    t.set_defaults(func=_train)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except MedalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
