"""The built-in tiny diffusion LM: a character-level bidirectional transformer.

Read like nanoGPT's model.py: a config dataclass and plain torch modules. The only
difference from a GPT is that attention is not causal -- every slot sees every other,
which is what a masked diffusion model needs.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import load_file

from ..errors import InputError, ModelLoadError
from .native import with_cache

PAD, MASK, EOS = "<pad>", "<mask>", "<eos>"
SPECIALS = (PAD, MASK, EOS)
# Whole-word tokens keep prompts short (the model is cheap to train on 2 cores); every
# other character is its own token. Encoding takes the longest match first.
WORDS = ("Use ", ", ", " to make ", " Solve in ", " steps.")
CHARS = " 0123456789+-*/()=,.:?abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


class CharTokenizer:
    """Text <-> ids: special tokens first, then a few whole words, then single characters."""

    def __init__(self, words: tuple[str, ...] = WORDS, chars: str = CHARS):
        self.vocab = list(SPECIALS) + list(words) + list(chars)
        self._ids = {t: i for i, t in enumerate(self.vocab)}
        self._words = sorted(words, key=len, reverse=True)
        self.pad_id, self.mask_id, self.eos_id = (self._ids[t] for t in SPECIALS)

    def __len__(self) -> int:
        return len(self.vocab)

    def encode(self, text: str) -> list[int]:
        unknown = sorted({c for c in text if c not in self._ids})
        if unknown:
            raise InputError(f"the built-in model cannot read the characters {''.join(unknown)!r}; "
                             f"use only letters, digits, spaces and {CHARS[11:21]!r}")
        ids, i = [], 0
        while i < len(text):
            word = next((w for w in self._words if text.startswith(w, i)), None)
            piece = word or text[i]
            ids.append(self._ids[piece])
            i += len(piece)
        return ids

    def decode(self, ids, stop_at_eos: bool = True) -> str:
        out = []
        for i in ids:
            i = int(i)
            if i == self.eos_id and stop_at_eos:
                break
            if i in (self.pad_id, self.eos_id):
                continue
            out.append("_" if i == self.mask_id else self.vocab[i])
        return "".join(out)

    def token_text(self, i: int) -> str:
        """What a token looks like on screen (special tokens by name)."""
        return self.vocab[int(i)]


@dataclass(frozen=True)
class TinyConfig:
    vocab_size: int
    prompt_length: int = 24   # prompt tokens; prompts are left-padded to this length
    answer_length: int = 28   # answer slots the model was trained to fill
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 192
    dropout: float = 0.0

    @property
    def block_size(self) -> int:
        return self.prompt_length + self.answer_length


class SelfAttention(nn.Module):
    def __init__(self, cfg: TinyConfig):
        super().__init__()
        self.n_head = cfg.n_head
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.dropout = cfg.dropout

    def forward(self, x, kv=None, keep=None):
        """``kv``: this layer's cached ((keys, values) before, (keys, values) after) ``x``'s
        span, ``[B, heads, n, head_dim]`` or None (Fast-dLLM's block cache,
        :class:`medal.models.native.BlockKVCache`); ``x`` attends to them and to itself.
        ``keep``: a list this layer's keys and values of ``x`` are appended to."""
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        k, v = with_cache(k, v, kv, keep)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=False,
                                           dropout_p=self.dropout if self.training else 0.0)
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):
    def __init__(self, cfg: TinyConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.n_embd)
        self.attn = SelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = nn.Sequential(nn.Linear(cfg.n_embd, 4 * cfg.n_embd), nn.GELU(),
                                 nn.Linear(4 * cfg.n_embd, cfg.n_embd))

    def forward(self, x, kv=None, keep=None):
        x = x + self.attn(self.ln1(x), kv=kv, keep=keep)
        return x + self.mlp(self.ln2(x))


