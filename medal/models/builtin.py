"""The built-in tiny models behind the model interface: ``builtin:<task>``."""
from __future__ import annotations

from pathlib import Path

import torch

from ..errors import InputError, ModelLoadError
from .base import DiffusionLM, check_finite
from .tiny import CharTokenizer, TinyDLM, load_checkpoint

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def builtin_names() -> list[str]:
    return sorted(p.parent.name for p in ASSETS.glob("*/model.safetensors"))


class BuiltinModel(DiffusionLM):
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
    def logits(self, ids: torch.Tensor, answer_length: int) -> torch.Tensor:
        return check_finite(self.net(ids.to(self.device), last=answer_length),
                            self.name).float()

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
        return {**super().describe(), "parameters": self.net.n_params(),
                "training": self.meta.get("training", {})}
