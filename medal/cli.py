"""Command line: ``medal {generate,bench,app,export,repro,fork,diff,candidates,train,...} ...``
(the same as ``python -m medal ...``)."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .errors import MAX_ERROR_CHARS, InputError, MedalError, error_line  # noqa: F401

#: ranges of the flags that are not GenerationConfig fields (those: medal.config.RANGES)
MAX_PROBLEMS = 100_000
TRAIN_RANGES = {"steps": (1, 10_000_000), "batch_size": (1, 65_536), "layers": (1, 64),
                "width": (8, 4096), "prompt_length": (1, 4096), "answer_length": (1, 4096),
                "threads": (1, 1024)}


class Parser(argparse.ArgumentParser):
    """Bad flags give one ``error:`` line (and exit status 2), like every other error."""

    def error(self, message):
        self.exit(2, error_line(f"{message} (see {self.prog} --help)") + "\n")


def _range_help(name: str, low, high) -> str:
    return f"{low}..{high}"


def _check_range(name: str, value, low, high, flag: str | None = None) -> None:
    if value is not None and not low <= value <= high:
        raise InputError(f"{flag or '--' + name.replace('_', '-')} must be between {low} and "
                         f"{high}, got {value}")


def _safe_json(text: str, what: str):
    """JSON from the command line or a file: any failure is an InputError naming it."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{what} is not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise InputError(f"{what} is nested too deeply") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise InputError(f"{what}: {exc}") from None


def _check_problem(text: str | None) -> None:
    """A --problem that is JSON must parse within limits (the task then reads it)."""
    if text is not None and text.strip()[:1] in "{[":
        _safe_json(text, "--problem")


def _check_problems_file(path: str) -> None:
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
        _safe_json(line, f"{path}, line {i}")


def _check_output(path: str | None, flag: str, directory: bool = False) -> None:
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


def train_memory_estimate(layers: int, width: int, batch_size: int, length: int,
                          vocab: int = 128) -> int:
    """Bytes training the built-in model needs, roughly: float32 weights, gradients and
    Adam's two moments (16 bytes a parameter) and the activations a step keeps for the
    backward pass (~24 floats per token, layer and width, plus the attention scores)."""
    params = layers * (12 * width * width + 13 * width) + (2 * vocab + length) * width
    activations = batch_size * length * layers * (24 * width + 4 * length) * 4
    return 16 * params + activations


def _check_train_memory(args) -> None:
    """Refuse a model that cannot fit before allocating it (an OOM kill says nothing)."""
    length = (args.prompt_length or 26) + (args.answer_length or 28)
    need = train_memory_estimate(args.layers, args.width, args.batch_size, length)
    from .memory import available_memory
    have = available_memory()
    if have is not None and need > 0.8 * have:
        raise InputError(f"training {args.layers} layers x {args.width} wide with batches of "
                         f"{args.batch_size} needs about {need / 2**30:.1f} GiB; this machine "
                         f"has {have / 2**30:.1f} GiB available. Use a smaller --width, "
                         "--layers or --batch-size")


def _train(args) -> int:
    for name, (low, high) in TRAIN_RANGES.items():
        _check_range(name, getattr(args, name), low, high)
    _check_range("seed", args.seed, 0, 4_294_967_295)
    for name in ("decompose_share", "four_share", "uniform_target_share"):
        _check_range(name, getattr(args, name), 0, 1)
    if not 0 < args.lr <= 10:
        raise InputError(f"--lr must be above 0 and at most 10, got {args.lr}")
    _check_output(args.out, "--out", directory=True)
    _check_train_memory(args)
    from .train import train
    info = train(task=args.task, out=args.out, steps=args.steps, batch_size=args.batch_size,
                 lr=args.lr, seed=args.seed, n_layer=args.layers, n_embd=args.width,
                 prompt_length=args.prompt_length, answer_length=args.answer_length,
                 threads=args.threads, decompose_share=args.decompose_share,
                 four_share=args.four_share, uniform_target_share=args.uniform_target_share,
                 canonical_answers=args.canonical_answers, init=args.init, bf16=args.bf16)
    print(f"saved {args.out} ({info['training']['parameters']} parameters, "
          f"{info['training']['seconds']:.0f} s, final loss {info['training']['final_loss']})")
    return 0


