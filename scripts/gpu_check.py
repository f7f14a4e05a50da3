"""Real-size cost of MEDAL on a LLaDA or Dream checkpoint folder (not part of the tests).

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
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

import torch  # noqa: E402

from medal.config import GenerationConfig  # noqa: E402
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="model spec, e.g. llada:/tmp/llada-8b or dream:DIR")
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
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    figures = profile(model, "countdown", problems, config, search_only=args.search_only)
    if device.type == "cuda":
        peak = torch.cuda.max_memory_allocated(device)
        out["peak_bytes"] = peak
        print(f"measured peak GPU memory over MEDAL and greedy: {peak / GiB:.2f} GiB = "
              f"{peak / weights:.2f} x weights (target <= 1.25)")
    else:
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        out["peak_rss_bytes"] = rss
        print(f"CPU: process peak resident memory {rss / GiB:.2f} GiB (grew "
              f"{max(rss - rss0, 0) / GiB:.2f} GiB during the runs; includes Python and the "
              "tokenizer, so only an upper bound)")
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
        a = greedy(load_model(args.model, trust_remote_code=args.trust_remote_code or None,
                              device="cpu", dtype="float32"))
        b = greedy(load_model(args.model, trust_remote_code=args.trust_remote_code or None,
                              device="cuda", dtype="float32"))
        ok = a == b
        out["cpu_gpu_greedy_agree"] = ok
        print(f"greedy tokens CPU == GPU (float32): {'yes' if ok else 'NO'}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
