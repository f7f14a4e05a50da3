"""Our own model code for the LLaDA, LLaDA-MoE and Dream families, in one readable file.

All three are a Llama-style transformer that reads the whole sequence at once (no causal
mask): token embedding, then per layer ``x + attention(RMSNorm(x))`` and
``x + MLP(RMSNorm(x))``, a final RMSNorm and the output layer. They differ in details
that their checkpoints' own code (``modeling_llada.py``, ``modeling_dream.py``) fixes,
all taken from the config here:

==============================  =============================  ==========================
                                LLaDA (8B-Instruct, 1.5, Base)  Dream (v0-7B, Coder, DiffuCoder)
==============================  =============================  ==========================
attention                       rotary (RoPE), no mask          rotary (RoPE), no mask
q/k/v biases                    ``include_qkv_bias`` (no)       always
MLP                             SwiGLU: ``ff_out(silu(ff_proj) * up_proj)``   SwiGLU
RoPE precision                  q, k rotated in float32         cos/sin in the model dtype
output                          ``ff_out`` (or tied to ``wte``)  ``lm_head``
what position i predicts        slot i                          slot i + 1 (shifted; the
                                                                adapter shifts back)
==============================  =============================  ==========================

LLaDA-MoE (``model_type`` ``lladamoe``, ``modeling_lladamoe.py``) is the same layer with
Dream's parameter names and RoPE precision (cos/sin in the model dtype), slot i predicted
at position i (as LLaDA), and these differences, all from its config:

* ``qk_layernorm``: an RMSNorm over each head's query and key (``q_norm``, ``k_norm``),
  before ``clip_qkv`` (q, k, v clamped to +-clip) and before RoPE;
* ``partial_rotary_factor``: RoPE turns only the first ``head_dim * factor`` dims;
* ``attention_bias``: biases on q, k, v *and* o;
* the MLP of layer i is dense (``dense_intermediate_size``) where ``moe_layer_freq[i]``
  is 0, else a mixture of experts: a router ``gate`` (hidden -> experts), softmax in
  float32, plus the router's ``expert_bias`` where ``moe_router_enable_expert_bias``, the
  ``num_experts_per_tok`` largest, their (biased, unnormalised) weights times the
  chosen experts' SwiGLU outputs (``expert_intermediate_size``), summed in expert order;
  plus a shared SwiGLU expert (``shared_expert_intermediate_size``) where it is not null.

The published ``modeling_lladamoe.py`` reads ``moe_router_score_function``,
``norm_topk_prob``, ``routed_scaling_factor``, ``router_num_group`` and
``router_topk_group`` into its config but never uses them in the forward (softmax
routing, no renormalisation, no scaling, no expert groups whatever they say); this code
computes what the published code computes, so it ignores them too.

:func:`load_native` reads ``config.json`` and the checkpoint's safetensors by name
(``model.safetensors`` or shards listed in ``model.safetensors.index.json``); no code from
the checkpoint runs and ``transformers`` is not needed. The forward takes optional
``positions`` and an additive ``attention_bias`` so that a key/value cache and padded
batches of several problems can be added without changing the weights' layout.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import ModelLoadError

NATIVE_FAMILIES = ("llada", "llada-moe", "dream", "llada2")


# ---------------------------------------------------------------------- config

@dataclass(frozen=True)
class NativeConfig:
    """The few numbers that define the network, read from a checkpoint's config.json."""
    family: str              # "llada", "llada-moe" or "dream"
    vocab_size: int          # rows of the embedding and columns of the logits
    hidden: int
    layers: int
    heads: int
    kv_heads: int            # grouped-query attention when < heads
    mlp_hidden: int
    norm_eps: float
    rope_theta: float
    max_positions: int
    qkv_bias: bool           # q, k, v projections have biases
    linear_bias: bool        # every other linear layer has a bias (LLaDA include_bias)
    tied_output: bool        # the output layer reuses the embedding matrix
    rope_in_float32: bool    # LLaDA rotates q, k in float32; Dream in the model dtype
    scale_embeddings: bool = False  # LLaDA input_emb_norm: x * sqrt(hidden)
    scale_logits: bool = False      # LLaDA scale_logits: logits / sqrt(hidden)
    # LLaDA-MoE (the defaults: none of it)
    out_bias: bool | None = None    # the attention output has a bias (None: linear_bias)
    qk_norm: bool = False           # RMSNorm over each head's q and k
    clip_qkv: float | None = None   # q, k, v clamped to [-clip, clip]
    rotary_dims: int | None = None  # RoPE on the first dims of a head only (None: all)
    moe_layers: tuple[bool, ...] = ()  # per layer: a mixture of experts (else dense)
    experts: int = 0
    experts_per_token: int = 0
    expert_hidden: int = 0
    shared_expert_hidden: int | None = None  # a shared expert in every MoE layer
    expert_bias: bool = False       # the router adds a per-expert bias before the top-k
    # LLaDA2.0 / LLaDA2.1 (family "llada2"; the defaults: none of it)
    block_causal: bool = False      # a block attends to itself and the blocks before it
    router_groups: int = 0          # sigmoid routing within the best router_topk_groups
    router_topk_groups: int = 0     # of router_groups groups of experts
    routed_scaling: float = 1.0     # the routed experts' weights times this

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def rope_dims(self) -> int:
        return self.rotary_dims or self.head_dim

    def is_moe(self, layer: int) -> bool:
        return bool(self.moe_layers) and self.moe_layers[layer]

    @classmethod
    def from_dict(cls, family: str, cfg: dict, where: str = "config.json") -> "NativeConfig":
        """Read ``cfg``; a setting this code does not implement is refused with the fix."""
        def need(key):
            if cfg.get(key) is None:
                raise ModelLoadError(f"{where}: no {key!r}, which a {family} config must have")
            return cfg[key]

        def unsupported(what):
            return ModelLoadError(
                f"{where}: {what}, which MEDAL's native {family} code does not implement. "
                "Load it with the checkpoint's own code instead: --implementation remote "
                "with --trust-remote-code (read the code first)")

        if family == "llada":
            for key, wanted in (("alibi", False), ("rope", True), ("block_type", "llama"),
                                ("layer_norm_type", "rms"), ("attention_layer_norm", False),
                                ("block_group_size", 1), ("activation_type", "silu")):
                if key in cfg and cfg[key] != wanted:
                    raise unsupported(f"{key} is {cfg[key]!r} (native: {wanted!r})")
            heads = int(need("n_heads"))
            kv = cfg.get("n_kv_heads")
            mqa = cfg.get("multi_query_attention")
            kv_heads = int(kv) if kv is not None else (1 if mqa else heads)
            d = int(need("d_model"))
            mlp = cfg.get("mlp_hidden_size") or int(cfg.get("mlp_ratio", 4)) * d
            include_bias = bool(cfg.get("include_bias", False))
            return cls(family="llada",
                       vocab_size=int(cfg.get("embedding_size") or need("vocab_size")),
                       hidden=d, layers=int(need("n_layers")), heads=heads, kv_heads=kv_heads,
                       mlp_hidden=int(mlp), norm_eps=float(cfg.get("rms_norm_eps", 1e-5)),
                       rope_theta=float(cfg.get("rope_theta", 10000.0)),
                       max_positions=int(cfg.get("max_sequence_length") or 4096),
                       qkv_bias=include_bias or bool(cfg.get("include_qkv_bias", False)),
                       linear_bias=include_bias,
                       tied_output=bool(cfg.get("weight_tying", False)),
                       rope_in_float32=bool(cfg.get("rope_full_precision", True)),
                       scale_embeddings=bool(cfg.get("input_emb_norm", False)),
                       scale_logits=bool(cfg.get("scale_logits", False)))
        if family == "dream":
            if cfg.get("rope_scaling"):
                raise unsupported(f"rope_scaling is {cfg['rope_scaling']!r} (native: none)")
            if cfg.get("hidden_act", "silu") != "silu":
                raise unsupported(f"hidden_act is {cfg['hidden_act']!r} (native: 'silu')")
            heads = int(need("num_attention_heads"))
            return cls(family="dream", vocab_size=int(need("vocab_size")),
                       hidden=int(need("hidden_size")), layers=int(need("num_hidden_layers")),
                       heads=heads, kv_heads=int(cfg.get("num_key_value_heads") or heads),
                       mlp_hidden=int(need("intermediate_size")),
                       norm_eps=float(cfg.get("rms_norm_eps", 1e-6)),
                       rope_theta=float(cfg.get("rope_theta", 10000.0)),
                       max_positions=int(cfg.get("max_position_embeddings") or 32768),
                       qkv_bias=True, linear_bias=False,
                       tied_output=bool(cfg.get("tie_word_embeddings", False)),
                       rope_in_float32=False)
        if family == "llada-moe":
            return cls._llada_moe(cfg, need, unsupported)
        if family == "llada2":
            return cls._llada2(cfg, need, unsupported)
        raise ModelLoadError(f"no native code for the family {family!r} "
                             f"(native: {', '.join(NATIVE_FAMILIES)})")


    @classmethod
    def _llada_moe(cls, cfg: dict, need, unsupported) -> "NativeConfig":
        if cfg.get("rope_scaling"):
            raise unsupported(f"rope_scaling is {cfg['rope_scaling']!r} (native: none)")
        if cfg.get("hidden_act", "silu") != "silu":
            raise unsupported(f"hidden_act is {cfg['hidden_act']!r} (native: 'silu')")
        hidden, heads = int(need("hidden_size")), int(need("num_attention_heads"))
        layers = int(need("num_hidden_layers"))
        head_dim = hidden // heads
        if cfg.get("head_dim") not in (None, head_dim):
            raise unsupported(f"head_dim is {cfg['head_dim']!r} (native: hidden_size / "
                              f"num_attention_heads = {head_dim})")
        factor = float(need("partial_rotary_factor"))
        rotary = int(head_dim * factor)
        if not 0 < rotary <= head_dim or rotary % 2:
            raise unsupported(f"partial_rotary_factor {factor} turns {rotary} of a head's "
                              f"{head_dim} dims (native: an even number, 2 to {head_dim})")
        freq = need("moe_layer_freq")
        if not isinstance(freq, list) or len(freq) < layers:
            raise unsupported(f"moe_layer_freq is {freq!r} (native: a list of 0/1 with one "
                              f"entry per layer, {layers})")
        moe = tuple(f != 0 for f in freq[:layers])
        shared = cfg.get("shared_expert_intermediate_size")
        if shared is not None and int(shared) <= 0:
            raise unsupported(f"shared_expert_intermediate_size is {shared!r} (native: "
                              "null or a positive size)")
        experts = int(need("num_experts")) if any(moe) else 0
        top_k = int(need("num_experts_per_tok")) if any(moe) else 0
        if any(moe) and not 0 < top_k <= experts:
            raise unsupported(f"num_experts_per_tok is {top_k} of {experts} experts")
        clip = cfg.get("clip_qkv")
        bias = bool(cfg.get("attention_bias", False))
        return cls(family="llada-moe", vocab_size=int(need("vocab_size")), hidden=hidden,
                   layers=layers, heads=heads,
                   kv_heads=int(cfg.get("num_key_value_heads") or heads),
                   mlp_hidden=int(need("dense_intermediate_size")) if not all(moe) else 0,
                   norm_eps=float(cfg.get("rms_norm_eps", 1e-5)),
                   rope_theta=float(need("rope_theta")),
                   max_positions=int(cfg.get("max_position_embeddings") or 4096),
                   qkv_bias=bias, linear_bias=False, out_bias=bias,
                   tied_output=bool(cfg.get("tie_word_embeddings", False)),
                   rope_in_float32=False, qk_norm=bool(cfg.get("qk_layernorm")),
                   clip_qkv=None if clip is None else float(clip),
                   rotary_dims=rotary, moe_layers=moe, experts=experts,
                   experts_per_token=top_k,
                   expert_hidden=int(need("expert_intermediate_size")) if any(moe) else 0,
                   shared_expert_hidden=None if shared is None else int(shared),
                   expert_bias=bool(cfg.get("moe_router_enable_expert_bias")))

    @classmethod
    def _llada2(cls, cfg: dict, need, unsupported) -> "NativeConfig":
        """LLaDA2.0 / LLaDA2.1 (``llada2_moe``): the keys and defaults of the genuine
        ``configuration_llada2_moe.py``, read as its ``modeling_llada2_moe.py`` uses them."""
        if cfg.get("rope_scaling"):
            raise unsupported(f"rope_scaling is {cfg['rope_scaling']!r} (native: none)")
        if cfg.get("hidden_act", "silu") != "silu":
            raise unsupported(f"hidden_act is {cfg['hidden_act']!r} (native: 'silu')")
        hidden, heads = int(need("hidden_size")), int(need("num_attention_heads"))
        layers = int(need("num_hidden_layers"))
        head_dim = hidden // heads
        if cfg.get("head_dim") not in (None, head_dim):
            raise unsupported(f"head_dim is {cfg['head_dim']!r} (native: hidden_size / "
                              f"num_attention_heads = {head_dim})")
        # 0 or unset: one key/value head per query head (as LLaDA2.1's config class reads it)
        kv_heads = int(cfg.get("num_key_value_heads") or heads)
        if heads % kv_heads:
            raise unsupported(f"num_key_value_heads {kv_heads} does not divide "
                              f"num_attention_heads {heads}")
        factor = float(cfg.get("partial_rotary_factor", 0.5))
        rotary = int(head_dim * factor)
        if not 0 < rotary <= head_dim or rotary % 2:
            raise unsupported(f"partial_rotary_factor {factor} turns {rotary} of a head's "
                              f"{head_dim} dims (native: an even number, 2 to {head_dim})")
        experts = cfg.get("num_experts")
        first_dense = int(cfg.get("first_k_dense_replace") or 0)
        moe = tuple(experts is not None and i >= first_dense for i in range(layers))
        top_k = groups = topk_groups = 0
        if any(moe):
            experts, top_k = int(experts), int(need("num_experts_per_tok"))
            groups, topk_groups = int(need("n_group")), int(need("topk_group"))
            if experts % groups or experts // groups < 2:
                raise unsupported(f"n_group {groups} does not split num_experts {experts} "
                                  "into groups of 2 or more (the router ranks a group by "
                                  "its two best experts)")
            if not 0 < topk_groups <= groups:
                raise unsupported(f"topk_group is {topk_groups} of {groups} groups")
            if not 0 < top_k <= topk_groups * (experts // groups):
                raise unsupported(f"num_experts_per_tok is {top_k}, more than the "
                                  f"{topk_groups * (experts // groups)} experts of the "
                                  f"{topk_groups} groups a token may use")
        shared = cfg.get("num_shared_experts")
        return cls(family="llada2", vocab_size=int(need("vocab_size")), hidden=hidden,
                   layers=layers, heads=heads, kv_heads=kv_heads,
                   mlp_hidden=int(need("intermediate_size")) if not all(moe) else 0,
                   norm_eps=float(cfg.get("rms_norm_eps", 1e-5)),
                   rope_theta=float(cfg.get("rope_theta", 10000.0)),
                   max_positions=int(cfg.get("max_position_embeddings") or 16384),
                   qkv_bias=bool(cfg.get("use_qkv_bias", False)), linear_bias=False,
                   out_bias=bool(cfg.get("use_bias", True)),
                   tied_output=bool(cfg.get("tie_word_embeddings", False)),
                   rope_in_float32=False, qk_norm=bool(cfg.get("use_qk_norm", True)),
                   rotary_dims=rotary, moe_layers=moe,
                   experts=experts if any(moe) else 0, experts_per_token=top_k,
                   expert_hidden=int(need("moe_intermediate_size")) if any(moe) else 0,
                   shared_expert_hidden=(int(need("moe_intermediate_size")) * int(shared)
                                         if any(moe) and shared else None),
                   expert_bias=any(moe), block_causal=True, router_groups=groups,
                   router_topk_groups=topk_groups,
                   routed_scaling=float(cfg.get("routed_scaling_factor", 2.5)))


# ---------------------------------------------------------------------- the network

class RMSNorm(nn.Module):
    """x / rms(x) * weight, computed in float32 and cast back before the weight."""

    def __init__(self, size: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def rotary_tables(cfg: NativeConfig, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of RoPE's angles ``position * theta^(-2j/d)``, float32, ``[B or 1, 1, T, d]``,
    the sin with its first half negated: :func:`apply_rotary` turns ``x`` as
    ``x * cos + rotate_half(x) * sin`` with ``rotate_half(x) * sin`` computed as
    ``x.roll(d / 2) * signed_sin`` (the same bits, as negation is exact: one operation a
    call instead of three, made once a forward)."""
    d = cfg.rope_dims
    inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, d, 2, dtype=torch.float,
                                                      device=positions.device) / d))
    angles = positions.float()[..., None] * inv_freq          # [B, T, d/2]
    angles = torch.cat((angles, angles), dim=-1)[:, None]     # [B, 1, T, d]
    sin = angles.sin()
    return angles.cos(), torch.cat((-sin[..., :d // 2], sin[..., d // 2:]), dim=-1)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """The published codes' form: ``(x1, x2) -> (-x2, x1)``, halves of the last dim."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor) -> torch.Tensor:
    """RoPE on the first ``cos.shape[-1]`` dims of each head (all of them but for a
    partial rotary factor); the rest pass through. ``signed_sin``: :func:`rotary_tables`'
    (``x.roll(d/2) * signed_sin`` is ``rotate_half(x) * sin`` to the bit)."""
    d = cos.shape[-1]
    if d == x.shape[-1]:
        return (x * cos) + (x.roll(d // 2, -1) * signed_sin)
    part = x[..., :d]
    turned = (part * cos) + (part.roll(d // 2, -1) * signed_sin)
    return torch.cat((turned, x[..., d:]), dim=-1)


def with_cache(k: torch.Tensor, v: torch.Tensor, kv=None, keep: list | None = None):
    """A span's keys and values ``[B, heads, T, head_dim]`` for its attention: appended
    to ``keep`` (the layer's share of a cache refresh), then joined with the cached ones
    before and after the span (``kv``: ((keys, values) before, (keys, values) after), a
    side None where there is none; :class:`BlockKVCache`)."""
    if keep is not None:
        keep.append((k, v))
    if kv is None:
        return k, v
    (kb, vb), (ka, va) = kv
    return (torch.cat([t for t in (kb, k, ka) if t is not None], dim=2),
            torch.cat([t for t in (vb, v, va) if t is not None], dim=2))


class SwiGLU(nn.Module):
    """``down(silu(gate(x)) * up(x))``: one expert of a mixture (no biases)."""

    def __init__(self, hidden: int, inner: int):
        super().__init__()
        self.gate = nn.Linear(hidden, inner, bias=False)
        self.up = nn.Linear(hidden, inner, bias=False)
        self.down = nn.Linear(inner, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


class MixtureOfExperts(nn.Module):
    """LLaDA-MoE's routed MLP: each token goes through its ``experts_per_token``
    highest-scoring experts, their outputs weighted by the scores and summed."""

    def __init__(self, cfg: NativeConfig):
        super().__init__()
        self.top_k = cfg.experts_per_token
        self.router = nn.Linear(cfg.hidden, cfg.experts, bias=False)
        self.experts = nn.ModuleList(SwiGLU(cfg.hidden, cfg.expert_hidden)
                                     for _ in range(cfg.experts))
        if cfg.expert_bias:
            self.register_buffer("expert_bias", torch.zeros(cfg.experts))
        else:
            self.expert_bias = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x = x.reshape(-1, shape[-1])                                # [N, C], one row a token
        scores = F.softmax(self.router(x), dim=-1, dtype=torch.float32)
        if self.expert_bias is not None:  # it changes the weights too, not only the choice
            scores = scores + self.expert_bias
        weights, chosen = torch.topk(scores, self.top_k, dim=-1)   # [N, k]
        weights = weights.to(x.dtype)
        out = torch.zeros_like(x)
        # expert by expert, the tokens that chose it (in the order of their rank, then
        # position): the order of the sums, so the bits equal the published code's
        for e, expert in enumerate(self.experts):
            rank, rows = torch.where(chosen.T == e)
            if rows.numel():
                out.index_add_(0, rows, expert(x[rows]) * weights[rows, rank, None])
        return out.view(shape)


class Block(nn.Module):
    """One transformer layer: bidirectional rotary attention, then a SwiGLU MLP (or, in
    LLaDA-MoE's MoE layers, a mixture of SwiGLU experts plus an optional shared one)."""

    def __init__(self, cfg: NativeConfig, layer: int = 0):
        super().__init__()
        self.cfg = cfg
        h, kv = cfg.hidden, cfg.kv_heads * cfg.head_dim
        self.attn_norm = RMSNorm(h, cfg.norm_eps)
        self.q = nn.Linear(h, h, bias=cfg.qkv_bias)
        self.k = nn.Linear(h, kv, bias=cfg.qkv_bias)
        self.v = nn.Linear(h, kv, bias=cfg.qkv_bias)
        out_bias = cfg.linear_bias if cfg.out_bias is None else cfg.out_bias
        self.o = nn.Linear(h, h, bias=out_bias)
        if cfg.qk_norm:
            self.q_norm = RMSNorm(cfg.head_dim, cfg.norm_eps)
            self.k_norm = RMSNorm(cfg.head_dim, cfg.norm_eps)
        self.mlp_norm = RMSNorm(h, cfg.norm_eps)
        self.moe = MixtureOfExperts(cfg) if cfg.is_moe(layer) else None
        if self.moe is None:
            self.gate = nn.Linear(h, cfg.mlp_hidden, bias=cfg.linear_bias)
            self.up = nn.Linear(h, cfg.mlp_hidden, bias=cfg.linear_bias)
            self.down = nn.Linear(cfg.mlp_hidden, h, bias=cfg.linear_bias)
        self.shared = (SwiGLU(h, cfg.shared_expert_hidden)
                       if self.moe is not None and cfg.shared_expert_hidden else None)

    def forward(self, x, cos, sin, attention_bias=None, kv=None, keep=None, batch: int = 1):
        """``x``: the ``batch`` rows' tokens as one matrix, ``[batch * T, hidden]`` (every
        linear layer is then one matrix product, without the reshapes a 3-d input takes);
        ``cos``, ``sin``: :func:`rotary_tables`', in float32 where the family rotates in
        float32, else in ``x``'s dtype. ``kv`` (the KV cache, :class:`BlockKVCache`): this
        layer's cached keys and values of the positions before and after ``x``'s span,
        post-RoPE, ``[B, kv_heads, n, head_dim]`` each (or None); ``x`` attends to them
        and to itself. ``keep``: a list this layer's keys and values of ``x`` are
        appended to (for a cache)."""
        cfg = self.cfg
        N, C = x.shape
        B, T = batch, N // batch
        h = self.attn_norm(x)
        q, k, v = self.q(h), self.k(h), self.v(h)
        if cfg.qk_norm:  # per head
            q = self.q_norm(q.view(N, cfg.heads, cfg.head_dim)).view(N, -1)
            k = self.k_norm(k.view(N, cfg.kv_heads, cfg.head_dim)).view(N, -1)
        if cfg.clip_qkv is not None:
            q, k, v = (t.clamp(-cfg.clip_qkv, cfg.clip_qkv) for t in (q, k, v))
        q = q.view(B, T, cfg.heads, cfg.head_dim).transpose(1, 2)
        k = k.view(B, T, cfg.kv_heads, cfg.head_dim).transpose(1, 2)
        v = v.view(B, T, cfg.kv_heads, cfg.head_dim).transpose(1, 2)
        if cfg.rope_in_float32:
            q = apply_rotary(q.float(), cos, sin).type_as(v)
            k = apply_rotary(k.float(), cos, sin).type_as(v)
        else:
            q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        k, v = with_cache(k, v, kv, keep)
        if cfg.kv_heads != cfg.heads:
            k = k.repeat_interleave(cfg.heads // cfg.kv_heads, dim=1)
            v = v.repeat_interleave(cfg.heads // cfg.kv_heads, dim=1)
        att = F.scaled_dot_product_attention(q, k, v, attn_mask=attention_bias, is_causal=False)
        x = x + self.o(att.transpose(1, 2).reshape(N, C))
        h = self.mlp_norm(x)
        if self.moe is None:
            return x + self.down(F.silu(self.gate(h)) * self.up(h))
        out = self.moe(h)
        if self.shared is not None:
            out = out + self.shared(h)
        return x + out


class GroupRoutedExperts(nn.Module):
    """LLaDA2's routed MLP (``LLaDA2MoeSparseMoeBlock`` without its shared expert): the
    router's scores are sigmoids (float32); with the per-expert bias added, the experts
    are split into ``router_groups`` groups, each ranked by the sum of its two best
    scores, and a token may use the experts of the ``router_topk_groups`` best groups
    only, of which it takes the ``experts_per_token`` best. Their weights are the scores
    without the bias, normalised to sum to 1 (for more than one expert) and times
    ``routed_scaling``; the weighted sum is taken in float32 in the order of the
    experts' rank. Every step is the published code's operation on the same layout, so
    the bits are its bits (tests/networks/test_llada2.py)."""

    def __init__(self, cfg: NativeConfig):
        super().__init__()
        self.cfg = cfg
        self.router = nn.Linear(cfg.hidden, cfg.experts, bias=False)
        self.register_buffer("expert_bias", torch.zeros(cfg.experts))
        self.experts = nn.ModuleList(SwiGLU(cfg.hidden, cfg.expert_hidden)
                                     for _ in range(cfg.experts))

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``x`` ``[N, C]`` -> each token's experts ``[N, k]`` (best first) and their
        weights (float32)."""
        cfg = self.cfg
        n = x.shape[0]
        logits = F.linear(x.float(), self.router.weight.float())
        scores = torch.sigmoid(logits)
        biased = scores + self.expert_bias
        group_scores = biased.view(n, cfg.router_groups, -1).topk(2, dim=-1)[0].sum(dim=-1)
        best_groups = torch.topk(group_scores, k=cfg.router_topk_groups, dim=-1,
                                 sorted=False)[1]
        allowed = torch.zeros_like(group_scores).scatter_(1, best_groups, 1)
        allowed = (allowed.unsqueeze(-1).expand(n, cfg.router_groups,
                                                cfg.experts // cfg.router_groups)
                   .reshape(n, -1))
        chosen = torch.topk(biased.masked_fill(~allowed.bool(), float("-inf")),
                            k=cfg.experts_per_token, dim=-1)[1]
        weights = torch.gather(scores, dim=1, index=chosen)
        if cfg.experts_per_token > 1:
            weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
        return chosen, weights * cfg.routed_scaling

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        chosen, weights = self.route(x)
        k = chosen.shape[1]
        # the (token, rank) pairs sorted by expert; each expert runs on its tokens at once
        order = chosen.view(-1).argsort()
        per_expert = torch.bincount(chosen.view(-1), minlength=len(self.experts)).tolist()
        tokens = x[order // k]
        outputs, start = [], 0
        for expert, count in zip(self.experts, per_expert):
            if count:
                outputs.append(expert(tokens[start:start + count]))
                start += count
        outs = torch.cat(outputs) if outputs else tokens.new_empty(0)
        placed = torch.empty_like(outs)
        placed[order] = outs
        return (placed.view(*chosen.shape, -1).type(weights.dtype)
                .mul_(weights.unsqueeze(-1)).sum(dim=1).type(placed.dtype))


class Llada2Block(nn.Module):
    """One LLaDA2 layer: attention with one q/k/v projection (``query_key_value``),
    per-head q/k RMSNorm, partial RoPE, an output bias (``use_bias``), and the attention
    mask the forward is given (block-causal: :func:`block_causal_bias`); then a dense
    SwiGLU MLP (the first ``first_k_dense_replace`` layers) or :class:`GroupRoutedExperts`
    plus a shared expert."""

    def __init__(self, cfg: NativeConfig, layer: int = 0):
        super().__init__()
        self.cfg = cfg
        h, d = cfg.hidden, cfg.head_dim
        self.attn_norm = RMSNorm(h, cfg.norm_eps)
        self.qkv = nn.Linear(h, (cfg.heads + 2 * cfg.kv_heads) * d, bias=cfg.qkv_bias)
        if cfg.qk_norm:
            self.q_norm = RMSNorm(d, cfg.norm_eps)
            self.k_norm = RMSNorm(d, cfg.norm_eps)
        self.o = nn.Linear(cfg.heads * d, h, bias=bool(cfg.out_bias))
        self.mlp_norm = RMSNorm(h, cfg.norm_eps)
        self.moe = GroupRoutedExperts(cfg) if cfg.is_moe(layer) else None
        if self.moe is None:
            self.gate = nn.Linear(h, cfg.mlp_hidden, bias=False)
            self.up = nn.Linear(h, cfg.mlp_hidden, bias=False)
            self.down = nn.Linear(cfg.mlp_hidden, h, bias=False)
        self.shared = (SwiGLU(h, cfg.shared_expert_hidden)
                       if self.moe is not None and cfg.shared_expert_hidden else None)

    def forward(self, x, cos, sin, attention_bias=None, kv=None, keep=None, batch: int = 1):
        """:meth:`Block.forward`'s interface (``x``: ``[batch * T, hidden]``)."""
        cfg = self.cfg
        N, C = x.shape
        B, T = batch, N // batch
        qkv = self.qkv(self.attn_norm(x)).view(B, T, cfg.heads + 2 * cfg.kv_heads,
                                               cfg.head_dim)
        q, k, v = (t.transpose(1, 2) for t in qkv.split([cfg.heads, cfg.kv_heads,
                                                         cfg.kv_heads], dim=-2))
        if cfg.qk_norm:  # over each head, on the [B, heads, T, head_dim] view
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        k, v = with_cache(k, v, kv, keep)
        if cfg.kv_heads != cfg.heads:
            k = k.repeat_interleave(cfg.heads // cfg.kv_heads, dim=1)
            v = v.repeat_interleave(cfg.heads // cfg.kv_heads, dim=1)
        att = F.scaled_dot_product_attention(q, k, v, attn_mask=attention_bias,
                                             scale=cfg.head_dim ** -0.5)
        x = x + self.o(att.transpose(1, 2).reshape(N, cfg.heads * cfg.head_dim))
        h = self.mlp_norm(x)
        if self.moe is None:
            return x + self.down(F.silu(self.gate(h)) * self.up(h))
        out = self.moe(h)
        if self.shared is not None:
            out = out + self.shared(h)
        return x + out


def block_causal_bias(length: int, block_length: int, dtype: torch.dtype,
                      device: torch.device | str = "cpu") -> torch.Tensor:
    """LLaDA2's attention mask for a sequence of ``length`` positions: blocks of
    ``block_length`` positions from position 0 (the prompt's included), each attending
    to itself and every block before it; additive (0 or -inf), ``[1, 1, length,
    length]``. The values of the published samplers' ``log(tril(ones))`` mask."""
    block = torch.arange(length, device=device) // block_length
    bias = torch.zeros(length, length, device=device)
    bias.masked_fill_(block[None, :] > block[:, None], float("-inf"))
    return bias.to(dtype)[None, None]


class NativeLM(nn.Module):
    """Token ids -> logits, for a LLaDA-, LLaDA-MoE- or Dream-family checkpoint."""

    def __init__(self, cfg: NativeConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.hidden)
        layer = Llada2Block if cfg.family == "llada2" else Block
        self.blocks = nn.ModuleList(layer(cfg, i) for i in range(cfg.layers))
        self.final_norm = RMSNorm(cfg.hidden, cfg.norm_eps)
        self.lm_head = (None if cfg.tied_output else
                        nn.Linear(cfg.hidden, cfg.vocab_size, bias=cfg.linear_bias))

    def get_output_embeddings(self) -> nn.Linear | None:
        """The output layer (None when it is the embedding matrix, tied)."""
        return self.lm_head

    def forward(self, ids: torch.Tensor, attention_bias: torch.Tensor | None = None,
                positions: torch.Tensor | None = None, rows: int | None = None) -> torch.Tensor:
        """ids ``[B, T]`` -> logits ``[B, T or rows, V]`` in the weights' dtype.

        ``positions`` ``[B or 1, T]``: each token's position (default 0..T-1).
        ``attention_bias``: added to the attention scores (``[B, 1, T, T]``, float; or
        bool, True = may attend); None = every token sees every token, as both families
        are trained. ``rows``: only the last ``rows`` positions go through the output
        layer (the answer slots; the prompt's logits are never needed)."""
        return self.forward_span(ids, attention_bias=attention_bias, positions=positions,
                                 rows=rows)

    def forward_span(self, ids: torch.Tensor, attention_bias: torch.Tensor | None = None,
                     positions: torch.Tensor | None = None, rows: int | None = None,
                     kv: list | None = None, keep: list | None = None) -> torch.Tensor:
        """:meth:`forward` of a span of the sequence: ``ids`` are the span's tokens at
        ``positions``, ``kv`` per layer the cached ((keys, values) before, (keys, values)
        after) the span attends to besides itself; ``keep`` (a list) receives per layer
        the span's own (keys, values). Without ``kv`` it is the plain forward."""
        cfg = self.cfg
        if positions is None:
            positions = torch.arange(ids.shape[1], device=ids.device)[None]
        x = self.embed(ids)
        if cfg.scale_embeddings:
            x = x * (cfg.hidden ** 0.5)
        cos, sin = rotary_tables(cfg, positions)
        if not cfg.rope_in_float32:  # Dream, LLaDA-MoE: the tables in the model's dtype
            cos, sin = cos.to(x.dtype), sin.to(x.dtype)
        B, T, C = x.shape
        x = x.view(B * T, C)
        for i, block in enumerate(self.blocks):
            layer = [] if keep is not None else None
            x = block(x, cos, sin, attention_bias, kv=kv[i] if kv is not None else None,
                      keep=layer, batch=B)
            if keep is not None:
                keep.append(layer[0])
        x = x.view(B, T, C)
        if rows is not None:
            x = x[:, -rows:]
        x = self.final_norm(x)
        logits = (F.linear(x, self.embed.weight) if self.lm_head is None else self.lm_head(x))
        if cfg.scale_logits:
            logits = logits * (1 / math.sqrt(cfg.hidden))
        return logits


# ---------------------------------------------------------------------- checkpoint names

#: our parameter name -> the checkpoint's, per family ({i}: the layer)
CHECKPOINT_NAMES = {
    "llada": {"embed": "model.transformer.wte", "final_norm": "model.transformer.ln_f",
              "lm_head": "model.transformer.ff_out",
              "blocks.{i}.attn_norm": "model.transformer.blocks.{i}.attn_norm",
              "blocks.{i}.q": "model.transformer.blocks.{i}.q_proj",
              "blocks.{i}.k": "model.transformer.blocks.{i}.k_proj",
              "blocks.{i}.v": "model.transformer.blocks.{i}.v_proj",
              "blocks.{i}.o": "model.transformer.blocks.{i}.attn_out",
              "blocks.{i}.mlp_norm": "model.transformer.blocks.{i}.ff_norm",
              "blocks.{i}.gate": "model.transformer.blocks.{i}.ff_proj",
              "blocks.{i}.up": "model.transformer.blocks.{i}.up_proj",
              "blocks.{i}.down": "model.transformer.blocks.{i}.ff_out"},
    "dream": {"embed": "model.embed_tokens", "final_norm": "model.norm", "lm_head": "lm_head",
              "blocks.{i}.attn_norm": "model.layers.{i}.input_layernorm",
              "blocks.{i}.q": "model.layers.{i}.self_attn.q_proj",
              "blocks.{i}.k": "model.layers.{i}.self_attn.k_proj",
              "blocks.{i}.v": "model.layers.{i}.self_attn.v_proj",
              "blocks.{i}.o": "model.layers.{i}.self_attn.o_proj",
              "blocks.{i}.mlp_norm": "model.layers.{i}.post_attention_layernorm",
              "blocks.{i}.gate": "model.layers.{i}.mlp.gate_proj",
              "blocks.{i}.up": "model.layers.{i}.mlp.up_proj",
              "blocks.{i}.down": "model.layers.{i}.mlp.down_proj"},
}
#: LLaDA-MoE: Dream's names, and its q/k norms and experts ({j}: the expert)
CHECKPOINT_NAMES["llada-moe"] = {
    **CHECKPOINT_NAMES["dream"],
    "blocks.{i}.q_norm": "model.layers.{i}.self_attn.q_norm",
    "blocks.{i}.k_norm": "model.layers.{i}.self_attn.k_norm",
    "blocks.{i}.moe": "model.layers.{i}.mlp",  # its expert_bias
    "blocks.{i}.moe.router": "model.layers.{i}.mlp.gate",
    "blocks.{i}.moe.experts.{j}.gate": "model.layers.{i}.mlp.experts.{j}.gate_proj",
    "blocks.{i}.moe.experts.{j}.up": "model.layers.{i}.mlp.experts.{j}.up_proj",
    "blocks.{i}.moe.experts.{j}.down": "model.layers.{i}.mlp.experts.{j}.down_proj",
    "blocks.{i}.shared.gate": "model.layers.{i}.shared_expert.gate_proj",
    "blocks.{i}.shared.up": "model.layers.{i}.shared_expert.up_proj",
    "blocks.{i}.shared.down": "model.layers.{i}.shared_expert.down_proj",
}
#: LLaDA2.0 / LLaDA2.1 (``modeling_llada2_moe.py``'s names)
CHECKPOINT_NAMES["llada2"] = {
    "embed": "model.word_embeddings", "final_norm": "model.norm", "lm_head": "lm_head",
    "blocks.{i}.attn_norm": "model.layers.{i}.input_layernorm",
    "blocks.{i}.qkv": "model.layers.{i}.attention.query_key_value",
    "blocks.{i}.q_norm": "model.layers.{i}.attention.query_layernorm",
    "blocks.{i}.k_norm": "model.layers.{i}.attention.key_layernorm",
    "blocks.{i}.o": "model.layers.{i}.attention.dense",
    "blocks.{i}.mlp_norm": "model.layers.{i}.post_attention_layernorm",
    "blocks.{i}.gate": "model.layers.{i}.mlp.gate_proj",
    "blocks.{i}.up": "model.layers.{i}.mlp.up_proj",
    "blocks.{i}.down": "model.layers.{i}.mlp.down_proj",
    "blocks.{i}.moe": "model.layers.{i}.mlp.gate",  # its expert_bias
    "blocks.{i}.moe.router": "model.layers.{i}.mlp.gate",
    "blocks.{i}.moe.experts.{j}.gate": "model.layers.{i}.mlp.experts.{j}.gate_proj",
    "blocks.{i}.moe.experts.{j}.up": "model.layers.{i}.mlp.experts.{j}.up_proj",
    "blocks.{i}.moe.experts.{j}.down": "model.layers.{i}.mlp.experts.{j}.down_proj",
    "blocks.{i}.shared.gate": "model.layers.{i}.mlp.shared_experts.gate_proj",
    "blocks.{i}.shared.up": "model.layers.{i}.mlp.shared_experts.up_proj",
    "blocks.{i}.shared.down": "model.layers.{i}.mlp.shared_experts.down_proj",
}


def checkpoint_name(family: str, name: str) -> str:
    """Our parameter name (``blocks.3.q.weight``, ``blocks.3.moe.experts.5.up.weight``)
    -> the checkpoint's."""
    module, _, leaf = name.rpartition(".")
    parts = module.split(".")
    numbers, key = [], []
    for part in parts:  # the first number is the layer ({i}), the second the expert ({j})
        if part.isdigit():
            key.append("{i}" if not numbers else "{j}")
            numbers.append(part)
        else:
            key.append(part)
    i, j = (numbers + ["", ""])[:2]
    return CHECKPOINT_NAMES[family][".".join(key)].format(i=i, j=j) + "." + leaf


def weight_files(directory: Path) -> list[Path]:
    """The checkpoint's safetensors files; pickled weights are refused."""
    index = directory / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (OSError, ValueError, KeyError) as exc:
            raise ModelLoadError(f"{index} is unreadable ({exc}); download it again") from exc
        return [directory / s for s in shards]
    files = sorted(directory.glob("*.safetensors"))
    if files:
        return files
    if any(directory.glob("pytorch_model*.bin")):
        raise ModelLoadError(
            f"{directory} holds its weights as pytorch_model*.bin (Python pickle, which can run "
            "code when loaded); MEDAL loads safetensors only. Download the checkpoint's "
            "*.safetensors files, or convert the weights once with a tool you trust")
    raise ModelLoadError(f"no *.safetensors weights in {directory}")


def load_native(directory: Path, family: str, device: torch.device, dtype: torch.dtype,
                config: dict | None = None) -> NativeLM:
    """Build the network from ``directory/config.json`` and load its safetensors by name,
    straight onto ``device`` in ``dtype``. Missing or unexpected tensors, or tensors of the
    wrong shape, are an error that names them."""
    from safetensors import safe_open

    from .hf.checkpoint import read_safetensors_header
    directory = Path(directory)
    if config is None:
        config = json.loads((directory / "config.json").read_text())
    cfg = NativeConfig.from_dict(family, config, str(directory / "config.json"))
    with torch.device("meta"):
        net = NativeLM(cfg)
    wanted = {checkpoint_name(family, n): n for n in net.state_dict()}
    # a tied output layer is the embedding; a copy saved beside it is not read (as in
    # transformers, where tying points the output layer at the embedding after loading)
    ignored = {checkpoint_name(family, "lm_head.weight")} if cfg.tied_output else set()
    state, unexpected = {}, []
    for path in weight_files(directory):
        read_safetensors_header(path)   # a damaged file: one line naming it and the fix
        with safe_open(str(path), framework="pt", device=str(device)) as f:
            for key in f.keys():
                if key in wanted:
                    state[wanted[key]] = f.get_tensor(key).to(dtype)
                elif key not in ignored and not key.endswith("rotary_emb.inv_freq"):
                    unexpected.append(key)
    missing = [k for k, ours in wanted.items() if ours not in state]
    if missing or unexpected:
        raise ModelLoadError(
            f"the weights in {directory} do not fit the native {family} network built from "
            f"its config.json: missing {missing[:5] or 'none'}"
            f"{' ...' if len(missing) > 5 else ''}, unexpected {unexpected[:5] or 'none'}"
            f"{' ...' if len(unexpected) > 5 else ''}. If this is another architecture, "
            "load it with --implementation remote --trust-remote-code")
    shapes = net.state_dict()
    wrong = [f"{k}: {tuple(v.shape)} (config says {tuple(shapes[k].shape)})"
             for k, v in state.items() if v.shape != shapes[k].shape]
    if wrong:
        raise ModelLoadError(f"the weights in {directory} do not match its config.json: "
                             f"{'; '.join(wrong[:3])}")
    net.load_state_dict(state, assign=True)
    return net.eval()


# ---------------------------------------------------------------------- KV cache

KV_CACHE_MODES = ("prefix", "dual")


class BlockKVCache:
    """Fast-dLLM's block-wise KV cache (Wu et al. 2025, "Fast-dLLM: Training-free
    Acceleration of Diffusion LLM by Enabling KV Cache and Parallel Decoding") for the
    native network, in semi-autoregressive block mode. APPROXIMATE: both families attend
    bidirectionally, so a cached key or value goes stale as soon as a slot it attended to
    is committed; Fast-dLLM shows the error is small in practice, and docs/SPEED.md
    reports what it does to the answers here.

    * ``prefix``: when the decode reaches a block (or the prompt + earlier blocks change),
      one full forward refreshes the cache of every position before the block; every
      other forward of that block computes only the block and what follows it, attending
      to the cached prefix. Logits: every answer slot, fresh.
    * ``dual``: the refresh caches the positions after the block too; a forward computes
      the block alone. The later blocks' logits are the refresh's (stale) ones.
    * ``refresh = "step"``: every forward refreshes first (no saving; the exactness
      check: its logits equal the uncached forward's).
    * ``fresh_after`` (dual mode; MEDAL's search sets it while it runs): a cached forward
      computes the block and what follows it, attending to the cached prefix only, as in
      prefix mode. The search's reward reads every masked slot's entropy, and the dual
      cache's later blocks are the refresh's: the same for every node of the block, so
      r_IG lost what a commitment does to them (measured: docs/SPEED.md).

    The cache holds one prefix (and suffix), for one batch row shared by every row of a
    forward; a batch whose rows differ before the block (or after it, in dual mode), or
    sit in different blocks, runs uncached. What is recomputed: a refresh recomputes
    everything; a cached forward recomputes the block (and, in prefix mode, the suffix),
    whatever changed in the prefix since the refresh is NOT seen until the next refresh.
    """

    def __init__(self, mode: str, block_length: int, prompt_length: int,
                 refresh: str = "block"):
        if mode not in KV_CACHE_MODES:
            raise ValueError(f"kv cache mode must be one of {KV_CACHE_MODES}, got {mode!r}")
        self.mode, self.block_length, self.prompt_length = mode, block_length, prompt_length
        self.refresh = refresh
        self.fresh_after = False
        self.key = None        # (block, prefix tokens[, suffix tokens]) the cache was made for
        self.kv = None         # per layer ((k, v) before, (k, v) after)
        self.stale_logits = None  # dual: the refresh's logits of the answer rows
        self.refreshes = 0
        self.cached_forwards = 0

    def span(self, ids: torch.Tensor, mask_id: int) -> tuple[int, int] | None:
        """The current block's [start, end) in ``ids`` (the first block of the answer
        with a mask), the same for every row; None when the rows disagree or none has a
        mask."""
        answer = ids[:, self.prompt_length:] == mask_id
        if not bool(answer.any(1).all()):
            return None
        blocks = (answer.float().argmax(1) // self.block_length).unique()
        if len(blocks) != 1:
            return None
        start = self.prompt_length + int(blocks[0]) * self.block_length
        return start, min(start + self.block_length, ids.shape[1])

    def plan(self, ids: torch.Tensor, mask_id: int, shifted: bool = False) -> "CachePlan | None":
        """How a forward of ``ids`` goes through this cache: None when it runs uncached
        (no block, or rows that differ outside it), else the span it computes and
        whether the cache must be refreshed first."""
        span = self.span(ids, mask_id)
        if span is None:
            return None
        start, end = span
        lo = start - 1 if shifted else start  # Dream: slot i is predicted at position i-1
        first = ids[:1]
        same_prefix = bool((ids[:, :lo] == first[:, :lo]).all())
        same_suffix = self.mode == "prefix" or bool((ids[:, end:] == first[:, end:]).all())
        if self.refresh != "step" and not (same_prefix and same_suffix):
            return None
        key = (start, first[0, :lo].tolist(),
               first[0, end:].tolist() if self.mode == "dual" else None)
        tail = ids.shape[1] if self.mode == "prefix" or self.fresh_after else end
        return CachePlan(lo, end, tail, key, self.refresh == "step" or key != self.key)


class CachePlan(NamedTuple):
    """:meth:`BlockKVCache.plan`: the forward computes positions ``[lo, tail)`` (the block
    starts at ``lo``, or one before it when the outputs are shifted; ``end`` is the block's
    end) attending to the cache made for ``key``; ``refresh``: remake the cache first."""
    lo: int
    end: int
    tail: int
    key: tuple
    refresh: bool


def cached_logits(net: "NativeLM", items: list[tuple[torch.Tensor, "BlockKVCache | None"]],
                  rows: int, mask_id: int, shifted: bool = False
                  ) -> tuple[torch.Tensor, list[int]]:
    """Several forwards of one sequence length, each ``(ids [B_i, T], its cache or None)``,
    in as few network calls as they allow (lock-step, medal.runner.forward_together):
    the forwards that run uncached together, the refreshes together, then the cached
    spans together (those computing the same positions in the same mode). Each forward's
    rows of a call are its own rows alone wherever the network computes a batch's rows
    independently (tests/networks/test_kv_cache.py checks it on the CPU). Returns the
    answer-row logits of every forward's rows, in the order given (one tensor, written
    in place: no copy of a vocabulary-wide tensor per forward), and the token positions
    the network processed for each. A run alone is one item: the same code.

    A refresh's logits are its own for the rows it computed, as Fast-dLLM's samplers use
    the refreshing forward's logits for the step that refreshes (``logits_full``): the
    first row of a forward (its cache is made from it), every row when refreshed every
    step. Only a forward's other rows (MEDAL's children, which differ inside the block)
    go through the span against the new cache. So refreshed every step is the uncached
    forward itself, to the bit (the span recomputed against a fresh cache equals it only
    to rounding: the CPU attention kernel blocks its queries by 32, and a span of 33
    positions -- Dream's first block of 32 slots in prefix mode -- puts its last query
    alone in a block, which takes another product path; docs/SPEED.md)."""
    T = items[0][0].shape[1]
    starts = [0]
    for ids, _ in items:
        starts.append(starts[-1] + ids.shape[0])
    result: torch.Tensor | None = None   # [all rows, rows, V], made at the first output
    passes = [0] * len(items)

    def put(i: int, rows_out: torch.Tensor, lo: int = 0, hi: int | None = None,
            first: int = 0, last: int | None = None) -> None:
        # item i's rows [first, last) of the result, answer rows [lo, hi); broadcast
        # over those rows
        nonlocal result
        if result is None:
            result = rows_out.new_empty((starts[-1],) + tuple(rows_out.shape[1:]))
        end = starts[i + 1] if last is None else starts[i] + last
        result[starts[i] + first:end, lo:hi] = rows_out

    plans = [None if cache is None else cache.plan(ids, mask_id, shifted)
             for ids, cache in items]
    done = [0] * len(items)   # each forward's leading rows whose logits are final (a refresh's)

    def joined(tensors: list[torch.Tensor]) -> torch.Tensor:
        return tensors[0] if len(tensors) == 1 else torch.cat(tensors)

    plain = [i for i, plan in enumerate(plans) if plan is None]
    if plain:
        full = net.forward_span(joined([items[i][0] for i in plain]), rows=rows)
        a = 0
        for i in plain:
            B = items[i][0].shape[0]
            put(i, full[a:a + B])
            passes[i] = B * T
            a += B
    stale = [i for i, plan in enumerate(plans) if plan is not None and plan.refresh]
    if stale:
        # refreshed every step: from every row itself (exact); else from the first row,
        # for every row of every forward until the next refresh
        sources = [items[i][0] if items[i][1].refresh == "step" else items[i][0][:1]
                   for i in stale]
        keep: list = []
        full = net.forward_span(joined(sources), rows=rows, keep=keep)
        # several runs' refresh: each cache gets its own copy, so that one run's next
        # refresh frees its memory whatever the others' caches hold (the values are the
        # same; a run alone keeps views of its own refresh)
        own = (lambda t: t.clone()) if len(stale) > 1 else (lambda t: t)
        a = 0
        for i, src in zip(stale, sources):
            cache, plan, b = items[i][1], plans[i], a + len(src)
            lo, end = plan.lo, plan.end
            cache.kv = [((own(k[a:b, :, :lo]), own(v[a:b, :, :lo])),
                         (own(k[a:b, :, end:]), own(v[a:b, :, end:])) if cache.mode == "dual"
                         else (None, None))
                        for k, v in keep]
            cache.stale_logits = own(full[a:b])
            cache.key = plan.key
            cache.refreshes += 1
            passes[i] += src.numel()
            put(i, full[a:b], last=len(src))     # the refreshed rows: their own logits
            done[i] = len(src)
            a = b
    groups: dict[tuple, list[int]] = {}
    for i, plan in enumerate(plans):
        if plan is not None and done[i] < items[i][0].shape[0]:
            if not plan.refresh:
                items[i][1].cached_forwards += 1
            groups.setdefault((plan.lo, plan.tail, items[i][1].mode), []).append(i)
    for (lo, tail, _), members in groups.items():
        sizes = [items[i][0].shape[0] - done[i] for i in members]
        caches = [items[i][1].kv for i in members]

        def stacked(layer: int, side: int, which: int) -> torch.Tensor | None:
            # one layer's cached keys (which=0) or values (1), before (side=0) or after
            # (1) the span, each forward's repeated for its rows (expand: a no-op for a
            # forward of as many rows as its cache); none after a span that runs to the
            # end (prefix mode, or a dual cache's fresh_after forward)
            parts = [c[layer][side][which] for c in caches]
            if parts[0] is None or (side == 1 and tail == T):
                return None
            return joined([t.expand(B, -1, -1, -1) for t, B in zip(parts, sizes)])

        kv = [tuple((stacked(n, side, 0), stacked(n, side, 1)) for side in (0, 1))
              for n in range(len(caches[0]))]
        positions = torch.arange(lo, tail, device=items[members[0]][0].device)[None]
        out = net.forward_span(joined([items[i][0][done[i]:, lo:tail] for i in members]),
                               positions=positions, kv=kv)
        # the answer rows: [T - rows, T) of the sequence; computed: [lo, tail)
        a, b = max(lo, T - rows), tail
        at = 0
        for i, B in zip(members, sizes):
            d = done[i]      # the refresh's rows, then the fresh
            put(i, items[i][1].stale_logits, first=d)
            put(i, out[at:at + B, a - lo:b - lo], a - (T - rows), b - (T - rows), first=d)
            passes[i] += B * (tail - lo)
            at += B
    return result, passes