def _config_from_args(args, **override):
    from dataclasses import replace

    from .config import GenerationConfig
    if override:
        return replace(_config_from_args(args), **override)
    return GenerationConfig(
        k1=args.k1, k2=args.k2, lc=args.lc, candidates=args.candidates, gamma=args.gamma,
        c=args.c, max_iterations=args.max_iterations, scoring=args.scoring,
        simulation=args.simulation, rollout_steps=args.rollout_steps, reward=args.reward,
        verifier_bonus=args.verifier_bonus, complete_candidates=args.complete_candidates,
        candidate_choice=args.candidate_choice, scoring_scope=args.scoring_scope,
        pair_temperature=args.pair_temperature,
        one_per_parent=args.one_per_parent, min_action_prob=args.min_action_prob,
        selection=args.selection, search_steps=args.search_steps,
        gen_length=args.gen_length, steps=args.steps,
        block_length=args.block_length, temperature=args.temperature,
        slot_temperature=args.slot_temperature, eb_threshold=args.eb_threshold,
        samples=args.samples, logits_eos_inf=args.logits_eos_inf,
        threshold=args.threshold, threshold_phase_c=args.threshold_phase_c,
        ig_candidates=args.ig_candidates, ig_position_temperature=args.ig_position_temperature,
        confidence_eos_eot_inf=args.confidence_eos_eot_inf,
        decompose=args.decompose, n_subtasks=args.subtasks,
        seed=args.seed).with_search_mode(getattr(args, "search", None) or "paper")


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
    if args.parts and not args.profile:
        raise InputError("--parts splits --profile's bookkeeping: give it with --profile")
    strategies = bench.parse_strategies(args.strategies)
    from .engine import STRATEGIES
    if len(strategies) > len(STRATEGIES) or len(set(strategies)) != len(strategies):
        raise InputError(f"--strategies names each strategy at most once ({len(STRATEGIES)} "
                         f"exist), got {len(strategies)} names")
    if len(args.sweep) > 8:
        raise InputError(f"at most 8 --sweep flags, got {len(args.sweep)}")
    sweeps = [_parse_sweep(s) for s in args.sweep]
    for name, values in sweeps:
        if len(values) > 64:
            raise InputError(f"--sweep {name}: at most 64 values, got {len(values)}")
        for v in values:
            _config_from_args(args, **{name: v})  # each value within the engine's range
    _check_range("n", args.n, 1, MAX_PROBLEMS)
    if args.problems:
        _check_problems_file(args.problems)
    out = Path(args.out)
    _check_output(args.out, "--out")
    from .files import refuse_overwriting_input
    refuse_overwriting_input([args.problems], args.out, "--out")
    for sibling in (["frontier.html"] if args.frontier else []) + [
            f"sweep_{n}.{ext}" for n, _ in sweeps for ext in ("json", "html")]:
        _check_output(str(out.with_name(sibling)), "--out")
    problems, source = bench.load_or_generate(args.task, args.problems, args.n, args.seed)
    model = load_model(args.model or f"builtin:{args.task}", **model_options(args))
    out = Path(args.out)
    if args.profile:
        from .profile import format_profile, profile
        figures = profile(model, args.task, problems, config, parts=args.parts)
        print(format_profile(figures))
        bench._write(out, figures)
        print(f"wrote {out}")
        return 0
    doc = bench.run_sharded(model, args.task, problems, strategies, config, out, source,
                            progress=not args.no_progress, lock_step=args.lock_step)
    if doc is None:  # a non-zero rank of a sharded run: rank 0 reports
        return 0
    print(bench.format_table(doc["summary"]))
    print(bench.format_throughput(doc))
    for name, m in doc["summary"].items():
        if "ms_per_iteration" in m:
            print(f"{name}: {m['mean_iterations']:.1f} MCTS iterations, "
                  f"{m['ms_per_iteration']:.1f} ms/iteration, tree bookkeeping "
                  f"{m['bookkeeping_share']:.1%} of search time")
    for analysis in (doc.get("candidate_analysis_by_strategy") or {}).values():
        print("candidates: " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                                         for k, v in analysis.items()))
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
    from .trace import MAX_TRACE_BYTES, write_trace

    config = _config_from_args(args)  # bad parameters fail before the model loads
    if args.prompt is None and args.problem is None:
        raise InputError("give --prompt TEXT or --problem JSON")
    _check_problem(args.problem)
    _check_output(args.trace, "--trace")
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
        size = write_trace(run.trace, args.trace)
        if size > MAX_TRACE_BYTES:
            print(f"medal: warning: the trace is {size / 1e6:.1f} MB, above the app's upload "
                  f"limit of {MAX_TRACE_BYTES / 1e6:.0f} MB: the app will refuse it. Fewer "
                  "--max-iterations or a shorter --gen-length make it smaller",
                  file=sys.stderr)
    if args.json:
        out = {"answer": res.answer, "text": res.text, "verified": res.verified,
               "forwards": res.forwards, "sequence_forwards": res.sequence_forwards,
               "cost": res.cost(),
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
    print(f"cost:      {res.token_passes} token passes; {res.valid_tokens} output tokens, "
          + (f"TPF {res.tpf:.2f}" if res.tpf is not None else "TPF n/a (no forward)")
          + " (medal.cost)")
    if args.trace:
        print(f"trace:     {args.trace}")
    return 0


def add_config_arguments(g) -> None:
    """Flags for every GenerationConfig field (generate and bench share them); each help
    ends with the range the engine accepts (medal.config.RANGES)."""
    from .config import MIN_PAIR_TEMPERATURE, MIN_TEMPERATURE, RANGES

    def ranged(action):
        name = action.dest
        if name in RANGES:
            low, high = RANGES[name]
            extra = (f"0 or {MIN_TEMPERATURE:g}..{high}"
                     if name in ("temperature", "slot_temperature")
                     else f"0 or {MIN_PAIR_TEMPERATURE:g}..{high}" if name == "pair_temperature"
                     else f"{low}..{high}")
            action.help = f"{action.help}; range {extra}"
        return action
    s_ = g.add_argument_group("search (MEDAL)")
    s_.add_argument("--search", default="paper", choices=["paper", "explore"],
                    help="search mode: paper (the defaults: with L_c=2 every candidate shares "
                         "one first commitment) or explore (the tree branches: one candidate "
                         "per parent, c=1; a setting changed from its default wins)")
    s_.add_argument("--k1", type=int, default=3, help="K1: tokens kept per masked slot")
    s_.add_argument("--k2", type=int, default=5, help="K2: actions kept = children per expansion")
    s_.add_argument("--lc", type=int, default=None,
                    help="L_c: slots committed by the search (default: the task's)")
    s_.add_argument("--candidates", type=int, default=3, help="C: candidates to collect")
    s_.add_argument("--gamma", type=float, default=5.0, help="margin scale in sigmoid(gamma*margin)")
    s_.add_argument("--c", type=float, default=0.1, help="UCB exploration constant")
    s_.add_argument("--max-iterations", type=int, default=200,
                    help="hard budget of MCTS iterations (a search that runs out before C "
                         "candidates exist takes the deepest nodes, best Q first, as its "
                         "candidates)")
    s_.add_argument("--selection", default="ucb", choices=["ucb", "greedy"],
                    help="ucb (the paper): descend by Q + c sqrt(ln N / n); greedy (the "
                         "choice control, strategy medal-choice): descend through the child "
                         "with the highest reward, one expansion per level")
    s_.add_argument("--scoring", default="confidence", choices=["confidence", "margin"],
                    help="action scores: confidence-adjusted (paper) or top-2 margin only")
    s_.add_argument("--simulation", default="argmax", choices=["argmax", "sample", "rollout"],
                    help="how a simulation fills the remaining masks: one fill from the "
                         "child's forward (argmax or sampled), or rollout: an iterative DLM "
                         "rollout of --rollout-steps steps (the paper's reading; its forwards "
                         "are counted)")
    s_.add_argument("--rollout-steps", type=int, default=3,
                    help="k: DLM steps per rollout simulation (with --simulation rollout)")
    s_.add_argument("--candidate-choice", default="search", choices=["search", "rollout", "vote"],
                    help="search: the winner has the highest cumulative IG of the search's "
                         "commitments; rollout (the paper's text): every candidate is rolled "
                         "out by phase C and scored by its rollout's IG; vote (BEYOND the "
                         "paper): the answer most rollouts agree on")
    s_.add_argument("--scoring-scope", default="search", choices=["search", "all"],
                    help="where --scoring margin applies: the search only (the paper's "
                         "ablation) or also phase C")
    s_.add_argument("--reward", default="ig", choices=["ig", "ig+verifier"],
                    help="ig: the paper's information gain; ig+verifier (BEYOND the paper): "
                         "add --verifier-bonus when a simulation's completion verifies")
    s_.add_argument("--verifier-bonus", type=float, default=1.0,
                    help="reward bonus for a verified completion (with --reward ig+verifier)")
    s_.add_argument("--complete-candidates", action="store_true",
                    help="complete every candidate with phase C, not only the winner")
    s_.add_argument("--one-per-parent", action="store_true",
                    help="count at most one candidate per parent node (more diverse candidates)")
    s_.add_argument("--min-action-prob", type=float, default=0.0,
                    help="BEYOND the paper: leave actions whose token probability is below "
                         "this out of the action set, so a node keeps fewer than K2 children "
                         "when the rest are implausible (0..1; default 0: off, the paper's "
                         "top-K2). It filters WITHIN the top K2 (no refilling from lower "
                         "actions) and keeps each state's best action")
    d_ = g.add_argument_group("decoding")
    d_.add_argument("--gen-length", type=int, default=None,
                    help="answer slots (default: the model's)")
    d_.add_argument("--steps", type=int, default=None,
                    help="denoising steps (default: one slot per step)")
    d_.add_argument("--search-steps", default="count", choices=["count", "extra"],
                    help="MEDAL: count (default, as before): the search's L_c commitments are "
                         "the first L_c of --steps, so phase C writes the rest of the first "
                         "block in the steps left (more slots per step than greedy when steps "
                         "< slots); extra: phase C gets all --steps, L_c + steps in all")
    d_.add_argument("--block-length", type=int, default=None,
                    help="semi-autoregressive block length (default: one block)")
    d_.add_argument("--temperature", type=float, default=0.0,
                    help="token sampling temperature (0: argmax; bst5 uses 1 when 0); "
                         "sampling draws from each slot's top 64 tokens (top-k sampling)")
    d_.add_argument("--slot-temperature", type=float, default=0.0,
                    help="phase C: sample slots ~ softmax(score / T) (0: most confident)")
    d_.add_argument("--pair-temperature", type=float, default=0.0,
                    help="phase C: sample (slot, token) pairs ~ Softmax(s / T) over each "
                         "eligible slot's top-K1 tokens (the paper's Algorithm 2: T = 1; 0: off)")
    d_.add_argument("--eb-threshold", type=float, default=0.5,
                    help="EB sampler: unmask while sum(H) - max(H) <= this")
    d_.add_argument("--samples", type=int, default=5, help="bst5: number of samples voted on")
    d_.add_argument("--threshold", type=float, default=0.9,
                    help="Fast-dLLM's confidence threshold: the threshold strategy (and phase C "
                         "with --threshold-phase-c) commits every slot of the current block "
                         "whose token probability exceeds it, at least one a step (block "
                         "length: --block-length); also the info-gain strategy's bypass")
    d_.add_argument("--threshold-phase-c", action="store_true",
                    help="BEYOND the paper: MEDAL's phase C commits by the --threshold rule "
                         "instead of its step schedule (fewer forwards; docs/SPEED.md)")
    d_.add_argument("--ig-candidates", type=int, default=8,
                    help="info-gain strategy: candidate actions evaluated per step (N)")
    d_.add_argument("--ig-position-temperature", type=float, default=0.2,
                    help="info-gain strategy: Gumbel temperature of the candidates' positions")
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
    for action in g._actions:
        if action.dest == "subtasks":
            action.help += f"; range {RANGES['n_subtasks'][0]}..{RANGES['n_subtasks'][1]}"
        else:
            ranged(action)


def _serve(args) -> int:
    """Start the app (``medal app``; ``serve`` is the same command): the operator's
    settings, the app's Streamlit options, and nothing asked of the internet."""
    from . import serving
    from .app import MAIN
    settings = serving.parse_settings(argv=args.serving_flags)  # bad values: error now
    if not args.address.strip():
        # Streamlit would read '' as every interface; a server is bound only where the
        # operator says
        raise InputError("--address must name an address to listen on, e.g. localhost "
                         "(this machine only) or this machine's LAN IP; '' would mean every "
                         "interface")
    serving.keep_on_machine()
    from streamlit.web import cli as st_cli
    # the options of .streamlit/config.toml as flags: an installed package has no such file
    # beside the directory it is started from
    streamlit_options = dict(serving.STREAMLIT_OPTIONS)
    # the uploader refuses exactly what the gate refuses: the operator's trace size limit
    streamlit_options["server.maxUploadSize"] = serving.upload_mb(settings.max_trace_bytes)
    options = [a for k, v in streamlit_options.items() for a in (f"--{k}", str(v))]
    sys.argv = ["streamlit", "run", str(MAIN), *options, "--server.address", args.address,
                "--server.port", str(args.port), "--", *args.serving_flags]
    from .app import warm
    warm()      # the Run page's imports and the examples' frames, while Streamlit starts
    print(f"serving {len(settings.models)} models to visitors; remote code "
          f"{'allowed' if settings.trust_remote_code else 'not allowed'}; limits "
          + ", ".join(f"{k} {v}" for k, v in settings.limits.items()), file=sys.stderr)
    return st_cli.main()


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m medal", description=__doc__)
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
                        "built-in models on a CPU); 1: one at a time")
    b.add_argument("--profile", action="store_true",
                   help="instead: MEDAL and greedy on each problem, MEDAL's search time split "
                        "into network, scoring and tree bookkeeping, sequences against greedy "
                        "(see medal/profile.py)")
    b.add_argument("--parts", action="store_true",
                   help="with --profile: also split the tree bookkeeping into its parts "
                        "(action sets, cache, selection, ...; each timed call adds ~1 us)")
    add_config_arguments(b)
    b.set_defaults(func=_bench)

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
    t.set_defaults(func=_train)

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
        v.set_defaults(func=_serve)

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
    r.set_defaults(func=_repro)

    x = sub.add_parser("export", help="write a trace as one self-contained HTML page",
                       description="Write a trace (from --trace or the app) as one HTML file "
                                   "with the tree, heatmap, order, candidates and inspector, "
                                   "stepped phase by phase; it needs no server and no network.")
    x.add_argument("trace", help="trace JSON file")
    x.add_argument("out", help="HTML file to write")
    x.set_defaults(func=_export)

    e = sub.add_parser("lm-eval", add_help=False,
                       help="lm-evaluation-harness's own command line with the medal model "
                            "(the same as medal-lm-eval; needs the eval extra; docs/LM_EVAL.md)")
    e.add_argument("harness_args", nargs=argparse.REMAINDER)
    e.set_defaults(func=_lm_eval)
    et = sub.add_parser("lm-eval-tasks",
                        help="print the folder of lm-eval tasks shipped with medal "
                             "(an --include_path: medal_countdown)")
    et.set_defaults(func=_lm_eval_tasks)
    add_debug_commands(sub)
    return parser


