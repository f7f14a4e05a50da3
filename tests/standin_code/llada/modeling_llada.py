"""Stand-in for LLaDA's modeling_llada.py (written for MEDAL's tests, see README.md).

A small LLaDA-shaped network: llama blocks (RMSNorm, rotary attention without a causal
mask, SwiGLU MLP) over ``embedding_size`` logits; position i predicts slot i. Towards
``transformers`` it behaves as the genuine ``LLaDAModelLM``: it never calls
``post_init()``, overrides ``tie_weights()`` without parameters, reads
``self.config.use_cache`` in its forward, keeps its rotary sin/cos in a plain cache (no
buffers), and registers itself with ``AutoModel`` at import."""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn
from transformers import AutoModel, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutputWithPast

from .configuration_llada import LLaDAConfig


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        og = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(og)


class RotaryEmbedding(nn.Module):
    """sin/cos computed on first use (and at init) into a dict, as LLaDA's BufferCache."""

    def __init__(self, config: LLaDAConfig, cache: dict):
        super().__init__()
        self.config = config
        self._cache = cache
        self.get_rotary_embedding(config.max_sequence_length, torch.device("cpu"))

    def get_rotary_embedding(self, seq_len: int, device: torch.device):
        sin, cos = self._cache.get("sin"), self._cache.get("cos")
        if sin is not None and sin.shape[-2] >= seq_len:
            if sin.device != device:
                sin, cos = sin.to(device), cos.to(device)
                self._cache.update(sin=sin, cos=cos)
            return sin[:, :, :seq_len], cos[:, :, :seq_len]
        dim = self.config.d_model // self.config.n_heads
        inv_freq = 1.0 / (self.config.rope_theta ** (
            torch.arange(0, dim, 2, device=device, dtype=torch.float) / dim))
        seq = torch.arange(seq_len, device=device, dtype=torch.float)
        freqs = torch.outer(seq, inv_freq)
        pos = torch.cat((freqs, freqs), dim=-1)
        sin, cos = pos.sin()[None, None], pos.cos()[None, None]
        self._cache.update(sin=sin, cos=cos)
        return sin, cos

    @staticmethod
    def rotate_half(x: torch.Tensor) -> torch.Tensor:
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)

    def forward(self, q: torch.Tensor, k: torch.Tensor):
        q_, k_ = q.float(), k.float()
        sin, cos = self.get_rotary_embedding(k_.shape[-2], q_.device)
        q_ = q_ * cos + self.rotate_half(q_) * sin
        k_ = k_ * cos + self.rotate_half(k_) * sin
        return q_.type_as(q), k_.type_as(k)


