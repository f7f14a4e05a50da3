"""The built-in tiny models behind the model interface: ``builtin:<task>``."""
from __future__ import annotations

import json
from pathlib import Path

import torch

from ..errors import InputError, ModelLoadError
from .base import BlockCacheMixin, DiffusionLM, check_finite
from .tiny import CharTokenizer, TinyDLM, load_checkpoint

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def builtin_names() -> list[str]:
    return sorted(p.parent.name for p in ASSETS.glob("*/model.safetensors"))


def trained_templates(meta: dict) -> int:
    """How many of its task's prompt templates (the first N) a checkpoint was trained on:
    its last stage's ``training.templates``; 1 (the task's own form) where it does not say,
    as for every model trained before templates existed."""
    value = meta.get("training", {}).get("templates", 1)
    return value if type(value) is int and value >= 1 else 1


def _shipped_meta(name: str) -> dict | None:
    """The config.json of the shipped model ``name`` (a folder of assets/), else None."""
    if name not in builtin_names():
        return None
    try:
        return json.loads((ASSETS / name / "config.json").read_text())
    except (OSError, ValueError):
        return None


def builtin_task(spec: str) -> str | None:
    """The task a shipped model (``builtin:countdown-2t``) was trained for, else None."""
    spec = spec.strip() if isinstance(spec, str) else ""
    meta = _shipped_meta(spec[len("builtin:"):]) if spec.startswith("builtin:") else None
    return meta.get("task") if meta else None


def models_for_template(task: str, template: int) -> list[str]:
    """The shipped models of ``task`` trained on prompt template ``template``."""
    out = []
    for name in builtin_names():
        meta = _shipped_meta(name)
        if meta and meta.get("task") == task and trained_templates(meta) > template:
            out.append(f"builtin:{name}")
    return out


class BuiltinModel(BlockCacheMixin, DiffusionLM):
    """A shipped tiny model (:mod:`medal.models.tiny`). Fast-dLLM's block KV cache
    (``--kv-cache prefix|dual``, approximate, off by default) serves it as it serves the
    native LLaDA and Dream code: a trained model whose answers the approximation can
    be measured on (docs/SPEED.md)."""
    builtin = True

    def __init__(self, net: TinyDLM, meta: dict, name: str):
        self.net = net
        self.meta = meta
        self.name = name
        self.tokenizer = CharTokenizer()
        self.mask_id = self.tokenizer.mask_id
        self.eos_id = self.tokenizer.eos_id
        self.pad_id = self.tokenizer.pad_id
        self.default_gen_length = net.cfg.answer_length
        self.max_gen_length = net.cfg.answer_length
        self.device = torch.device("cpu")
        self.trained_task = meta.get("task")
        self.prompt_templates = trained_templates(meta)

    @classmethod
    def load(cls, task: str, device: str | None = None) -> "BuiltinModel":
        """The shipped model of ``task``. ``device``: None or ``auto`` keep it on the CPU
        (a model this small runs faster there than a GPU launches its kernels), ``cuda``
        puts it on the GPU (for lock-step benches, docs/SPEED.md)."""
        # a plain name of a folder in assets/, never a path (builtin:/etc, builtin:../..)
        safe = bool(task) and task.replace("-", "").replace("_", "").isalnum() and task.isascii()
        directory = ASSETS / task if safe else None
        if directory is None or not directory.is_dir():
            known = ", ".join(f"builtin:{n}" for n in builtin_names()) or "none shipped"
            raise ModelLoadError(f"no built-in model for task {task!r} (available: {known})")
        net, meta = load_checkpoint(directory)
        model = cls(net, meta, f"builtin:{task}")
        if device not in (None, "auto", "cpu"):
            from .hf.spec import choose_device     # the one check (and message) for CUDA
            model.device = choose_device(device)
            model.net.to(model.device)
        return model

    @property
    def vocab_size(self) -> int:
        return len(self.tokenizer)

    def encode_prompt(self, prompt: str) -> list[int]:
        self.check_prompt(prompt)
        ids = self.tokenizer.encode(prompt)
        limit = self.net.cfg.prompt_length
        if len(ids) > limit:
            raise InputError(f"the prompt is {len(ids)} tokens; the built-in model reads at most "
                             f"{limit}. Shorten it (e.g. 'Use 4, 18, 13 to make 20.')")
        return [self.pad_id] * (limit - len(ids)) + ids

    @torch.inference_mode()
    def logits(self, ids: torch.Tensor, answer_length: int, cache=None) -> torch.Tensor:
        """``cache``: the run's KV cache (:meth:`start_kv_cache`); default: the one started
        last, none when the cache is off. :attr:`last_token_passes` is then the positions
        the network computed."""
        cache = self.kv_cache if cache is None else cache
        if cache is None:
            self.last_token_passes = None
            return check_finite(self.net(ids.to(self.device), last=answer_length),
                                self.name).float()
        out, passes = self.logits_together([(ids, cache)], answer_length)
        self.last_token_passes = passes[0]
        return out

    @torch.inference_mode()
    def logits_together(self, parts: list[tuple[torch.Tensor, object]],
                        answer_length: int) -> tuple[torch.Tensor, list[int]]:
        """Several runs' forwards of one sequence length, each ``(ids, its KV cache or
        None)``: :meth:`logits` of them all (rows in the order given) and the positions
        the network computed for each (lock-step with the cache; the cached spans of
        runs in the same block share a call, :func:`medal.models.native.cached_logits`)."""
        from .native import cached_logits
        out, passes = cached_logits(self.net, [(ids.to(self.device), c) for ids, c in parts],
                                    answer_length, self.mask_id)
        return check_finite(out, self.name).float(), passes

    def token_text(self, token_id: int) -> str:
        return self.tokenizer.token_text(token_id)

    def decode_masked(self, ids, mask: str = "_") -> str:
        """:meth:`DiffusionLM.decode_masked` (the same text), with the tokenizer's table
        read directly: a decode step shows its answer this way, every step."""
        ids = ids.tolist() if hasattr(ids, "tolist") else [int(i) for i in ids]
        ends = self.end_ids
        for i, t in enumerate(ids):
            if t in ends:
                ids = ids[:i]
                break
        vocab, mask_id = self.tokenizer.vocab, self.mask_id
        return "".join([mask if t == mask_id else vocab[t] for t in ids])

    def decode(self, ids) -> str:
        return self.tokenizer.decode(ids)

    @property
    def checkpoint_dir(self) -> Path:
        """The folder the weights were loaded from (for the reproducibility record)."""
        return ASSETS / self.name.split(":", 1)[1]

    def describe(self) -> dict:
        out = {**super().describe(), "parameters": self.net.n_params(),
               "training": self.meta.get("training", {})}
        if self.kv_cache_mode:   # Fast-dLLM's block cache: answers APPROXIMATE (SPEED.md)
            out["kv_cache"] = self.kv_cache_mode
        return out