def _lm_eval(args) -> int:
    from .lm_eval import main as harness
    return harness(args.harness_args)


def _lm_eval_tasks(args) -> int:
    from .lm_eval import TASKS_DIR
    print(TASKS_DIR)
    return 0


def _repro(args) -> int:
    """Re-run a trace from its own record and say whether the run reproduces."""
    import json

    from .models import model_options
    from .repro import MATCH, environment_changes, reproduce
    from .trace import load_trace

    trace = load_trace(args.trace)
    from .serving import check_received_config
    check_received_config(trace, "medal repro")
    options = model_options(args) if args.model is None else {}
    model = None
    if args.model is not None:
        from .models import load_model
        model = load_model(args.model, **model_options(args))
    verdict, diff, new = reproduce(trace, model=model, **options)
    env = environment_changes(trace.get("reproducibility"), new.get("reproducibility"))
    if args.json:
        print(json.dumps({"verdict": verdict, "match": verdict in MATCH,
                          "environment_changes": env, "diff": diff.to_json()}))
    else:
        print(f"{args.trace}: {verdict}")
        if diff.first is not None:
            d = diff.first
            print(f"first difference: {d.position['label']} ({d.phase}) -- {d.cause}")
            print(f"  {d.explanation}")
        elif diff.first_exact is not None and not diff.identical:
            d = diff.first_exact
            print(f"first exact difference (within tolerance): {d.position['label']} "
                  f"({d.phase})")
        for line in env:
            print(f"environment: {line}")
    return 0 if verdict in MATCH else 1


