"""Stand-in for Dream's modeling_dream.py (written for MEDAL's tests, see README.md).

A small Qwen2-shaped network (RMSNorm, rotary grouped-query attention with q/k/v biases
and no causal mask, SwiGLU MLP); the output at position i predicts slot i+1, as Dream's.
Towards ``transformers`` it behaves as the genuine ``DreamModel``: ``post_init()`` is
called; the rotary embedding looks up ``ROPE_INIT_FUNCTIONS[self.rope_type]`` with
``rope_type == "default"`` and keeps ``inv_freq`` in a non-persistent buffer filled only
in ``__init__``; ``from_pretrained`` is overridden to load a ``DreamGenerationConfig``
whose ``validate`` has the old signature; ``attention_mask`` may be the string
``"full"`` (no padding)."""
from __future__ import annotations

import os
from typing import Optional, Union

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PretrainedConfig
from transformers.modeling_outputs import BaseModelOutput, MaskedLMOutput
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
from transformers.modeling_utils import PreTrainedModel

from .configuration_dream import DreamConfig
from .generation_utils import DreamGenerationConfig, DreamGenerationMixin


class DreamRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        dtype = hidden_states.dtype
        h = hidden_states.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(dtype)


class DreamRotaryEmbedding(nn.Module):
    def __init__(self, config: DreamConfig, device=None):
        super().__init__()
        if config.rope_scaling is not None:
            self.rope_type = config.rope_scaling.get("rope_type", config.rope_scaling.get("type"))
        else:
            self.rope_type = "default"
        self.config = config
        self.rope_init_fn = ROPE_INIT_FUNCTIONS[self.rope_type]
        inv_freq, self.attention_scaling = self.rope_init_fn(self.config, device)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.original_inv_freq = self.inv_freq

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        freqs = (inv @ position_ids[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * self.attention_scaling
        sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class DreamAttention(nn.Module):
    """q/k/v (with biases) and o projections, named as the genuine ``self_attn``."""

    def __init__(self, config: DreamConfig):
        super().__init__()
        h = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.num_kv = config.num_key_value_heads
        self.head_dim = h // self.num_heads
        self.q_proj = nn.Linear(h, self.num_heads * self.head_dim, bias=True)
        self.k_proj = nn.Linear(h, self.num_kv * self.head_dim, bias=True)
        self.v_proj = nn.Linear(h, self.num_kv * self.head_dim, bias=True)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, h, bias=False)

    def forward(self, h, attention_mask, position_embeddings):
        B, T, _ = h.shape
        cos, sin = (t.unsqueeze(1) for t in position_embeddings)
        q = self.q_proj(h).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(h).view(B, T, self.num_kv, self.head_dim).transpose(1, 2)
        v = self.v_proj(h).view(B, T, self.num_kv, self.head_dim).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(self.num_heads // self.num_kv, dim=1)
        v = v.repeat_interleave(self.num_heads // self.num_kv, dim=1)
        att = F.scaled_dot_product_attention(
            q, k, v, attn_mask=attention_mask if isinstance(attention_mask, torch.Tensor) else None,
            is_causal=False)
        return self.o_proj(att.transpose(1, 2).reshape(B, T, -1))


class DreamMLP(nn.Module):
    def __init__(self, config: DreamConfig):
        super().__init__()
        h = config.hidden_size
        self.gate_proj = nn.Linear(h, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(h, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, h, bias=False)

    def forward(self, h):
        return self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class DreamDecoderLayer(nn.Module):
    """Parameter names as the genuine layer's (``self_attn.*``, ``mlp.*``), so the same
    checkpoint loads in the genuine code, the stand-in and MEDAL's native code."""

    def __init__(self, config: DreamConfig, layer_idx: int):
        super().__init__()
        h = config.hidden_size
        self.self_attn = DreamAttention(config)
        self.mlp = DreamMLP(config)
        self.input_layernorm = DreamRMSNorm(h, eps=config.rms_norm_eps)
        self.post_attention_layernorm = DreamRMSNorm(h, eps=config.rms_norm_eps)

    def forward(self, x, attention_mask, position_embeddings):
        x = x + self.self_attn(self.input_layernorm(x), attention_mask, position_embeddings)
        return x + self.mlp(self.post_attention_layernorm(x))


class DreamPreTrainedModel(PreTrainedModel):
    config_class = DreamConfig
    base_model_prefix = "model"
    supports_gradient_checkpointing = True
    _no_split_modules = ["DreamDecoderLayer"]
    _skip_keys_device_placement = "past_key_values"
    _supports_sdpa = True

    def _init_weights(self, module):
        std = self.config.initializer_range
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=std)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=std)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: Optional[Union[str, os.PathLike]],
                        *model_args, config: Optional[Union[PretrainedConfig, str, os.PathLike]] = None,
                        cache_dir=None, ignore_mismatched_sizes: bool = False,
                        force_download: bool = False, local_files_only: bool = False,
                        token=None, revision: str = "main", use_safetensors=None,
                        weights_only: bool = True, **kwargs):
        _model = super().from_pretrained(
            pretrained_model_name_or_path, *model_args, config=config, cache_dir=cache_dir,
            ignore_mismatched_sizes=ignore_mismatched_sizes, force_download=force_download,
            local_files_only=local_files_only, token=token, revision=revision,
            use_safetensors=use_safetensors, weights_only=weights_only, **kwargs)
        # as Dream's: the generation config loaded above lacks Dream's own fields
        _model.generation_config = DreamGenerationConfig.from_pretrained(
            pretrained_model_name_or_path, cache_dir=cache_dir, force_download=force_download,
            local_files_only=local_files_only, token=token, revision=revision,
            subfolder=kwargs.get("subfolder", ""), _from_auto=kwargs.get("_from_auto", False),
            _from_pipeline=kwargs.get("_from_pipeline", None))
        return _model


class DreamBaseModel(DreamPreTrainedModel):
    def __init__(self, config: DreamConfig):
        super().__init__(config)
        self.padding_idx = config.pad_token_id
        self.vocab_size = config.vocab_size
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, self.padding_idx)
        self.layers = nn.ModuleList([DreamDecoderLayer(config, i)
                                     for i in range(config.num_hidden_layers)])
        self.norm = DreamRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.rotary_emb = DreamRotaryEmbedding(config=config)
        self.gradient_checkpointing = False
        self.post_init()

    def get_input_embeddings(self):
        return self.embed_tokens

    def set_input_embeddings(self, value):
        self.embed_tokens = value

    def forward(self, input_ids=None, attention_mask=None, position_ids=None,
                inputs_embeds=None, return_dict=None, **kwargs):
        if inputs_embeds is None:
            inputs_embeds = self.embed_tokens(input_ids)
        if position_ids is None:
            position_ids = torch.arange(inputs_embeds.shape[1],
                                        device=inputs_embeds.device).unsqueeze(0)
        h = inputs_embeds
        position_embeddings = self.rotary_emb(h, position_ids)
        for layer in self.layers:
            h = layer(h, attention_mask, position_embeddings)
        return BaseModelOutput(last_hidden_state=self.norm(h))


class DreamModel(DreamGenerationMixin, DreamPreTrainedModel):
    _tied_weights_keys = ["lm_head.weight"]

    def __init__(self, config):
        super().__init__(config)
        self.model = DreamBaseModel(config)
        self.vocab_size = config.vocab_size
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def get_input_embeddings(self):
        return self.model.embed_tokens

    def set_input_embeddings(self, value):
        self.model.embed_tokens = value

    def get_output_embeddings(self):
        return self.lm_head

    def set_output_embeddings(self, new_embeddings):
        self.lm_head = new_embeddings

    def forward(self, input_ids=None, attention_mask=None, position_ids=None,
                past_key_values=None, inputs_embeds=None, labels=None, use_cache=None,
                output_attentions=None, output_hidden_states=None, return_dict=None,
                cache_position=None, num_logits_to_keep: int = 0, **loss_kwargs):
        return_dict = return_dict if return_dict is not None else self.config.use_return_dict
        hidden = self.model(input_ids=input_ids, attention_mask=attention_mask,
                            position_ids=position_ids, inputs_embeds=inputs_embeds)[0]
        logits = self.lm_head(hidden[:, -num_logits_to_keep:, :])
        if not return_dict:
            return (logits,)
        return MaskedLMOutput(logits=logits)
