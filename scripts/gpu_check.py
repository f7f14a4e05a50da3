"""Real-size cost of MEDAL on a LLaDA or Dream checkpoint folder, or on full-size random
weights built on the device itself (issue 29's GPU check; not part of the tests).

    python scripts/gpu_check.py --random llada --random dream --json gpu.json

builds LLaDA-8B and Dream-7B from the shipped configs
(``tests/data/real-models/*/config.full-size.json``) with seeded random weights straight on
the device (nothing large is downloaded or written), and prints ONE JSON object on stdout
(the progress goes to stderr): the device's name, the network's forward time at batch 1
and 5, greedy / threshold / MEDAL wall time, sequence forwards and TPF (medal.cost) at the
paper's settings, with Fast-dLLM's KV cache off and on (prefix, dual: approximate), the
peak GPU memory against the memory guard's estimate
(:func:`medal.models.hf.memory_needed`) and the analytic one
(:func:`medal.profile.peak_memory_estimate`); with ``--floor 1,4,16`` the per-call floor
(a whole forward and a cached block's at each batch width: ms, the host's ms, operations
dispatched, the same forward as a CUDA graph). Random weights give the real time and memory of a
forward, not real answers: their confidences are low, so the threshold rule commits about
one slot a step and TPF near 1 is what random weights give, not what a trained model
gives. Every part -- each model's build and forward timing, each run, ``--floor`` at each
width, each ``--lock-step`` check (and its lock-step half), ``--builtin-lock-step`` at each
width (run first) -- starts only if the time used plus a guess of its own fits
``--budget-seconds`` (:class:`Budget`); what does not is recorded as skipped, saying why. The test suite dry-runs it on the CPU with the tiny configs
(``--config``, short answers). Needs only torch, transformers, safetensors and tokenizers
(no streamlit or plotly on its path).

The original mode, on a checkpoint folder:

    python scripts/make_random_checkpoint.py --config tests/data/real-models/llada/config.full-size.json \\
        --tokenizer tests/data/real-models/llada --code DIR_WITH_LLADA_CODE --dtype bf16 --out /tmp/llada-8b
    python scripts/gpu_check.py llada:/tmp/llada-8b --trust-remote-code

It reports, on the device the model loads to (a CUDA GPU when there is one, else the CPU):

* model forwards per second at batch 1 and batch 5 (K2: one MCTS expansion) on the
  decomposition prompt + ``--gen-length`` answer slots: the network alone, and the whole
  model call (network + scoring on the device + the copy of the top-k figures);
* peak memory of a MEDAL search (CUDA: ``torch.cuda.max_memory_allocated``; the target is
  the weights + 25%), beside the analytic estimate of :func:`medal.profile.peak_memory_estimate`;
* greedy against MEDAL at the paper's settings (gen length 256, steps 256, block 32, L_c 20,
  K1 3, K2 5, C 3): wall time, sequences evaluated, and MEDAL's search time split into
  network, scoring and tree bookkeeping (see medal/profile.py).

Random weights give the real memory and time of a forward, not meaningful answers, so
the search's shape (iterations, sequences) on random weights is indicative only.
``--json FILE`` writes every figure.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

import torch  # noqa: E402

from medal.config import GenerationConfig  # noqa: E402
from medal.errors import InputError  # noqa: E402
from medal.models import load_model  # noqa: E402
from medal.profile import GiB, format_profile, peak_memory_estimate, profile  # noqa: E402
from medal.runner import ModelRunner  # noqa: E402
from medal.tasks import get_task  # noqa: E402
from medal.tasks.decomposition import decompose_prompt  # noqa: E402

PAPER = dict(gen_length=256, steps=256, block_length=32, lc=20, k1=3, k2=5, candidates=3)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def rate(fn, device, seconds: float) -> float:
    fn()  # warm-up (kernels, allocator)
    sync(device)
    n, t0 = 0, time.perf_counter()
    while n < 2 or time.perf_counter() - t0 < seconds:
        fn()
        n += 1
    sync(device)
    return n / (time.perf_counter() - t0)


def net_shape(model) -> dict:
    native = getattr(model.net, "cfg", None)  # MEDAL's native LLaDA/Dream network
    if native is not None:
        return {"hidden": native.hidden, "intermediate": native.mlp_hidden,
                "layers": native.layers}
    cfg = model.net.config
    pick = lambda *names: next((getattr(cfg, n) for n in names if getattr(cfg, n, None)), 0)  # noqa: E731
    return {"hidden": pick("d_model", "hidden_size"),
            "intermediate": pick("mlp_hidden_size", "intermediate_size"),
            "layers": pick("n_layers", "num_hidden_layers")}


def load_on(args, device: str, loader=None):
    """The checkpoint of ``args`` again, in float32 on ``device``, with the same
    implementation (native or remote) the run was asked for."""
    loader = loader or load_model
    return loader(args.model, trust_remote_code=args.trust_remote_code or None,
                  device=device, dtype="float32", implementation=args.implementation)


def rss_bytes(field: str = "VmRSS") -> int | None:
    """This process's resident memory (``VmRSS``) or its peak since the last reset
    (``VmHWM``), from /proc/self/status (Linux); None elsewhere."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def reset_peak_rss() -> bool:
    """Reset this process's peak resident memory (``VmHWM``) to its current resident
    memory (Linux >= 4.0: ``echo 5 > /proc/self/clear_refs``); False where it cannot."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


class PeakMemory:
    """The peak memory a block of work allocates beyond what was allocated before it.

    CUDA: ``torch.cuda.max_memory_allocated`` (reset first) minus the allocation before:
    the caching allocator's own count of live tensors, so neither the cache nor other
    processes count. CPU: the process's peak resident memory (``VmHWM``, reset first)
    minus its resident memory before: what the work added at its peak, with the weights,
    Python and the tokenizer (already resident) left out. (The old figure was the
    lifetime ``ru_maxrss`` growth, which cannot be reset and mixed the warm-up's batch-5
    forwards and the allocator's retained arenas into the runs.)"""

    def __init__(self, device: torch.device):
        self.device = device
        self.extra = None
        self.how = None

    def __enter__(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            self.before = torch.cuda.memory_allocated(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
        else:
            self.reset = reset_peak_rss()
            self.before = rss_bytes()
        return self

    def __exit__(self, *exc):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            self.peak = torch.cuda.max_memory_allocated(self.device)
            self.extra = self.peak - self.before
            self.how = "torch.cuda.max_memory_allocated"
        elif self.before is not None and self.reset:
            self.peak = rss_bytes("VmHWM")
            self.extra = max(0, self.peak - self.before)
            self.how = "peak resident memory (VmHWM, reset before) - resident before"
        else:
            self.peak = None
            self.how = "unavailable on this system (no /proc/self/clear_refs)"
        return False


REAL_MODELS = ROOT / "tests" / "data" / "real-models"
#: the issue-29 check's strategies: (label, strategy, settings beyond the paper's)
#: and the KV cache (None: off; "prefix", "dual": approximate)
RANDOM_RUNS = (("greedy", "greedy", {}, None), ("threshold", "threshold", {}, None),
               ("medal", "medal", {}, None),
               ("medal+threshold_phase_c", "medal", {"threshold_phase_c": True}, None),
               ("greedy+kv_prefix", "greedy", {}, "prefix"),
               ("greedy+kv_dual", "greedy", {}, "dual"),
               ("medal+threshold_phase_c+kv_dual", "medal", {"threshold_phase_c": True},
                "dual"),
               # MEDAL reads the decomposition prompt, greedy the plain one: which part of
               # MEDAL's cost is the search, which the longer prompt
               ("greedy+decomposition", "greedy", {"decompose": True}, None),
               ("medal-no-decomposition", "medal-no-decomposition", {}, None),
               ("medal-no-decomposition+threshold_phase_c+kv_dual", "medal-no-decomposition",
                {"threshold_phase_c": True}, "dual"))


def build_random(family: str, config_path: Path, device: torch.device, dtype: torch.dtype,
                 seed: int = 0):
    """A native LLaDA or Dream network of the config's full size, with seeded random
    weights made on ``device`` itself (matrices N(0, init std), norms 1, biases 0, as
    scripts/make_random_checkpoint.py), wrapped like a loaded checkpoint (the shipped
    tokenizer and generation config of tests/data/real-models/FAMILY)."""
    from medal.models.hf import DreamLM, Llada2LM, LLaDALM, ModelSource
    from medal.models.native import NativeConfig, NativeLM
    from medal.models.tokenizers import load_tokenizer
    cls = {"llada": LLaDALM, "dream": DreamLM, "llada2": Llada2LM}[family]
    directory = REAL_MODELS / family
    config = json.loads(Path(config_path).read_text())
    cfg = NativeConfig.from_dict(family, config, str(config_path))
    with torch.device("meta"):
        net = NativeLM(cfg)
    net = net.to(dtype).to_empty(device=device)   # no float32 copy, no CPU copy
    std = float(config.get("init_std") or config.get("initializer_range") or 0.02)
    gen = torch.Generator(device=device).manual_seed(seed)
    with torch.no_grad():
        for name, p in net.named_parameters():
            if p.dim() >= 2:
                p.normal_(0.0, std, generator=gen)
            elif name.endswith("bias"):
                p.zero_()
            else:
                p.fill_(1.0)
    generation = json.loads((directory / "generation_config.json").read_text())
    source = ModelSource(family, f"random:{Path(config_path).name}", local=True)
    return cls(net.eval(), load_tokenizer(directory), source, device=device, dtype=dtype,
               config=config, implementation="native", generation_config=generation)


def log(*parts) -> None:
    print(*parts, file=sys.stderr, flush=True)


def now() -> float:
    """The check's clock (a function of its own, so that the tests can run it on a made-up
    clock)."""
    return time.perf_counter()


class Budget:
    """``--budget-seconds``: every part of the check (a model's build and forward timing,
    each run, the floor at each width, each lock-step check, each width of the built-in
    lock-step) starts only if the time used plus a guess of its own time fits; what does
    not fit is recorded as skipped, with the figures of the guess."""

    def __init__(self, seconds: float):
        self.seconds, self.start = seconds, now()

    def elapsed(self) -> float:
        return now() - self.start

    def left(self) -> float:
        return self.seconds - self.elapsed()

    def skip(self, guess: float) -> dict | None:
        """None when a part guessed to take ``guess`` seconds fits; else the entry that
        says it was skipped and why."""
        elapsed = self.elapsed()
        if elapsed + guess <= self.seconds:
            return None
        return {"skipped": f"would pass the budget ({elapsed:.0f} s + about {guess:.0f} s "
                           f"of {self.seconds:.0f})"}


def random_check(args) -> dict:
    """Issue 29's GPU check on full-size random weights: one dict, see the docstring."""
    from medal.engine import Run
    from medal.models.hf import choose_device, memory_needed
    budget = Budget(args.budget_seconds)
    device = choose_device(args.device)
    dtype = {"auto": torch.bfloat16, "bf16": torch.bfloat16, "bfloat16": torch.bfloat16,
             "float32": torch.float32, "fp32": torch.float32}[args.dtype]
    used = {k: getattr(args, k) for k in PAPER}
    import transformers
    out = {"device": (torch.cuda.get_device_name(device) if device.type == "cuda" else
                      f"CPU ({platform.processor() or platform.machine()}, "
                      f"{torch.get_num_threads()} threads)"),
           "torch": torch.__version__, "transformers": transformers.__version__,
           "dtype": str(dtype).replace("torch.", ""), "settings": used,
           "paper_settings": used == PAPER, "max_iterations": args.max_iterations,
           "weights": "random (seeded), built on the device: time and memory are real, "
                      "answers, confidences and so TPF are not a trained model's",
           "kv_cache": "Fast-dLLM's block cache (approximate): runs named +kv_prefix / "
                       "+kv_dual; their answers may differ from the exact runs'",
           "budget_seconds": args.budget_seconds, "models": {}}
    if args.builtin_lock_step:
        # first: the lock-step target is the check's main question, and the cheapest part
        out["builtin_lock_step"] = guarded(lambda: builtin_lock_step(
            args.builtin_lock_step, device, args.builtin_problems, budget))
    task = get_task("countdown")
    problem = task.generate(1, seed=10_000)[0]
    for spec in args.random or []:
        family, _, path = spec.partition("=")
        if family not in ("llada", "dream", "llada2"):
            raise SystemExit(f"--random takes llada, dream or llada2 (optionally "
                             f"=CONFIG.json), got {spec!r}")
        path = Path(path) if path else REAL_MODELS / family / "config.full-size.json"
        fig = out["models"][family] = {"config": str(path)}
        # the build (H100, full size: 0.3-4.8 s) and the forward timing at batch 1 and 5
        skipped = budget.skip(BUILD_GUESS_SECONDS + 2 * (args.seconds + 1))
        if skipped:
            fig.update(skipped)
            continue
        t0 = time.perf_counter()
        model = build_random(family, path, device, dtype)
        sync(device)
        fig["build_seconds"] = time.perf_counter() - t0
        params = sum(p.numel() for p in model.net.parameters())
        weights = sum(p.numel() * p.element_size() for p in model.net.parameters())
        fig.update(parameters=params, weights_bytes=weights,
                   memory_guard_bytes=memory_needed(params, dtype))
        log(f"{family}: {params / 1e9:.2f} B parameters built on {out['device']} in "
            f"{fig['build_seconds']:.1f} s")
        prompt = decompose_prompt("countdown", task.format_prompt(problem), problem,
                                  decompose=True, n_subtasks=3, builtin=False)
        L = used["gen_length"]
        prompt_ids = model.encode_prompt(prompt, L)
        fig["prompt_tokens"] = len(prompt_ids)
        prompt_t = torch.tensor(prompt_ids, dtype=torch.long)
        for batch in (1, 5):
            ids = torch.cat([prompt_t.expand(batch, -1),
                             torch.full((batch, L), model.mask_id, dtype=torch.long)], 1)
            ids = ids.to(device)
            fig[f"forward_ms_batch{batch}"] = 1000 / rate(lambda: model.logits(ids, L),
                                                          device, args.seconds)
        log(f"{family}: forward {fig['forward_ms_batch1']:.1f} ms at batch 1, "
            f"{fig['forward_ms_batch5']:.1f} ms at batch 5 ({len(prompt_ids)} + {L} tokens)")
        shape = net_shape(model)
        fig["peak_estimate"] = peak_memory_estimate(
            params=params, dtype_bytes=dtype.itemsize, batch=used["k2"],
            tokens=len(prompt_ids) + L, answer=L, vocab=model.vocab_size,
            hidden=shape["hidden"], intermediate=shape["intermediate"])
        runs = fig["runs"] = {}
        peak_extra, measured_by = 0, None
        for label, strategy, extra, kv in RANDOM_RUNS:
            if args.only and label not in args.only:
                continue
            # a run's forwards at most: one a slot (greedy), K2-wide search steps besides
            guess = (L + used["lc"] * 2) * fig["forward_ms_batch5"] / 1000
            skipped = budget.skip(guess)
            if skipped:
                runs[label] = skipped
                continue
            settings = dict(used)
            if family == "llada2":
                # a block model lengthens the answer to whole blocks after the prompt
                # (GenerationConfig.resolved): one step a slot of that answer, and the
                # search within the first block (its default L_c fits it)
                settings["steps"] = None
                settings["lc"] = None
            if kv and family == "llada2":
                runs[label] = {"skipped": "the KV cache is refused for LLaDA2 (block-causal)"}
                continue
            config = GenerationConfig(**settings, max_iterations=args.max_iterations, seed=0,
                                      **extra)
            model.set_kv_cache(kv)
            try:
                run = Run(model, task="countdown", problem=problem, strategy=strategy,
                          config=config)
            except InputError as exc:       # settings this model refuses: said, not fatal
                model.set_kv_cache(None)
                runs[label] = {"skipped": str(exc)}
                continue
            with PeakMemory(device) as mem:
                res = run.finish()
            model.set_kv_cache(None)
            measured_by = mem.how
            if mem.extra is not None:
                peak_extra = max(peak_extra, mem.extra)
            runs[label] = {"seconds": res.seconds, "model_seconds": res.model_seconds,
                           **res.cost(), "tokens_per_sequence": (
                               res.token_passes // res.sequence_forwards
                               if res.sequence_forwards else None), "iterations": res.search and res.search.iterations,
                           "search_seconds": res.search and res.search.seconds,
                           "peak_above_weights_bytes": mem.extra, "kv_cache": kv}
            log(f"{family} {label}: {res.seconds:.1f} s, {res.forwards} calls, "
                f"{res.sequence_forwards} sequences, TPF {res.tpf or 0:.2f}")
        fig["peak_bytes"] = weights + peak_extra
        fig["peak_measured_by"] = measured_by
        greedy = runs.get("greedy", {}).get("seconds")
        if greedy:
            for label in runs:
                if label != "greedy" and runs[label].get("seconds"):
                    runs[label]["x_greedy_wall_time"] = runs[label]["seconds"] / greedy
        if args.floor:
            fig["floor"] = guarded(lambda: floor_check(
                model, len(prompt_ids), L, used["block_length"], args.floor, args.floor_seconds,
                budget))
        if args.lock_step > 1:
            for strategy in args.lock_step_strategies:
                for kv in args.lock_step_kv:
                    label = "lock_step" + ("" if strategy == "medal" else f"+{strategy}") + (
                        "" if kv == "off" else f"+kv_{kv}")
                    # one at a time and in lock-step: at most twice the runs one at a time,
                    # a run guessed from this model's measured run of the strategy, else
                    # from its forwards
                    run = next((r for k, r in runs.items() if r.get("seconds") and k ==
                                strategy + ("" if kv == "off" else f"+kv_{kv}")),
                               runs.get(strategy) or {})
                    one = run.get("seconds") or (L + used["lc"] * 2) * fig[
                        "forward_ms_batch5"] / 1000
                    skipped = budget.skip(2 * args.lock_step * one)
                    fig[label] = skipped or guarded(lambda: lock_step_check(
                        model, task, GenerationConfig(**used, max_iterations=args.max_iterations,
                                                      seed=0),
                        args.lock_step, budget, strategy=strategy,
                        kv=None if kv == "off" else kv))
        del model
        if device.type == "cuda":
            torch.cuda.empty_cache()
    out["wall_seconds"] = budget.elapsed()
    return out


#: --budget-seconds: the guess of a full-size model's build on the device (measured on an
#: H100: LLaDA-8B 4.8 s, Dream-7B 0.3 s)
BUILD_GUESS_SECONDS = 15.0


def guarded(fn) -> dict:
    """A part of the check that fails reports its error in the JSON; the rest still runs."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 -- one JSON, whatever one part did
        import traceback
        log(traceback.format_exc())
        return {"error": f"{type(exc).__name__}: {exc}"}


def lock_step_check(model, task, config: GenerationConfig, width: int, budget: Budget,
                    strategy: str = "medal", kv: str | None = None) -> dict:
    """``strategy`` (MEDAL) on ``width`` problems whose prompts have the same length
    (lock-step joins equal-length forwards only), one at a time and then in lock-step,
    with Fast-dLLM's KV cache ``kv`` (each run its own; the cached spans of the runs in
    one block share a call): the wall time of each, the model calls, and whether the
    answers agree (on a GPU a row's last bit may depend on the batch, docs/SPEED.md, so
    they may not). The lock-step half runs only if the budget has room for as long as the
    runs one at a time took."""
    from medal.bench import LockStep
    from medal.engine import Run

    def runs(problems):
        return [Run(model, task="countdown", problem=p, strategy=strategy, config=config)
                for p in problems]
    by_length: dict[int, list] = {}
    for p in task.generate(64, seed=20_000):
        n = Run(model, task="countdown", problem=p, strategy="medal",
                config=config).runner.prompt.shape[0]
        by_length.setdefault(n, []).append(p)
    problems = max(by_length.values(), key=len)[:width]
    out = {"width": len(problems), "strategy": strategy, "kv_cache": kv, "prompt_tokens":
           next(n for n, ps in by_length.items() if ps[:width] == problems)}
    rows = {}
    for mode, w in (("one_at_a_time", 1), ("lock_step", len(problems))):
        if rows:
            skipped = budget.skip(rows["one_at_a_time"]["wall_seconds"])
            if skipped:
                out["lock_step"] = skipped
                break
        stepper = LockStep(w)
        model.set_kv_cache(kv)
        t0 = now()
        try:
            done = list(stepper.run(runs(problems)))
        finally:
            model.set_kv_cache(None)
        wall = now() - t0
        rows[mode] = {"wall_seconds": wall, "runs_per_second": len(done) / wall,
                      "model_calls": stepper.model_calls, "sequences": stepper.sequences,
                      "answers": sorted(r.result.text for r in done)}
        log(f"lock-step check, {mode}: {len(done)} {strategy} runs (kv cache {kv or 'off'}) "
            f"in {wall:.1f} s, "
            f"{stepper.model_calls} model calls")
    out.update(rows)
    if "lock_step" in rows:
        out["speedup"] = rows["one_at_a_time"]["wall_seconds"] / rows["lock_step"]["wall_seconds"]
        out["same_answers"] = rows["one_at_a_time"]["answers"] == rows["lock_step"]["answers"]
    for row in rows.values():
        row.pop("answers")
    return out


def per_call(fn, device: torch.device, seconds: float) -> dict:
    """ms a call of ``fn`` (synchronised), and the host's share: the ms until the call
    returns, before waiting for the device. Where the two are equal the device waits on
    the host (the call is bound by issuing its operations); on the CPU they are the same
    by construction."""
    fn()
    sync(device)
    n, issue, total, start = 0, 0.0, 0.0, time.perf_counter()
    while n < 3 or time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        sync(device)
        issue, total, n = issue + t1 - t0, total + time.perf_counter() - t0, n + 1
    return {"ms": total / n * 1e3, "host_ms": issue / n * 1e3, "calls": n}


def dispatched_ops(fn) -> int:
    """The tensor operations one call of ``fn`` dispatches (each costs the host a few
    microseconds in eager PyTorch, whatever its size)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.n += 1
            return func(*args, **(kwargs or {}))
    with Count():
        fn()
    return Count.n


def graph_replay(fn, device: torch.device, seconds: float) -> dict:
    """``fn`` captured once as a CUDA graph and replayed: its ms a call, and whether the
    replay's output equals the eager call's (a measurement for deciding on CUDA graphs;
    MEDAL does not use them)."""
    if device.type != "cuda":
        return {"skipped": "CUDA graphs need a CUDA device"}
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = fn()
    graph.replay()
    eager = fn()
    sync(device)
    out = per_call(graph.replay, device, seconds)
    out["equal_to_eager"] = bool(torch.equal(captured, eager))
    out["max_abs_diff"] = float((captured.float() - eager.float()).abs().max())
    return out


def floor_check(model, prompt_tokens: int, L: int, block: int, widths: list[int],
                seconds: float, budget: Budget | None = None) -> dict:
    """The per-call floor (docs/SPEED.md, "Lock-step with the KV cache"): the network's
    forward of the whole sequence (uncached) and of one block attending to a dual cache of
    the rest (what a cached decode step computes), at each batch width: ms a call, the
    host's ms to issue it, the operations it dispatches, and the same forward replayed
    as a CUDA graph. Where ms equals host ms and the graph's replay is much faster, the
    call is bound by the host, and lock-step (more rows a call) or CUDA graphs pay.
    ``budget``: each width runs only if its guess fits (two calls, each timed for about
    ``seconds`` eager and ``seconds`` as a graph, and a few more to warm up and count)."""
    net, device = model.net, model.device
    T = prompt_tokens + L
    g = torch.Generator().manual_seed(0)
    ids = torch.cat([torch.randint(0, 1000, (max(widths), prompt_tokens), generator=g),
                     torch.full((max(widths), L), model.mask_id, dtype=torch.long)], 1)
    ids = ids.to(device)
    lo, hi = prompt_tokens, prompt_tokens + min(block, L)
    positions = torch.arange(lo, hi, device=device)[None]
    out = {"tokens": T, "block": hi - lo, "widths": {}}
    with torch.no_grad():
        keep: list = []
        net.forward_span(ids[:1], rows=L, keep=keep)
        cache = [((k[:, :, :lo], v[:, :, :lo]), (k[:, :, hi:], v[:, :, hi:])) for k, v in keep]
        del keep
        for w in widths:
            skipped = budget and budget.skip(2 * (2 * seconds + 1))
            if skipped:
                out["widths"][str(w)] = skipped
                continue
            kv = [tuple((k.expand(w, -1, -1, -1).contiguous(),
                         v.expand(w, -1, -1, -1).contiguous()) for k, v in layer)
                  for layer in cache]
            full_ids, span_ids = ids[:w].contiguous(), ids[:w, lo:hi].contiguous()
            calls = {"full": lambda: net(full_ids, rows=L),
                     "cached_block": lambda: net.forward_span(span_ids, positions=positions,
                                                              kv=kv)}
            row = out["widths"][str(w)] = {}
            for name, fn in calls.items():
                fig = per_call(fn, device, seconds)
                fig["ops"] = dispatched_ops(fn)
                fig["graph"] = guarded(lambda: graph_replay(fn, device, seconds))
                row[name] = fig
                graph = fig["graph"].get("ms")
                log(f"floor, width {w}, {name}: {fig['ms']:.2f} ms a call, host "
                    f"{fig['host_ms']:.2f} ms, {fig['ops']} ops"
                    + (f"; as a CUDA graph {graph:.2f} ms" if graph else ""))
    return out


def builtin_lock_step(widths: list[int], device: torch.device, n_problems: int,
                      budget: Budget | None = None) -> dict:
    """`medal bench --device DEVICE --lock-step W` on the built-in models (medal and
    greedy on held-out problems) at each width: runs per second, model calls, and whether
    the records equal width 1's (answers and forwards). ``budget``: a task starts only if
    its warm-up fits (guessed: 5 s), and each width only if the width before it (the first:
    the warm-up's time a run, at the widest width, times the runs, times 2) fits."""
    from medal.bench import bench
    out = {}
    for task_name in ("countdown", "sudoku"):
        skipped = budget and budget.skip(5.0)
        if skipped:
            out[task_name] = skipped
            continue
        model = load_model(f"builtin:{task_name}", device=device.type)
        problems = get_task(task_name).generate(n_problems, seed=10_000)
        config = GenerationConfig(seed=0)
        t0 = time.perf_counter()
        bench(model, task_name, problems[:2], ["medal", "greedy"], config, progress=False,
              lock_step=max(widths))      # warm-up: imports, kernels, the allocator
        guess = (time.perf_counter() - t0) / 4 * 2 * n_problems * 2
        rows, first = {}, None
        # each width with the joint call's logits scored together (the default off the
        # CPU), and the widest also with each run scoring its own rows, for comparison
        plan = [(w, None) for w in widths] + [(max(widths), False)]
        for w, joint in plan:
            label = str(w) if joint is None else f"{w}, scored per run"
            skipped = budget and budget.skip(guess)
            if skipped:
                rows[label] = skipped
                continue
            speed = {}
            records = bench(model, task_name, problems, ["medal", "greedy"], config,
                            progress=False, lock_step=w, throughput=speed,
                            joint_scoring=joint)
            key = [(r["text"], r["forwards"]) for r in records]
            first = first if first is not None else key
            guess = speed["wall_seconds"]     # the next widths are no slower
            rows[label] = {**speed, "same_records_as_first": key == first,
                           "accuracy": sum(bool(r["verified"]) for r in records) / len(records),
                           "model_seconds": sum(r["model_seconds"] for r in records)}
            log(f"builtin {task_name} on {device}, lock-step {label}: {len(records)} runs in "
                f"{speed['wall_seconds']:.2f} s ({len(records) / speed['wall_seconds']:.1f}/s), "
                f"model calls and scoring {rows[label]['model_seconds']:.2f} s")
        base = rows[str(widths[0])].get("wall_seconds")
        for row in rows.values():
            if base and "wall_seconds" in row:
                row["speedup_vs_first"] = base / row["wall_seconds"]
        out[task_name] = {"device": str(device), "problems": n_problems, "widths": rows}
    return out


def widths(text: str) -> list[int]:
    """"1,4,16" -> [1, 4, 16] (an argparse type)."""
    return [int(x) for x in text.split(",")]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?",
                        help="model spec, e.g. llada:/tmp/llada-8b or dream:DIR (or --random)")
    parser.add_argument("--random", action="append", metavar="FAMILY[=CONFIG]",
                        help="issue 29's check: build FAMILY (llada, dream) with random "
                             "weights on the device from its shipped full-size config (or "
                             "CONFIG) and print one JSON; repeat for both")
    parser.add_argument("--budget-seconds", type=float, default=420.0,
                        help="--random: skip what would run past this (default 7 minutes)")
    parser.add_argument("--only", type=lambda t: [x for x in t.split(",") if x], default=None,
                        help="--random: run only these of its runs (comma list of labels: "
                             + ", ".join(r[0] for r in RANDOM_RUNS) + ")")
    parser.add_argument("--lock-step", type=int, default=1, metavar="N",
                        help="--random: also time N MEDAL runs one at a time and in lock-step")
    parser.add_argument("--lock-step-strategies", default=["medal"], metavar="S1,S2",
                        type=lambda t: [x for x in t.split(",") if x],
                        help="--lock-step: the strategies timed (default medal)")
    parser.add_argument("--lock-step-kv", default=["off"], metavar="off,prefix,dual",
                        type=lambda t: [x for x in t.split(",") if x],
                        help="--lock-step: with the KV cache off and/or on (each run its own "
                             "cache; results named lock_step+kv_MODE)")
    parser.add_argument("--builtin-lock-step", type=widths, default=None, metavar="W1,W2,...",
                        help="bench the built-in models on the device at these lock-step "
                             "widths (the first is the baseline, e.g. 1,16,64); with or "
                             "without --random")
    parser.add_argument("--builtin-problems", type=int, default=30,
                        help="--builtin-lock-step: problems a task (x medal, greedy)")
    parser.add_argument("--floor", type=widths, default=None, metavar="W1,W2,...",
                        help="with --random: time one forward of the whole sequence and of "
                             "one block against a dual cache at these batch widths (ms a call, "
                             "the host's ms, operations dispatched, as a CUDA graph)")
    parser.add_argument("--floor-seconds", type=float, default=1.0,
                        help="time per --floor figure")
    parser.add_argument("--trust-remote-code", action="store_true")
    parser.add_argument("--implementation", choices=["native", "remote"], default=None,
                        help="LLaDA/Dream: MEDAL's native code (default) or the checkpoint's")
    parser.add_argument("--skip-memory-check", action="store_true")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--problems", type=int, default=2, help="Countdown problems to time")
    parser.add_argument("--seconds", type=float, default=5.0, help="time per forwards/s figure")
    parser.add_argument("--max-iterations", type=int, default=200)
    parser.add_argument("--json", metavar="FILE", help="write every figure here")
    parser.add_argument("--search-only", action="store_true",
                        help="time MEDAL's search only (no phase C, no greedy run): for slow "
                             "machines; their sequences are then the config's decode steps")
    parser.add_argument("--compare-cpu", action="store_true",
                        help="on a GPU, also decode 16 slots greedily in float32 on the CPU and "
                             "on the GPU and check the tokens agree (small models only)")
    for k, v in PAPER.items():
        parser.add_argument("--" + k.replace("_", "-"), type=int, default=v)
    args = parser.parse_args(argv)
    wrong = [m for m in args.lock_step_kv if m not in ("off", "prefix", "dual")]
    if wrong:
        parser.error(f"--lock-step-kv takes off, prefix and dual, got {', '.join(wrong)}")
    if args.random or args.builtin_lock_step:
        figures = random_check(args)
        text = json.dumps(figures, indent=1)
        if args.json:
            Path(args.json).write_text(text + "\n")
        print(text)
        return 0
    if not args.model:
        parser.error("give a model spec, or --random llada / --random dream")

    model = load_model(args.model, trust_remote_code=args.trust_remote_code or None,
                       device=args.device, dtype=args.dtype, implementation=args.implementation,
                       memory_check=not args.skip_memory_check)
    device = model.device
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else None
    dtype = next(model.net.parameters()).dtype
    params = sum(p.numel() for p in model.net.parameters())
    weights = sum(p.numel() * p.element_size() for p in model.net.parameters())
    import transformers
    out = {"device": gpu or f"CPU ({platform.processor() or platform.machine()}, "
                            f"{torch.get_num_threads()} threads)",
           "torch": torch.__version__, "transformers": transformers.__version__,
           "model": model.name, "dtype": str(dtype), "parameters": params,
           "weights_bytes": weights}
    print(f"{model.name} on {out['device']}: {params / 1e9:.3f}B parameters, {dtype}, "
          f"weights {weights / GiB:.2f} GiB; torch {torch.__version__}, transformers "
          f"{transformers.__version__}")

    task = get_task("countdown")
    problem = task.generate(1, seed=10_000)[0]
    prompt = decompose_prompt("countdown", task.format_prompt(problem), problem, decompose=True,
                              n_subtasks=3, builtin=False)
    prompt_ids = model.encode_prompt(prompt, args.gen_length)
    L = args.gen_length
    runner = ModelRunner(model, prompt_ids, L)
    out["prompt_tokens"] = len(prompt_ids)
    for batch in (1, 5):
        answers = torch.full((batch, L), model.mask_id, dtype=torch.long)
        ids = torch.cat([runner.prompt.expand(batch, -1), answers], 1).to(device)
        network = rate(lambda: model.logits(ids, L), device, args.seconds)
        call = rate(lambda: runner._forward(answers), device, args.seconds)
        out[f"batch{batch}"] = {"network_forwards_per_s": network, "model_calls_per_s": call}
        print(f"batch {batch} x {ids.shape[1]} tokens ({len(prompt_ids)} prompt + {L} slots): "
              f"network {network:.2f} forwards/s; model call with scoring {call:.2f}/s "
              f"({batch * call:.2f} sequences/s)")

    shape = net_shape(model)
    estimate = peak_memory_estimate(params=params, dtype_bytes=dtype.itemsize, batch=args.k2,
                                    tokens=len(prompt_ids) + L, answer=L,
                                    vocab=model.vocab_size, hidden=shape["hidden"],
                                    intermediate=shape["intermediate"])
    out["peak_estimate"] = estimate
    print("analytic peak of a search step: " + ", ".join(
        f"{k} {v / GiB:.2f} GiB" for k, v in estimate.items() if k != "ratio_to_weights")
        + f" = {estimate['ratio_to_weights']:.2f} x weights (target <= 1.25)")

    config = GenerationConfig(**{k: getattr(args, k) for k in PAPER},
                              max_iterations=args.max_iterations, seed=0)
    problems = task.generate(args.problems, seed=10_000)
    with PeakMemory(device) as mem:
        figures = profile(model, "countdown", problems, config, search_only=args.search_only)
    if mem.extra is not None:
        # the weights are resident before and during the runs: peak = weights + extra
        peak = weights + mem.extra
        out["peak_bytes"] = peak
        out["peak_above_weights_bytes"] = mem.extra
        out["peak_measured_by"] = mem.how
        print(f"measured peak memory over MEDAL and greedy ({mem.how}): weights "
              f"{weights / GiB:.2f} GiB + {mem.extra / GiB:.2f} GiB = {peak / weights:.2f} x "
              f"weights (analytic estimate {estimate['ratio_to_weights']:.2f} x; "
              "target <= 1.25)")
    else:
        print(f"peak memory: {mem.how}")
    used = {k: getattr(args, k) for k in PAPER}
    label = "paper_settings" if used == PAPER else "settings"
    out[label] = {k: v for k, v in figures.items() if k != "rows"}
    out[label + "_rows"] = figures["rows"]
    out["settings_used"] = used
    print(("paper settings" if used == PAPER else "settings (NOT the paper's: "
           + ", ".join(f"{k} {v} (paper {PAPER[k]})" for k, v in used.items()
                       if v != PAPER[k]) + ")")
          + f" (gen {used['gen_length']}, steps {used['steps']}, block {used['block_length']}, "
          f"L_c {used['lc']}, K1 {used['k1']}, K2 {used['k2']}, C {used['candidates']}):")
    print(format_profile(figures))
    ok = True
    if args.compare_cpu and device.type == "cuda":
        from medal.engine import Run
        short = GenerationConfig(gen_length=16, lc=2, seed=0)

        def greedy(m):
            return Run(m, task="countdown", problem=problems[0], strategy="greedy", config=short,
                       decompose=False).finish().answer_ids
        a = greedy(load_on(args, "cpu"))
        b = greedy(load_on(args, "cuda"))
        ok = a == b
        out["cpu_gpu_greedy_agree"] = ok
        print(f"greedy tokens CPU == GPU (float32): {'yes' if ok else 'NO'}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