# ---------------------------------------------------------------------- debugging a choice

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
    f.set_defaults(func=_fork)

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
    d.set_defaults(func=_diff)

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
    c.set_defaults(func=_candidates)


def _fork(args) -> int:
    from .diff import diff_traces
    from .fork import fork, parse_action
    from .trace import load_trace, write_trace

    parent = load_trace(args.parent)
    _check_output(args.trace, "--trace")
    actions = [parse_action(a) for a in args.action]
    if parent.get("result") is None:
        raise InputError("this trace is of a run that did not finish (its result is null: "
                         "a run in progress or a replay position); fork a finished run's "
                         "trace (export it after the run ends)")
    from .serving import check_received_config
    check_received_config(parent, "medal fork")
    model = None
    if args.model:
        from .models import load_model
        model = load_model(args.model)
    run = fork(parent, node=args.node, step=args.step, actions=actions, then=args.then,
               model=model)
    run.finish()
    write_trace(run.trace, args.trace)
    child = run.trace
    d = diff_traces(parent, child, names=("parent", "fork"))
    rec = child["fork"]
    where = f"node {rec['node']}" if "node" in rec else f"decode step {rec['step']}"
    forced = ", ".join(f"{f['slot']}:{f['token_text']}" for f in rec["forced"])
    pr, fr = parent["result"], child["result"]
    if args.json:
        print(json.dumps({"trace": args.trace, "fork": rec,
                          "parent": {"answer": pr["answer"], "verified": pr["verified"]},
                          "answer": fr["answer"], "verified": fr["verified"],
                          "identical_to_parent": d.identical,
                          "first_divergence": d.to_json()["first"]}))
        return 0
    print(f"forced:    {forced} at {where}, then {rec['then']}")
    print(f"answer:    {fr['text']!r} (parent: {pr['text']!r})")
    if fr["verified"] is not None:
        print(f"verified:  {'yes' if fr['verified'] else 'no'} (parent: "
              f"{'yes' if pr['verified'] else 'no'})")
    if d.identical:
        print("the fork is the parent's run again (the forced action is the one it took)")
    elif d.first is not None:
        print(f"parts at:  {d.first.position['label']} -- {d.first.cause}")
        if d.first.cause != "forced action":
            print("warning:   the replay parted from the parent before the fork's position "
                  "(another model, device or version?); the fork's figures are this "
                  "machine's", file=sys.stderr)
    print(f"trace:     {args.trace} (compare: python -m medal diff {args.parent} {args.trace})")
    return 0


