"""The model a trace records, loaded only if this machine has it (issue 31): a received
trace is data, never an instruction to download or run anything. :func:`load_recorded_model`
serves every re-run of a trace (``medal repro``, a fork, the shipped examples' check)."""
from __future__ import annotations


def load_recorded_model(trace: dict, what: str = "medal repro", **options):
    """The model a trace names, only if this machine has it (issue 31: a received trace
    is data, never an instruction): a built-in model, a checkpoint folder that exists
    here, or a hub id whose files are already in the local Hugging Face cache (then
    loaded with the hub switched off), with the KV cache the trace records (its mode, a
    decoding setting: prefix or dual). A hub id that is not here is never downloaded:
    :class:`ModelLoadError` says so and how to give the model (``--model SPEC``)."""
    from ..errors import ModelLoadError
    from . import load_model
    recorded = (trace.get("run") or {}).get("model") or {}
    name = recorded.get("name")
    name = name.strip() if isinstance(name, str) else ""
    if options.get("kv_cache") in (None, "off") and recorded.get("kv_cache") in ("prefix",
                                                                                "dual"):
        # the run decoded through Fast-dLLM's (approximate) block cache: its answers are
        # what the cache computed, so the re-run (or a fork) takes the same cache (the
        # CLI's --kv-cache is "off" unless given; to re-run without it, give the model)
        options = {**options, "kv_cache": recorded["kv_cache"]}
    if name.startswith("builtin:"):
        return load_model(name, **options)
    fix = ("; give the model yourself with --model SPEC (or model= in Python), e.g. a "
           "checkpoint folder you trust")
    try:
        from .hf import is_hf_spec, parse_spec
        source = parse_spec(name) if is_hf_spec(name) else None
    except ModelLoadError:
        source = None
    if source is None:
        raise ModelLoadError(f"{what}: the trace names the model {name[:80]!r}, which is "
                             f"not a model spec this machine can load{fix}")
    if source.local:
        from pathlib import Path
        if not Path(source.target).is_dir():
            raise ModelLoadError(f"{what}: the trace names the checkpoint folder "
                                 f"{source.target[:120]!r}, which is not on this machine{fix}")
        return load_model(name, **options)
    if not _in_hub_cache(source.target, source.revision):
        raise ModelLoadError(
            f"{what}: the trace names the hub model {source.name[:120]!r}, which is not on "
            "this machine; a received trace never makes MEDAL download a model (it could be "
            f"anyone's){fix}, or download it yourself first if you trust it "
            f"(`hf download {source.target[:120]}`)")
    with _hub_offline():
        return load_model(name, **options)


def _in_hub_cache(repo: str, revision: str | None) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
        return isinstance(try_to_load_from_cache(repo, "config.json", revision=revision), str)
    except Exception:
        return False


class _hub_offline:
    """The Hugging Face hub switched off for one load (environment and the libraries'
    already-read constants), so a cached model is read from the cache only."""

    NAMES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")

    def __enter__(self):
        import os
        self.env = {k: os.environ.get(k) for k in self.NAMES}
        os.environ.update({k: "1" for k in self.NAMES})
        self.consts = []
        try:
            import huggingface_hub.constants as c
            self.consts.append((c, "HF_HUB_OFFLINE", getattr(c, "HF_HUB_OFFLINE", None)))
            c.HF_HUB_OFFLINE = True
        except Exception:
            pass
        return self

    def __exit__(self, *exc):
        import os
        for k, v in self.env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        for mod, attr, value in self.consts:
            setattr(mod, attr, value)
        return False