class TinyDLM(nn.Module):
    """Token ids [B, T] -> logits [B, T, V]; position i's logits predict slot i."""

    def __init__(self, cfg: TinyConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.pos_emb = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, ids, last: int | None = None):
        """Logits of every position, or of the ``last`` positions only (the output layer,
        the largest matrix of a small model, runs on those rows alone)."""
        return self.forward_span(ids, rows=last)

    def forward_span(self, ids, positions: torch.Tensor | None = None, rows: int | None = None,
                     kv: list | None = None, keep: list | None = None) -> torch.Tensor:
        """:meth:`forward` of a span of the sequence (the native networks' interface, so
        that Fast-dLLM's block cache, :func:`medal.models.native.cached_logits`, serves
        these models too): ``ids`` are the span's tokens at ``positions`` (``[1, T]``;
        default 0..T-1), ``kv`` per layer the cached ((keys, values) before, (keys,
        values) after) the span attends to besides itself; ``keep`` (a list) receives per
        layer the span's own (keys, values); ``rows``: logits of the last ``rows``
        positions only. Without ``kv`` and ``positions`` it is the plain forward."""
        T = ids.shape[1]
        if positions is None:
            if T > self.cfg.block_size:
                raise InputError(f"sequence of {T} tokens exceeds the model's "
                                 f"{self.cfg.block_size}")
            positions = torch.arange(T, device=ids.device)
        x = self.tok_emb(ids) + self.pos_emb(positions)
        for i, block in enumerate(self.blocks):
            x = block(x, kv=kv[i] if kv is not None else None, keep=keep)
        if rows is not None:
            x = x[:, T - rows:]
        return self.head(self.ln_f(x))

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


def masked_diffusion_loss(model: TinyDLM, answers: torch.Tensor, prompts: torch.Tensor,
                          mask_id: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """The masked-diffusion objective on answer slots.

    For each example draw t ~ U(0, 1), mask each answer slot with probability t, and take
    the cross-entropy on the masked slots weighted by 1/t (the ELBO weight of LLaDA/MDLM),
    averaged over all answer slots of the batch.
    """
    B, L = answers.shape
    t = torch.rand(B, 1, generator=generator).clamp_min(1e-3)
    masked = torch.rand(B, L, generator=generator) < t
    noisy = torch.where(masked, torch.full_like(answers, mask_id), answers)
    logits = model(torch.cat([prompts, noisy], dim=1))[:, prompts.shape[1]:]
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), answers.reshape(-1),
                         reduction="none").view(B, L)
    return (ce * masked / t).sum() / (B * L)


# ------------------------------------------------------------------------ save / load

def save_checkpoint(model: TinyDLM, directory: str | Path, extra: dict) -> None:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    from safetensors.torch import save

    from ..files import write_atomic  # the whole file or the old one (issue 21)
    write_atomic(directory / "model.safetensors",
                 save({k: v.contiguous() for k, v in model.state_dict().items()}))
    meta = {"config": asdict(model.cfg), "vocab": CharTokenizer().vocab, **extra}
    write_atomic(directory / "config.json", json.dumps(meta, indent=2) + "\n")


def load_checkpoint(directory: str | Path) -> tuple[TinyDLM, dict]:
    """Load safetensors weights and the JSON config; never unpickles anything."""
    directory = Path(directory)
    cfg_path, w_path = directory / "config.json", directory / "model.safetensors"
    if not cfg_path.is_file() or not w_path.is_file():
        raise ModelLoadError(f"no built-in checkpoint in {directory} (need config.json and "
                             "model.safetensors); recreate it with `python -m medal train`")
    try:
        meta = json.loads(cfg_path.read_text())
        if meta["vocab"] != CharTokenizer().vocab:
            raise ModelLoadError(f"{cfg_path}: vocabulary differs from this version's tokenizer")
        model = TinyDLM(TinyConfig(**meta["config"]))
        model.load_state_dict(load_file(str(w_path)))
    except ModelLoadError:
        raise
    except Exception as exc:
        raise ModelLoadError(f"could not load the checkpoint in {directory}: {exc}") from None
    model.eval()
    return model, meta


def param_count_str(n: int) -> str:
    return f"{n / 1e6:.2f}M" if n >= 1e5 else str(n)