def _diff(args) -> int:
    from .diff import ABS, REL, diff_traces
    from .trace import load_trace

    rel = REL if args.rel is None else args.rel
    abs_tol = ABS if args.abs_tol is None else args.abs_tol
    for flag, v in (("--rel", rel), ("--abs", abs_tol)):
        if not (0 <= v <= 1):
            raise InputError(f"{flag} must be between 0 and 1, got {v}")
    if args.html:
        from .files import refuse_overwriting_input
        refuse_overwriting_input([args.a, args.b], args.html, "--html")
        _check_output(args.html, "--html")
    a, b = load_trace(args.a), load_trace(args.b)
    d = diff_traces(a, b, rel=rel, abs_tol=abs_tol)
    print(json.dumps(d.to_json()) if args.json else d.format())
    if args.html:
        from .comparison import Comparison
        names = (Path(args.a).stem, Path(args.b).stem)
        if names[0] == names[1]:
            names = (args.a, args.b)
        path = Comparison(a, b, names, rel=rel, abs_tol=abs_tol).save_html(args.html)
        print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB): the two runs side by side; "
              "open it in any browser", file=sys.stderr if args.json else sys.stdout)
    return 0 if d.identical else 1


def _candidates(args) -> int:
    from .diff import compare_candidates, format_candidates
    from .trace import jsonable, load_trace

    report = compare_candidates(load_trace(args.trace), args.node_a, args.node_b)
    print(json.dumps(jsonable(report)) if args.json else format_candidates(report))
    return 0


