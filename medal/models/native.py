"""Our own model code for the LLaDA and Dream families, in one readable file.

Both are a Llama-style transformer that reads the whole sequence at once (no causal
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

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import ModelLoadError

NATIVE_FAMILIES = ("llada", "dream")


# ---------------------------------------------------------------------- config

@dataclass(frozen=True)
class NativeConfig:
    """The few numbers that define the network, read from a checkpoint's config.json."""
    family: str              # "llada" or "dream"
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

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

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
        raise ModelLoadError(f"no native code for the family {family!r} "
                             f"(native: {', '.join(NATIVE_FAMILIES)})")


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
    """cos and sin of RoPE's angles ``position * theta^(-2j/d)``, float32, ``[B or 1, 1, T, d]``."""
    d = cfg.head_dim
    inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, d, 2, dtype=torch.float,
                                                      device=positions.device) / d))
    angles = positions.float()[..., None] * inv_freq          # [B, T, d/2]
    angles = torch.cat((angles, angles), dim=-1)[:, None]     # [B, 1, T, d]
    return angles.cos(), angles.sin()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return (x * cos) + (rotate_half(x) * sin)


class Block(nn.Module):
    """One transformer layer: bidirectional rotary attention, then a SwiGLU MLP."""

    def __init__(self, cfg: NativeConfig):
        super().__init__()
        self.cfg = cfg
        h, kv = cfg.hidden, cfg.kv_heads * cfg.head_dim
        self.attn_norm = RMSNorm(h, cfg.norm_eps)
        self.q = nn.Linear(h, h, bias=cfg.qkv_bias)
        self.k = nn.Linear(h, kv, bias=cfg.qkv_bias)
        self.v = nn.Linear(h, kv, bias=cfg.qkv_bias)
        self.o = nn.Linear(h, h, bias=cfg.linear_bias)
        self.mlp_norm = RMSNorm(h, cfg.norm_eps)
        self.gate = nn.Linear(h, cfg.mlp_hidden, bias=cfg.linear_bias)
        self.up = nn.Linear(h, cfg.mlp_hidden, bias=cfg.linear_bias)
        self.down = nn.Linear(cfg.mlp_hidden, h, bias=cfg.linear_bias)

    def forward(self, x, cos, sin, attention_bias=None):
        cfg = self.cfg
        B, T, C = x.shape
        h = self.attn_norm(x)
        q = self.q(h).view(B, T, cfg.heads, cfg.head_dim).transpose(1, 2)
        k = self.k(h).view(B, T, cfg.kv_heads, cfg.head_dim).transpose(1, 2)
        v = self.v(h).view(B, T, cfg.kv_heads, cfg.head_dim).transpose(1, 2)
        if cfg.rope_in_float32:
            q = apply_rotary(q.float(), cos, sin).type_as(v)
            k = apply_rotary(k.float(), cos, sin).type_as(v)
        else:
            cos, sin = cos.to(v.dtype), sin.to(v.dtype)
            q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        if cfg.kv_heads != cfg.heads:
            k = k.repeat_interleave(cfg.heads // cfg.kv_heads, dim=1)
            v = v.repeat_interleave(cfg.heads // cfg.kv_heads, dim=1)
        att = F.scaled_dot_product_attention(q, k, v, attn_mask=attention_bias, is_causal=False)
        x = x + self.o(att.transpose(1, 2).contiguous().view(B, T, C))
        h = self.mlp_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class NativeLM(nn.Module):
    """Token ids -> logits, for a LLaDA- or Dream-family checkpoint."""

    def __init__(self, cfg: NativeConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.hidden)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
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
        cfg = self.cfg
        if positions is None:
            positions = torch.arange(ids.shape[1], device=ids.device)[None]
        x = self.embed(ids)
        if cfg.scale_embeddings:
            x = x * (cfg.hidden ** 0.5)
        cos, sin = rotary_tables(cfg, positions)
        for block in self.blocks:
            x = block(x, cos, sin, attention_bias)
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


def checkpoint_name(family: str, name: str) -> str:
    """Our parameter name (``blocks.3.q.weight``) -> the checkpoint's."""
    module, _, leaf = name.rpartition(".")
    parts = module.split(".")
    if parts[0] == "blocks":
        key, i = "blocks.{i}." + ".".join(parts[2:]), parts[1]
        return CHECKPOINT_NAMES[family][key].format(i=i) + "." + leaf
    return CHECKPOINT_NAMES[family][module] + "." + leaf


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
