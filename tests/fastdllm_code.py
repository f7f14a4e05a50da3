"""Fast-dLLM's own cached LLaDA and Dream model code (and samplers), as dllm publishes them,
loaded from a git-ignored folder for the tests that compare MEDAL's KV cache with it.

The code is third-party and never committed. ``MEDAL_REAL_MODEL_CODE`` (the folder of the
genuine checkpoint code, docs/REAL_MODELS.md) holds it under ``fastdllm/``: the files of
github.com/ZHZisZZ/dllm at their paths in that repository (listed in :data:`FILES`;
docs/SPEED.md, "Fast-dLLM's own cache as the reference", says how to copy them). Without
them :func:`fastdllm_code` says why, and the tests skip with that reason.

The files import each other as ``dllm.pipelines...``; :func:`load` gives them that
package tree without running dllm's ``__init__`` files (which import every pipeline and
their dependencies): each package is an empty module whose ``__path__`` is the folder.
"""
from __future__ import annotations

import importlib
import json
import sys
import types
from pathlib import Path

import torch

from standins import REAL_CODE_ENV, genuine_code  # noqa: F401 (REAL_CODE_ENV: the docs' name)

#: the files the tests read, at their paths in ZHZisZZ/dllm (checked at commit ca176752)
FILES = (
    "dllm/pipelines/fastdllm/llada/models/configuration_llada.py",
    "dllm/pipelines/fastdllm/llada/models/modeling_llada.py",
    "dllm/pipelines/fastdllm/llada/sampler.py",
    "dllm/pipelines/fastdllm/dream/models/configuration_dream.py",
    "dllm/pipelines/fastdllm/dream/models/modeling_dream.py",
    "dllm/pipelines/fastdllm/dream/sampler.py",
    "dllm/pipelines/llada/models/configuration_llada.py",
    "dllm/pipelines/dream/models/configuration_dream.py",
    "dllm/pipelines/dream/models/generation_utils.py",
    "dllm/core/samplers/base.py",
    "dllm/core/samplers/utils.py",
    "dllm/core/schedulers/__init__.py",
    "dllm/core/schedulers/alpha.py",
    "dllm/core/schedulers/kappa.py",
)
#: the packages given as empty modules (their __init__ files are not run)
PACKAGES = ("dllm", "dllm.core", "dllm.core.samplers", "dllm.pipelines",
            "dllm.pipelines.llada", "dllm.pipelines.llada.models", "dllm.pipelines.dream",
            "dllm.pipelines.dream.models", "dllm.pipelines.fastdllm",
            "dllm.pipelines.fastdllm.llada", "dllm.pipelines.fastdllm.llada.models",
            "dllm.pipelines.fastdllm.dream", "dllm.pipelines.fastdllm.dream.models")


def fastdllm_code() -> tuple[Path | None, str]:
    """(the folder holding ``dllm/``, "") when every file of :data:`FILES` is there; else
    (None, why the Fast-dLLM comparisons skip)."""
    import os
    value = os.environ.get(REAL_CODE_ENV, "").strip()
    if not value:
        return None, (f"{REAL_CODE_ENV} is not set: set it to the folder of the genuine code "
                      "with Fast-dLLM's cached model code in fastdllm/ (docs/SPEED.md, "
                      "'Fast-dLLM's own cache as the reference') to compare the KV cache "
                      "with it")
    folder = Path(value).expanduser() / "fastdllm"
    missing = [f for f in FILES if not (folder / f).is_file()]
    if missing:
        return None, (f"{folder} lacks {', '.join(missing[:3])}"
                      f"{' ...' if len(missing) > 3 else ''} (Fast-dLLM's code from "
                      "ZHZisZZ/dllm: docs/SPEED.md)")
    return folder, ""


def load(folder: Path) -> types.SimpleNamespace:
    """The Fast-dLLM modules from ``folder``: ``llada`` (modeling), ``dream`` (modeling),
    ``llada_sampler``, ``dream_sampler``."""
    for name in PACKAGES:
        if name not in sys.modules:
            module = types.ModuleType(name)
            module.__path__ = [str(folder.joinpath(*name.split(".")))]
            sys.modules[name] = module
    base = "dllm.pipelines.fastdllm"
    return types.SimpleNamespace(
        llada=importlib.import_module(f"{base}.llada.models.modeling_llada"),
        dream=importlib.import_module(f"{base}.dream.models.modeling_dream"),
        llada_sampler=importlib.import_module(f"{base}.llada.sampler"),
        dream_sampler=importlib.import_module(f"{base}.dream.sampler"))


def build(code: types.SimpleNamespace, family: str, directory: Path) -> torch.nn.Module:
    """Fast-dLLM's cached model of ``family`` with the weights of the checkpoint folder
    ``directory`` (its config.json and model.safetensors; the hub's tensor names, which
    Fast-dLLM's classes keep), float32, on the CPU, in eval mode."""
    from safetensors.torch import load_file
    config = json.loads((Path(directory) / "config.json").read_text())
    for key in ("auto_map", "architectures", "model_type", "transformers_version"):
        config.pop(key, None)
    if family == "llada":
        cfg = code.llada.FastdLLMLLaDAConfig(**config)
        net = code.llada.FastdLLMLLaDAModelLM(cfg, init_params=False)
    else:
        cfg = code.dream.FastdLLMDreamConfig(**config)
        cfg._attn_implementation = "sdpa"
        net = code.dream.FastdLLMDreamModel(cfg)
    state = load_file(str(Path(directory) / "model.safetensors"))
    missing, unexpected = net.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith("inv_freq")]
    if missing or unexpected:
        raise RuntimeError(f"Fast-dLLM {family}: missing {missing[:4]}, unexpected "
                           f"{unexpected[:4]}")
    return net.float().eval()
