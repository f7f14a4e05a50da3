"""The commands that run a model: ``generate``, ``bench``, ``train``, ``app`` and ``lm-eval``."""
from __future__ import annotations

import sys

from ..config import MAX_LOCK_STEP
from ..errors import InputError
from .checks import (MAX_PROBLEMS, TRAIN_RANGES, check_output, check_problem,
                     check_problems_file, check_range, upload_limit_warning)
from .settings import config_from_args, parse_sweep


def train_memory_estimate(layers: int, width: int, batch_size: int, length: int,
                          vocab: int = 128) -> int:
    """Bytes training the built-in model needs, roughly: float32 weights, gradients and
    Adam's two moments (16 bytes a parameter) and the activations a step keeps for the
    backward pass (~24 floats per token, layer and width, plus the attention scores)."""
    params = layers * (12 * width * width + 13 * width) + (2 * vocab + length) * width
    activations = batch_size * length * layers * (24 * width + 4 * length) * 4
    return 16 * params + activations


def check_train_memory(args) -> None:
    """Refuse a model that cannot fit before allocating it (an OOM kill says nothing)."""
    length = (args.prompt_length or 26) + (args.answer_length or 28)
    need = train_memory_estimate(args.layers, args.width, args.batch_size, length)
    from ..memory import available_memory
    have = available_memory()
    if have is not None and need > 0.8 * have:
        raise InputError(f"training {args.layers} layers x {args.width} wide with batches of "
                         f"{args.batch_size} needs about {need / 2**30:.1f} GiB; this machine "
                         f"has {have / 2**30:.1f} GiB available. Use a smaller --width, "
                         "--layers or --batch-size")


def train_command(args) -> int:
    for name, (low, high) in TRAIN_RANGES.items():
        check_range(name, getattr(args, name), low, high)
    check_range("seed", args.seed, 0, 4_294_967_295)
    for name in ("decompose_share", "four_share", "uniform_target_share"):
        check_range(name, getattr(args, name), 0, 1)
    if not 0 < args.lr <= 10:
        raise InputError(f"--lr must be above 0 and at most 10, got {args.lr}")
    from ..train import check_templates, train
    check_templates(args.task, args.templates)
    check_output(args.out, "--out", directory=True)
    check_train_memory(args)
    info = train(task=args.task, out=args.out, steps=args.steps, batch_size=args.batch_size,
                 lr=args.lr, seed=args.seed, n_layer=args.layers, n_embd=args.width,
                 prompt_length=args.prompt_length, answer_length=args.answer_length,
                 threads=args.threads, decompose_share=args.decompose_share,
                 four_share=args.four_share, uniform_target_share=args.uniform_target_share,
                 canonical_answers=args.canonical_answers, init=args.init, bf16=args.bf16,
                 templates=args.templates)
    print(f"saved {args.out} ({info['training']['parameters']} parameters, "
          f"{info['training']['seconds']:.0f} s, final loss {info['training']['final_loss']})")
    return 0


def bench_command(args) -> int:
    from pathlib import Path

    from .. import bench
    from ..models import load_model, model_options

    config = config_from_args(args)
    if args.parts and not args.profile:
        raise InputError("--parts splits --profile's bookkeeping: give it with --profile")
    strategies = bench.parse_strategies(args.strategies)
    from ..engine import STRATEGIES
    if len(strategies) > len(STRATEGIES) or len(set(strategies)) != len(strategies):
        raise InputError(f"--strategies names each strategy at most once ({len(STRATEGIES)} "
                         f"exist), got {len(strategies)} names")
    if len(args.sweep) > 8:
        raise InputError(f"at most 8 --sweep flags, got {len(args.sweep)}")
    sweeps = [parse_sweep(s) for s in args.sweep]
    for name, values in sweeps:
        if len(values) > 64:
            raise InputError(f"--sweep {name}: at most 64 values, got {len(values)}")
        for v in values:
            config_from_args(args, **{name: v})  # each value within the engine's range
    check_range("n", args.n, 1, MAX_PROBLEMS)
    check_range("lock_step", args.lock_step, 1, MAX_LOCK_STEP, "--lock-step")
    if args.problems:
        check_problems_file(args.problems)
    out = Path(args.out)
    check_output(args.out, "--out")
    from ..files import refuse_overwriting_input
    refuse_overwriting_input([args.problems], args.out, "--out")
    for sibling in (["frontier.html"] if args.frontier else []) + [
            f"sweep_{n}.{ext}" for n, _ in sweeps for ext in ("json", "html")]:
        check_output(str(out.with_name(sibling)), "--out")
    problems, source = bench.load_or_generate(args.task, args.problems, args.n, args.seed)
    model = load_model(args.model or f"builtin:{args.task}", **model_options(args))
    out = Path(args.out)
    if args.profile:
        from ..profile import format_profile, profile
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
    if doc.get("kv_cache"):
        print(f"kv cache: {doc['kv_cache']} -- Fast-dLLM's block cache: the answers are "
              "APPROXIMATE, they may differ from the exact decode's (docs/SPEED.md)")
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
        from ..viewer.bench import measure_ui_step
        figures = measure_ui_step(model, task=args.task, threads=1)
        print("UI step: " + ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}"
                                      for k, v in figures.items()))
    return 0


