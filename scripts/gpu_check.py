"""Check the transformers adapters on a CUDA GPU (not part of the test suite).

    python scripts/gpu_check.py                     # the tiny stand-ins: CPU vs GPU
    python scripts/gpu_check.py --model llada-8b-instruct --trust-remote-code   # + timing

For each stand-in (LLaDA-, Dream- and BERT-shaped, random weights, built as in the tests)
it decodes greedily on the CPU and on the GPU, both in float32, and checks that the tokens
are the same; then it prints model forwards per second on the GPU for a batch of K2 = 5
answer states (one MCTS expansion). With ``--model`` it also times that model on the GPU.
Exits 0 with a message when there is no GPU, 1 when CPU and GPU disagree.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import torch  # noqa: E402

from medal.config import GenerationConfig  # noqa: E402
from medal.engine import Run  # noqa: E402
from medal.models import load_model  # noqa: E402

PROMPT = "Use 4, 18, 13 to make 20."
BATCH = 5  # K2: children evaluated by one forward


def greedy_tokens(model, gen_length: int = 16) -> list[int]:
    cfg = GenerationConfig(gen_length=gen_length, lc=2, seed=0)
    return Run(model, task="countdown", prompt=PROMPT, strategy="greedy", config=cfg,
               decompose=False).finish().answer_ids


def forwards_per_second(model, gen_length: int, seconds: float = 3.0) -> tuple[float, int]:
    prompt = model.encode_prompt(PROMPT)
    ids = torch.tensor([prompt + [model.mask_id] * gen_length] * BATCH)
    model.logits(ids)  # warm-up (kernels, allocator)
    torch.cuda.synchronize()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        model.logits(ids)
        n += 1
    torch.cuda.synchronize()
    return n / (time.perf_counter() - t0), ids.shape[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="also time this model spec on the GPU")
    parser.add_argument("--trust-remote-code", action="store_true")
    parser.add_argument("--gen-length", type=int, default=256,
                        help="answer slots when timing --model")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print(f"no CUDA GPU visible to torch {torch.__version__}; nothing to check "
              "(the CPU paths are covered by tests/test_hf_adapters.py)")
        return 0
    import standins

    torch.backends.cuda.matmul.allow_tf32 = False  # float32 on both sides, like for like
    torch.backends.cudnn.allow_tf32 = False
    print(f"GPU: {torch.cuda.get_device_name()}  torch {torch.__version__}")
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for family, save in (("llada", standins.save_llada), ("dream", standins.save_dream),
                             ("mlm", standins.save_bert)):
            directory = save(Path(tmp) / family)
            spec = f"{family}:{directory}"
            cpu = load_model(spec, trust_remote_code=True, device="cpu", dtype="float32")
            gpu = load_model(spec, trust_remote_code=True, device="cuda", dtype="float32")
            bf16 = load_model(spec, trust_remote_code=True, device="cuda")  # auto: bfloat16
            same = greedy_tokens(cpu) == greedy_tokens(gpu)
            agree = sum(a == b for a, b in zip(greedy_tokens(cpu), greedy_tokens(bf16))) / 16
            rate, T = forwards_per_second(gpu, 8)
            ok &= same
            print(f"{family:6s} greedy tokens CPU == GPU (float32): {'yes' if same else 'NO'};"
                  f" bfloat16 agrees on {agree:.0%} of slots (random weights: informative only);"
                  f" {rate:.0f} forwards/s of {BATCH} x {T} tokens")
    if args.model:
        model = load_model(args.model, trust_remote_code=args.trust_remote_code or None,
                           device="cuda")
        rate, T = forwards_per_second(model, args.gen_length)
        peak = torch.cuda.max_memory_allocated() / 1e9
        print(f"{model.name}: {rate:.2f} forwards/s of {BATCH} x {T} tokens "
              f"({model.describe()['dtype']}), peak GPU memory {peak:.1f} GB")
    print("OK" if ok else "MISMATCH between CPU and GPU greedy decoding")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
