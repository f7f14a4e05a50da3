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

from typing import TYPE_CHECKING, Any

from ..errors import InputError, ModelLoadError
# the load options' names, choices and flags are torch-free (``medal --help`` lists them);
# everything else -- torch, the networks, transformers -- is imported when first used
from .options import (DEFAULT_MODEL, DEVICES, DTYPE_CHOICES, IMPLEMENTATION_ENV,  # noqa: F401
                      IMPLEMENTATIONS, LOAD_OPTIONS, add_model_arguments, model_options)

if TYPE_CHECKING:  # pragma: no cover
    from .base import DiffusionLM

__all__ = ["DiffusionLM", "BuiltinModel", "load_model", "builtin_names",
           "add_model_arguments", "model_options"]

_LAZY = {"DiffusionLM": "base", "BuiltinModel": "builtin", "builtin_names": "builtin",
         "SHORTCUTS": "hf", "is_hf_spec": "hf", "load_hf_model": "hf"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'medal.models' has no attribute {name!r}")


def load_model(spec: str, **options) -> "DiffusionLM":
    """Load a model from its spec; raises :class:`ModelLoadError` with the fix on failure.

    Options (for ``transformers`` models; the built-in models take ``device`` and
    ``kv_cache`` only, and ``auto`` keeps them on the CPU): ``trust_remote_code`` (bool),
    ``device`` (auto/cpu/cuda), ``kv_cache`` (off/prefix/dual: Fast-dLLM's block cache,
    approximate; native LLaDA and Dream, and the built-in models), ``dtype``
    (auto/float32/bfloat16/float16), ``revision``, ``chat_template`` (None: use the
    tokenizer's if it has one), ``implementation`` (native/remote; None: native, or
    ``MEDAL_IMPLEMENTATION``), ``mask_id`` (override), ``memory_check`` (False: skip the
    memory estimate)."""
    from .builtin import BuiltinModel, builtin_names
    from .hf import SHORTCUTS, is_hf_spec, load_hf_model
    unknown = set(options) - set(LOAD_OPTIONS)
    if unknown:
        raise InputError(f"unknown model options: {', '.join(sorted(unknown))} "
                         f"(known: {', '.join(LOAD_OPTIONS)})")
    spec = (spec or "").strip()
    kv_cache = options.pop("kv_cache", None)
    kv_cache = None if kv_cache in (None, "off") else kv_cache
    if spec.startswith("builtin:"):
        model = BuiltinModel.load(spec.split(":", 1)[1], device=options.get("device"))
        model.set_kv_cache(kv_cache)
        return model
    if is_hf_spec(spec):
        model = load_hf_model(spec, **options)
        if kv_cache is not None:
            setter = getattr(model, "set_kv_cache", None)
            if setter is None:
                raise InputError(f"--kv-cache {kv_cache}: {model.name} has no KV cache; the "
                                 "cache is for the native LLaDA and Dream code and the "
                                 "built-in models")
            setter(kv_cache)
        return model
    shipped = ", ".join("builtin:" + n for n in builtin_names()) or "none shipped yet"
    raise ModelLoadError(f"unknown model spec {spec!r}; use builtin:<task> ({shipped}), "
                         "llada:<hub id or dir>, dream:<hub id or dir>, mlm:<hub id or dir>, "
                         "hf:<hub id or dir> "
                         f"or a shortcut: {', '.join(SHORTCUTS)}")