def generate_command(args) -> int:
    import json

    from tqdm.auto import tqdm

    from ..engine import Run
    from ..models import load_model, model_options
    from ..trace import MAX_TRACE_BYTES, write_trace

    config = config_from_args(args)  # bad parameters fail before the model loads
    if args.prompt is None and args.problem is None:
        raise InputError("give --prompt TEXT or --problem JSON")
    check_problem(args.problem)
    check_output(args.trace, "--trace")
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
        warning = upload_limit_warning(write_trace(run.trace, args.trace), MAX_TRACE_BYTES)
        if warning:
            print(warning, file=sys.stderr)
    if args.json:
        out = {"answer": res.answer, "text": res.text, "verified": res.verified,
               "forwards": res.forwards, "sequence_forwards": res.sequence_forwards,
               "cost": res.cost(),
               "seconds": round(res.seconds, 4), "strategy": run.strategy,
               "prompt": run.model_prompt, "seed": config.seed,
               "kv_cache": getattr(model, "kv_cache_mode", None)}
        if res.search is not None:
            out.update(stop_reason=res.search.stop_reason, iterations=res.search.iterations,
                       winner=res.search.winner)
        if args.trace:
            out["trace"] = args.trace
        print(json.dumps(out))
        return 0
    print(f"prompt:    {run.model_prompt}")
    print(f"answer:    {res.text}")
    if res.verified is not None:
        print(f"verified:  {'yes' if res.verified else 'no'}")
    if res.search is not None:
        print(f"search:    {res.search.iterations} iterations, stopped by "
              f"{res.search.stop_reason}; winner node {res.search.winner}")
    print(f"forwards:  {res.forwards} model calls ({res.sequence_forwards} sequences), "
          f"{res.seconds:.2f} s")
    print(f"cost:      {res.token_passes} token passes; {res.valid_tokens} output tokens, "
          + (f"TPF {res.tpf:.2f}" if res.tpf is not None else "TPF n/a (no forward)")
          + " (medal.cost)")
    if getattr(model, "kv_cache_mode", None):
        print(f"kv cache:  {model.kv_cache_mode} -- Fast-dLLM's block cache: the answer is "
              "APPROXIMATE, it may differ from the exact decode's (docs/SPEED.md)")
    if args.trace:
        print(f"trace:     {args.trace}")
    return 0


def serve_command(args) -> int:
    """Start the app (``medal app``; ``serve`` is the same command): the operator's
    settings, the app's Streamlit options, and nothing asked of the internet."""
    from .. import serving
    from ..app import MAIN
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
    from ..app import warm
    warm()      # the Run page's imports and the examples' frames, while Streamlit starts
    print(f"serving {len(settings.models)} models to visitors; remote code "
          f"{'allowed' if settings.trust_remote_code else 'not allowed'}; limits "
          + ", ".join(f"{k} {v}" for k, v in settings.limits.items()), file=sys.stderr)
    return st_cli.main()


def lm_eval_command(args) -> int:
    from ..lm_eval import main as harness
    return harness(args.harness_args)


def lm_eval_tasks_command(args) -> int:
    from ..lm_eval import TASKS_DIR
    print(TASKS_DIR)
    return 0
