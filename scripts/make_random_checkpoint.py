#!/usr/bin/env python
"""Build a loadable checkpoint folder with seeded random weights, no download needed.

Given a model's ``config.json`` (e.g. ``tests/data/real-models/llada/config.json`` or
its ``config.full-size.json``), its tokenizer files and a folder of model code (the
checkpoint's own ``configuration_*.py`` / ``modeling_*.py``, or the test stand-ins in
``tests/standin_code/``), this writes a folder that loads exactly like a downloaded
checkpoint::

    OUT/config.json              the config, as given
    OUT/*.py                     the code files, copied (``auto_map`` in the config names them)
    OUT/tokenizer files          copied, or (--fast-tokenizer) a fast tokenizer built from
                                 vocab.json + merges.txt with the same ids
    OUT/generation_config.json   copied if the tokenizer folder has one
    OUT/model.safetensors        seeded random weights (sharded + index above 4 GB)

The parameter names and shapes come from the model class itself, built on the ``meta``
device (no memory for the weights), so a full-size 8B config needs only one tensor's
worth of memory at a time. Every tensor is drawn from its own generator, seeded from
``--seed`` and the tensor's name: the same seed gives the same weights whatever the
order, dtype rounding aside. Matrices are N(0, --std) (default: the config's
``initializer_range`` / ``init_std``, else 0.02), 1-D weights (norms) are 1, biases 0;
except, so that a test exercises them, LLaDA-MoE's and LLaDA2's per-head q/k norms
(1 + N(0, 0.1)) and their routers' ``expert_bias`` (N(0, 0.05): not zero in a trained
checkpoint).

Building the model class runs the code in ``--code``: only use code you have read.

Examples::

    python scripts/make_random_checkpoint.py --config tests/data/real-models/llada/config.json \\
        --code tests/standin_code/llada --out /tmp/llada-tiny
    python scripts/make_random_checkpoint.py \\
        --config tests/data/real-models/dream/config.full-size.json \\
        --tokenizer tests/data/real-models/dream --code DIR_WITH_DREAM_CODE \\
        --out /tmp/dream-7b-random --dtype bf16
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import zlib
from pathlib import Path

import torch

DTYPES = {"fp32": torch.float32, "float32": torch.float32, "bf16": torch.bfloat16,
          "bfloat16": torch.bfloat16, "fp16": torch.float16, "float16": torch.float16}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "vocab.json", "merges.txt", "tokenizer.model", "added_tokens.json",
                   "generation_config.json")
SHARD_BYTES = 4 * 1024 ** 3
#: Qwen2's pre-tokenizer split (Dream's tokenizer is Qwen2's)
def fast_tokenizer_from_bpe(source: Path, out: Path) -> None:
    """A byte-level BPE fast tokenizer (``tokenizer.json``) from a slow Qwen2-style
    tokenizer's ``vocab.json`` + ``merges.txt`` + ``tokenizer_config.json``: the same
    vocabulary, merges, special tokens at the same ids and the same chat template, and no
    ``auto_map`` (so no tokenizer code is needed to load it)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from medal.models.tokenizers import bpe_fast_tokenizer

    bpe_fast_tokenizer(source).save_pretrained(out)


def copy_tokenizer(source: Path, out: Path, fast: bool) -> None:
    if fast:
        fast_tokenizer_from_bpe(source, out)
        extra = ("generation_config.json",)
    else:
        extra = TOKENIZER_FILES
    for name in extra:
        if (source / name).is_file():
            shutil.copyfile(source / name, out / name)


def init_value(name: str, shape: tuple[int, ...], std: float, seed: int,
               dtype: torch.dtype) -> torch.Tensor:
    """One tensor's seeded random value: matrices N(0, std), 1-D weights 1, biases 0
    (LLaDA-MoE's q/k norms and expert bias: random, see the module docstring)."""
    gen = torch.Generator().manual_seed(seed * 1_000_003 + zlib.crc32(name.encode()))
    if len(shape) >= 2:
        return torch.randn(shape, generator=gen, dtype=torch.float32).mul_(std).to(dtype)
    if name.endswith("expert_bias"):
        return torch.randn(shape, generator=gen, dtype=torch.float32).mul_(0.05).to(dtype)
    if name.endswith(("q_norm.weight", "k_norm.weight", "query_layernorm.weight",
                      "key_layernorm.weight")):
        return (1 + 0.1 * torch.randn(shape, generator=gen, dtype=torch.float32)).to(dtype)
    if name.endswith("bias"):
        return torch.zeros(shape, dtype=dtype)
    return torch.ones(shape, dtype=dtype)


def parameter_shapes(out: Path) -> dict[str, tuple[int, ...]]:
    """Names and shapes of the checkpoint's tensors: the model class from the folder's
    own code (``auto_map``), built without memory for its weights."""
    import transformers
    from accelerate import init_empty_weights

    config = transformers.AutoConfig.from_pretrained(out, trust_remote_code=True)
    auto_map = getattr(config, "auto_map", None) or {}
    auto = "AutoModel" if "AutoModel" in auto_map or not auto_map else next(iter(auto_map))
    with init_empty_weights():
        model = getattr(transformers, auto).from_config(config, trust_remote_code=True)
    ignore = set(getattr(model, "_keys_to_ignore_on_save", None) or ())
    return {k: tuple(v.shape) for k, v in model.state_dict().items() if k not in ignore}