def _export(args) -> int:
    from .trace import load_trace
    from .viz.export import write_html

    from .files import refuse_overwriting_input
    refuse_overwriting_input([args.trace], args.out, "the output")
    _check_output(args.out, "the output")
    trace = load_trace(args.trace)
    path = write_html(trace, args.out)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB): open it in any browser")
    return 0


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """MEDAL's own warnings as ``medal: warning: ...`` lines; others as Python shows them."""
    from .errors import MedalWarning
    if issubclass(category, MedalWarning):
        print(f"medal: warning: {message}", file=file or sys.stderr)
    else:
        _python_show_warning(message, category, filename, lineno, file, line)


def main(argv: list[str] | None = None) -> int:
    import warnings
    global _python_show_warning
    if warnings.showwarning is not _show_warning:
        _python_show_warning = warnings.showwarning
        warnings.showwarning = _show_warning
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    serving_flags: list[str] = []
    if argv[:1] == ["lm-eval"]:  # every flag is lm-eval's (--help included)
        return _lm_eval(argparse.Namespace(harness_args=argv[1:]))
    if argv[:1] in (["app"], ["serve"]):  # its own flags; the rest: the operator's settings
        args, serving_flags = parser.parse_known_args(argv)
    else:
        args = parser.parse_args(argv)
    args.serving_flags = serving_flags
    from .provenance import set_command
    set_command(argv)  # recorded in every trace and bench result this command writes
    try:
        if args.command in ("app", "serve"):
            _check_range("port", args.port, 1, 65535)
        return args.func(args)
    except MedalError as exc:
        print(error_line(exc), file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. the disk filled up while writing an output
        where = f" {exc.filename}" if exc.filename else ""
        print(error_line(f"cannot write or read{where}: {exc.strerror or exc}"), file=sys.stderr)
        return 2
    except RecursionError:
        print(error_line("an input is nested too deeply"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
