"""Model loading: ``load_model(spec)`` turns a model spec into a :class:`DiffusionLM`.

Specs:

* ``builtin:<task>`` -- the shipped tiny models (CPU, no network);
* ``llada:<hub id or dir>``, ``dream:<hub id or dir>`` -- the LLaDA and Dream families
  (LLaDA-MoE checkpoints load as ``llada:`` or ``hf:``), on MEDAL's own model code
  (:mod:`medal.models.native`), or with ``implementation="remote"`` on the checkpoint's
  own code through ``transformers`` (opt-in: ``trust_remote_code=True``,
  ``--trust-remote-code`` or ``MEDAL_TRUST_REMOTE_CODE=1``);
* ``hf:<hub id or dir>`` -- the family read from the checkpoint's config.json;
* ``mlm:<hub id or dir>`` -- any ``AutoModelForMaskedLM`` checkpoint;
* shortcuts ``llada-8b-instruct``, ``llada-1.5``, ``dream-7b-instruct``;

each of the ``transformers`` ones optionally pinned with ``@<revision>``. See
:mod:`medal.models.hf` and docs/REAL_MODELS.md.
"""
from __future__ import annotations

from ..errors import InputError, ModelLoadError
from .base import DiffusionLM
from .builtin import BuiltinModel, builtin_names
# .hf imports transformers only when it loads a checkpoint: the CLI stays quick
from .hf import (DEVICES, DTYPE_CHOICES, IMPLEMENTATION_ENV, IMPLEMENTATIONS, SHORTCUTS,
                 is_hf_spec, load_hf_model)

__all__ = ["DiffusionLM", "BuiltinModel", "load_model", "builtin_names",
           "add_model_arguments", "model_options"]

DEFAULT_MODEL = "builtin:countdown"
LOAD_OPTIONS = ("trust_remote_code", "device", "dtype", "revision", "chat_template",
                "implementation", "mask_id", "memory_check", "kv_cache")


def add_model_arguments(parser) -> None:
    """The command-line flags that choose and load a model."""
    g = parser.add_argument_group("model")
    g.add_argument("--model", default=None,
                   help="model spec (default: the task's built-in model, builtin:<task>): builtin:<task>, llada:<hub id or dir>, dream:<hub id or "
                        "dir>, mlm:<hub id or dir>, hf:<hub id or dir> (family from its "
                        "config.json) (optionally @<revision>), or a shortcut: "
                        "llada-8b-instruct, llada-1.5, dream-7b-instruct")
    g.add_argument("--trust-remote-code", action="store_true",
                   help="allow LLaDA/LLaDA-MoE/Dream checkpoints to run the Python code they ship "
                        "(also: MEDAL_TRUST_REMOTE_CODE=1); read it first, pin --revision")
    g.add_argument("--device", choices=DEVICES, default="auto",
                   help="where the model runs (auto: CUDA if present, else CPU)")
    g.add_argument("--dtype", choices=DTYPE_CHOICES, default="auto",
                   help="weights precision (auto: bfloat16 on a GPU, float32 on the CPU)")
    g.add_argument("--revision", default=None,
                   help="hub commit, branch or tag to load (same as spec@<revision>)")
    g.add_argument("--implementation", choices=IMPLEMENTATIONS, default=None,
                   help="LLaDA/LLaDA-MoE/Dream: native (default: MEDAL's own model code, no remote "
                        "code) or remote (the checkpoint's own code; needs "
                        f"--trust-remote-code); default also from {IMPLEMENTATION_ENV}")
    g.add_argument("--mask-id", type=int, default=None,
                   help="the mask token's id, when the checkpoint declares none or "
                        "declares conflicting ones; range 0..vocabulary size - 1")
    g.add_argument("--skip-memory-check", action="store_true",
                   help="load even if the memory estimate says the device is too small")
    g.add_argument("--kv-cache", choices=("off", "prefix", "dual"), default="off",
                   help="native LLaDA/Dream: Fast-dLLM's block KV cache (APPROXIMATE: cached "
                        "keys/values of the prompt and earlier blocks, refreshed once a "
                        "block; dual also caches the later blocks). Off: exact "
                        "(docs/SPEED.md)")


def model_options(args) -> dict:
    """Keyword options for :func:`load_model` from parsed command-line flags."""
    return {"trust_remote_code": bool(getattr(args, "trust_remote_code", False)),
            "device": getattr(args, "device", "auto"),
            "dtype": getattr(args, "dtype", "auto"),
            "revision": getattr(args, "revision", None),
            "implementation": getattr(args, "implementation", None),
            "mask_id": getattr(args, "mask_id", None),
            "memory_check": not getattr(args, "skip_memory_check", False),
            "kv_cache": getattr(args, "kv_cache", "off")}


def load_model(spec: str, **options) -> DiffusionLM:
    """Load a model from its spec; raises :class:`ModelLoadError` with the fix on failure.

    Options (for ``transformers`` models; the built-in models run on the CPU and ignore
    them): ``trust_remote_code`` (bool), ``device`` (auto/cpu/cuda), ``dtype``
    (auto/float32/bfloat16/float16), ``revision``, ``chat_template`` (None: use the
    tokenizer's if it has one), ``implementation`` (native/remote; None: native, or
    ``MEDAL_IMPLEMENTATION``), ``mask_id`` (override), ``memory_check`` (False: skip the
    memory estimate)."""
    unknown = set(options) - set(LOAD_OPTIONS)
    if unknown:
        raise InputError(f"unknown model options: {', '.join(sorted(unknown))} "
                         f"(known: {', '.join(LOAD_OPTIONS)})")
    spec = (spec or "").strip()
    kv_cache = options.pop("kv_cache", None)
    kv_cache = None if kv_cache in (None, "off") else kv_cache
    if kv_cache is not None and not is_hf_spec(spec):
        raise InputError(f"--kv-cache {kv_cache}: the KV cache is for the native LLaDA and "
                         f"Dream code, not {spec or 'this model'}; leave it off")
    if spec.startswith("builtin:"):
        return BuiltinModel.load(spec.split(":", 1)[1])
    if is_hf_spec(spec):
        model = load_hf_model(spec, **options)
        if kv_cache is not None:
            setter = getattr(model, "set_kv_cache", None)
            if setter is None:
                raise InputError(f"--kv-cache {kv_cache}: {model.name} has no KV cache; the "
                                 "cache is for the native LLaDA and Dream code")
            setter(kv_cache)
        return model
    shipped = ", ".join("builtin:" + n for n in builtin_names()) or "none shipped yet"
    raise ModelLoadError(f"unknown model spec {spec!r}; use builtin:<task> ({shipped}), "
                         "llada:<hub id or dir>, dream:<hub id or dir>, mlm:<hub id or dir>, "
                         "hf:<hub id or dir> "
                         f"or a shortcut: {', '.join(SHORTCUTS)}")