def native_shapes(out: Path, family: str) -> dict[str, tuple[int, ...]]:
    """Names and shapes from MEDAL's native network for ``family`` (no checkpoint code
    runs, no transformers needed): the names the checkpoints use, the same shapes."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from medal.models.native import NativeConfig, NativeLM, checkpoint_name

    cfg = NativeConfig.from_dict(family, json.loads((out / "config.json").read_text()))
    with torch.device("meta"):
        net = NativeLM(cfg)
    return {checkpoint_name(family, k): tuple(v.shape) for k, v in net.state_dict().items()}


def write_weights(out: Path, shapes: dict[str, tuple[int, ...]], std: float, seed: int,
                  dtype: torch.dtype) -> int:
    from safetensors.torch import save_file

    width = torch.finfo(dtype).bits // 8
    shards: list[list[str]] = [[]]
    size = 0
    for name, shape in shapes.items():
        nbytes = width * int(torch.Size(shape).numel())
        if shards[-1] and size + nbytes > SHARD_BYTES:
            shards.append([])
            size = 0
        shards[-1].append(name)
        size += nbytes
    total = 0
    weight_map = {}
    for i, names in enumerate(shards):
        fname = ("model.safetensors" if len(shards) == 1 else
                 f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors")
        tensors = {n: init_value(n, shapes[n], std, seed, dtype) for n in names}
        total += sum(t.numel() * t.element_size() for t in tensors.values())
        save_file(tensors, str(out / fname), metadata={"format": "pt"})
        weight_map.update({n: fname for n in names})
        del tensors
    if len(shards) > 1:
        (out / "model.safetensors.index.json").write_text(json.dumps(
            {"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2))
    return total


def build(config: Path, code: Path | None, out: Path, *, tokenizer: Path | None = None,
          fast_tokenizer: bool = False, dtype: str = "fp32", seed: int = 0,
          std: float | None = None, overrides: dict | None = None,
          native: str | None = None) -> Path:
    """The whole folder (see the module docstring); returns ``out``. With ``native``
    (a family: llada/llada-moe/dream/llada2) the names and shapes come from MEDAL's native
    network (and ``code``, if given, is copied but not run: LLaDA2's ``auto_map`` names
    its bare ``LLaDA2MoeModel``, whose names lack the output layer's)."""
    config, out = Path(config), Path(out)
    tokenizer = Path(tokenizer) if tokenizer else config.parent
    if dtype not in DTYPES:
        raise SystemExit(f"--dtype must be one of {', '.join(DTYPES)}; got {dtype!r}")
    code_files = sorted(Path(code).glob("*.py")) if code else []
    if not code_files and not native:
        raise SystemExit(f"no *.py model code in {code}")
    out.mkdir(parents=True, exist_ok=True)
    cfg = json.loads(config.read_text())
    cfg.update(overrides or {})
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    for f in code_files:
        shutil.copyfile(f, out / f.name)
    copy_tokenizer(tokenizer, out, fast_tokenizer)
    if std is None:
        std = float(cfg.get("initializer_range") or cfg.get("init_std") or 0.02)
    shapes = native_shapes(out, native) if native else parameter_shapes(out)
    write_weights(out, shapes, std, seed, DTYPES[dtype])
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True, type=Path, help="config.json to use")
    p.add_argument("--code", type=Path, default=None,
                   help="folder with the model's *.py files (named in the config's auto_map)")
    p.add_argument("--native", choices=("llada", "llada-moe", "dream", "llada2"), default=None,
                   help="take the tensor names and shapes from MEDAL's native model code for "
                        "this family instead of running --code (no code in the folder)")
    p.add_argument("--out", required=True, type=Path, help="checkpoint folder to write")
    p.add_argument("--tokenizer", type=Path, default=None,
                   help="folder with the tokenizer files (default: the config's folder)")
    p.add_argument("--fast-tokenizer", action="store_true",
                   help="build tokenizer.json from vocab.json + merges.txt (for checkpoints "
                        "whose slow tokenizer is code, e.g. Dream's DreamTokenizer)")
    p.add_argument("--dtype", default="fp32", choices=sorted(DTYPES),
                   help="weights precision on disk (default fp32)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--std", type=float, default=None,
                   help="std of the random matrices (default: the config's initializer range)")
    args = p.parse_args(argv)
    if not args.code and not args.native:
        p.error("give --code DIR (the model's own code) or --native FAMILY")
    out = build(args.config, args.code, args.out, tokenizer=args.tokenizer,
                fast_tokenizer=args.fast_tokenizer, dtype=args.dtype, seed=args.seed,
                std=args.std, native=args.native)
    size = sum(f.stat().st_size for f in out.glob("*.safetensors"))
    print(f"wrote {out} ({size / 1e9:.2f} GB of weights in {args.dtype})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
