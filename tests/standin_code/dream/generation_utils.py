"""Stand-in for Dream's generation_utils.py (written for MEDAL's tests, see README.md).

What matters towards ``transformers``: ``DreamGenerationConfig`` subclasses
``GenerationConfig`` with its own ``__init__`` (no ``super().__init__``) and overrides
``validate(self, is_init=False)`` with the old signature, exactly as Dream's does."""
from typing import Optional

from transformers import __version__
from transformers.generation.configuration_utils import GenerationConfig


class DreamGenerationConfig(GenerationConfig):
    def __init__(self, **kwargs):
        self.temperature: float = kwargs.pop("temperature", 0.0)
        self.top_p: Optional[float] = kwargs.pop("top_p", None)
        self.top_k: Optional[int] = kwargs.pop("top_k", None)
        self.max_length = kwargs.pop("max_length", 20)
        self.max_new_tokens = kwargs.pop("max_new_tokens", None)
        self.eps: float = kwargs.pop("eps", 1e-3)
        self.steps: int = kwargs.pop("steps", 512)
        self.alg: str = kwargs.pop("alg", "origin")
        self.alg_temp: Optional[float] = kwargs.pop("alg_temp", None)
        self.num_return_sequences: int = kwargs.pop("num_return_sequences", 1)
        self.return_dict_in_generate: bool = kwargs.pop("return_dict_in_generate", False)
        self.output_history: bool = kwargs.pop("output_history", False)
        self.mask_token_id = kwargs.pop("mask_token_id", None)
        self.pad_token_id = kwargs.pop("pad_token_id", None)
        self.bos_token_id = kwargs.pop("bos_token_id", None)
        self.eos_token_id = kwargs.pop("eos_token_id", None)
        self.generation_kwargs = kwargs.pop("generation_kwargs", {})
        self._from_model_config = kwargs.pop("_from_model_config", False)
        self._commit_hash = kwargs.pop("_commit_hash", None)
        self.transformers_version = kwargs.pop("transformers_version", __version__)
        if not self._from_model_config:
            for key, value in kwargs.items():
                setattr(self, key, value)
        self.validate(is_init=True)

    def validate(self, is_init=False):
        pass


class DreamGenerationMixin:
    """Dream's sampler lives here in the genuine code; MEDAL does its own decoding and
    calls only the forward, so the stand-in keeps just the class in the MRO."""

    def diffusion_generate(self, *args, **kwargs):
        raise NotImplementedError("the stand-in has no sampler of its own")