class LLaDALlamaBlock(nn.Module):
    def __init__(self, config: LLaDAConfig, cache: dict):
        super().__init__()
        d, bias = config.d_model, config.include_bias
        self.n_heads = config.n_heads
        self.n_kv_heads = config.n_kv_heads or config.n_heads
        head = d // config.n_heads
        hidden = config.mlp_hidden_size or config.mlp_ratio * d
        self.attn_norm = RMSNorm(d, config.rms_norm_eps)
        self.ff_norm = RMSNorm(d, config.rms_norm_eps)
        self.q_proj = nn.Linear(d, d, bias=bias or config.include_qkv_bias)
        self.k_proj = nn.Linear(d, self.n_kv_heads * head, bias=bias or config.include_qkv_bias)
        self.v_proj = nn.Linear(d, self.n_kv_heads * head, bias=bias or config.include_qkv_bias)
        self.attn_out = nn.Linear(d, d, bias=bias)
        self.ff_proj = nn.Linear(d, hidden, bias=bias)
        self.up_proj = nn.Linear(d, hidden, bias=bias)
        self.ff_out = nn.Linear(hidden, d, bias=bias)
        self.rotary_emb = RotaryEmbedding(config, cache)

    def forward(self, x: torch.Tensor, attention_bias: Optional[torch.Tensor]) -> torch.Tensor:
        B, T, C = x.shape
        h = self.attn_norm(x)
        q = self.q_proj(h).view(B, T, self.n_heads, -1).transpose(1, 2)
        k = self.k_proj(h).view(B, T, self.n_kv_heads, -1).transpose(1, 2)
        v = self.v_proj(h).view(B, T, self.n_kv_heads, -1).transpose(1, 2)
        q, k = self.rotary_emb(q, k)
        if self.n_kv_heads != self.n_heads:
            k = k.repeat_interleave(self.n_heads // self.n_kv_heads, dim=1)
            v = v.repeat_interleave(self.n_heads // self.n_kv_heads, dim=1)
        att = F.scaled_dot_product_attention(q, k, v, attn_mask=attention_bias, is_causal=False)
        x = x + self.attn_out(att.transpose(1, 2).reshape(B, T, C))
        h = self.ff_norm(x)
        return x + self.ff_out(F.silu(self.ff_proj(h)) * self.up_proj(h))


class LLaDAModel(nn.Module):
    def __init__(self, config: LLaDAConfig):
        super().__init__()
        self.config = config
        cache: dict = {}
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.embedding_size or config.vocab_size, config.d_model),
            blocks=nn.ModuleList([LLaDALlamaBlock(config, cache)
                                  for _ in range(config.n_layers)]),
            ln_f=RMSNorm(config.d_model, config.rms_norm_eps)))
        if not config.weight_tying:
            self.transformer.update({"ff_out": nn.Linear(
                config.d_model, config.embedding_size or config.vocab_size, bias=False)})

    def forward(self, input_ids: torch.LongTensor, attention_mask=None, use_cache=False):
        if use_cache:
            raise NotImplementedError("the stand-in has no key/value cache")
        x = self.transformer.wte(input_ids)
        bias = None
        if attention_mask is not None and not bool(attention_mask.bool().all()):
            keep = attention_mask.bool()[:, None, None, :]
            bias = torch.zeros(keep.shape, dtype=x.dtype, device=x.device).masked_fill(
                ~keep, torch.finfo(x.dtype).min)
        for block in self.transformer.blocks:
            x = block(x, bias)
        x = self.transformer.ln_f(x)
        if self.config.weight_tying:
            return F.linear(x, self.transformer.wte.weight)
        return self.transformer.ff_out(x)


class LLaDAModelLM(PreTrainedModel):
    """As the genuine class: ``super().__init__(config)``, build the network, and no
    ``post_init()`` call."""

    config_class = LLaDAConfig
    base_model_prefix = "model"
    _no_split_modules = ["LLaDALlamaBlock"]

    def __init__(self, config: LLaDAConfig, model: Optional[LLaDAModel] = None,
                 init_params: bool = False):
        super().__init__(config)
        self.model = model or LLaDAModel(config)

    def forward(self, input_ids: torch.LongTensor = None, inputs_embeds=None,
                attention_mask: Optional[torch.Tensor] = None, attention_bias=None,
                past_key_values=None, labels=None, use_cache: Optional[bool] = None,
                output_attentions=None, output_hidden_states=None, return_dict=None,
                cache_position=None):
        if use_cache is None:
            use_cache = self.config.use_cache
        return_dict = return_dict if return_dict is not None else self.config.use_return_dict
        logits = self.model(input_ids, attention_mask=attention_mask, use_cache=use_cache)
        if not return_dict:
            return (logits,)
        return CausalLMOutputWithPast(logits=logits)

    def can_generate(self) -> bool:
        return True

    def get_input_embeddings(self) -> torch.nn.Module:
        return self.model.transformer.wte

    def set_input_embeddings(self, value: torch.nn.Module):
        self.model.transformer.wte = value

    def get_output_embeddings(self):
        if self.config.weight_tying:
            return self.model.transformer.wte
        return self.model.transformer.ff_out

    def set_output_embeddings(self, value: torch.nn.Module):
        if self.config.weight_tying:
            self.model.transformer.wte = value
        else:
            self.model.transformer.ff_out = value

    def tie_weights(self):
        if self.config.weight_tying:
            self.model.transformer.ff_out = self.model.transformer.wte


AutoModel.register(LLaDAConfig, LLaDAModelLM)
