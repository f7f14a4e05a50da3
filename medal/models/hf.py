"""Real diffusion LLMs behind the one model interface.

Specs (see :func:`parse_spec`)::

    llada:<hub id or local dir>[@revision]   LLaDA-8B-Instruct, LLaDA-1.5, LLaDA-8B-Base
    dream:<hub id or local dir>[@revision]   Dream-v0-Instruct-7B, Dream-Coder, DiffuCoder
    hf:<hub id or local dir>[@revision]      the family named by the checkpoint's config.json
    mlm:<hub id or local dir>[@revision]     any AutoModelForMaskedLM checkpoint (BERT-style)
    llada-8b-instruct, llada-1.5, dream-7b-instruct   shortcuts for the official hub ids

LLaDA, LLaDA-MoE and Dream run on MEDAL's own model code (:mod:`medal.models.native`, the
default) or, with ``implementation="remote"``, on the checkpoint's own code through
``transformers`` (opt-in). The family is read from ``config.json`` (:func:`detect_family`);
block-causal and uniform-noise families are refused there, with the reason.

What differs between the families, and where this module handles it:

* **Mask and end tokens.** Each family names its special tokens once, below. The ids the
  checkpoint declares (config.json, generation_config.json, the tokenizer) come first
  (:meth:`HFDiffusionLM._resolve_mask_id`); otherwise the ids are
  looked up in the checkpoint's tokenizer by token text (so a fine-tune with a moved
  vocabulary still works) and fall back to the official ids. Answers are padded with EOS
  after they end, and instruct models close the turn first (LLaDA ``<|eot_id|>``, Dream
  ``<|im_end|>``): :attr:`HFDiffusionLM.end_ids` lists them; text after the first one is
  padding, and :meth:`~HFDiffusionLM.decode` stops there.
* **Logit alignment.** LLaDA and masked LMs predict slot i at position i. Dream was adapted
  from an autoregressive model and predicts slot i at position i-1; :meth:`DreamLM.logits`
  shifts its output right by one, exactly as Dream's own sampler does, so everything above
  this layer sees per-slot logits.
* **The mask token is never a prediction**: its logit is set to -inf. A slot "filled" with
  the mask token would stay masked, and a deterministic decoder would try it forever.
* **Remote code.** LLaDA and Dream ship their model code with the weights;
  :func:`from_pretrained` -- the only function here that loads through transformers --
  refuses it unless the user opted in (``--trust-remote-code``, ``trust_remote_code=True`` or
  ``MEDAL_TRUST_REMOTE_CODE=1``).
* **Precision and devices.** A CUDA GPU when there is one, in bfloat16; otherwise the CPU in
  float32. Both can be overridden. Before loading, the memory the weights need is compared
  with what the device has free, so a too-small GPU gives a message, not a crash.

``transformers`` is imported only when a checkpoint is loaded (it takes seconds).
"""
from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path

import torch

from ..errors import InputError, ModelLoadError
from ..memory import available_memory, is_out_of_memory
from .base import DiffusionLM, check_finite

# ---------------------------------------------------------------------- special tokens
# Every special id, named once: (token text, id in the official checkpoints).

LLADA_MASK_TOKEN, LLADA_MASK_ID = "<|mdm_mask|>", 126336  # every masked slot holds it
LLADA_EOS_TOKEN, LLADA_EOS_ID = "<|endoftext|>", 126081   # pads the answer after it ends
LLADA_EOT_TOKEN, LLADA_EOT_ID = "<|eot_id|>", 126348      # ends the assistant's turn

DREAM_MASK_TOKEN, DREAM_MASK_ID = "<|mask|>", 151666
DREAM_EOS_TOKEN, DREAM_EOS_ID = "<|endoftext|>", 151643   # pads the answer after it ends
DREAM_IM_END_TOKEN, DREAM_IM_END_ID = "<|im_end|>", 151645  # ends the assistant's turn

#: the texts a family's mask token goes by, tried in this order when neither config.json
#: nor the tokenizer declares the mask id (LLaDA-MoE and LLaDA 2 name theirs like Dream's)
MASK_TEXTS = {"llada": (LLADA_MASK_TOKEN, DREAM_MASK_TOKEN), "dream": (DREAM_MASK_TOKEN,)}

#: Dream's forward reads this string as "no padding: every position attends everywhere"
#: (what its own sampler passes for unpadded batches).
DREAM_FULL_ATTENTION = "full"

# ---------------------------------------------------------------------- specs and options

#: spec prefixes: a family, or ``hf:`` (the family read from the checkpoint's config.json)
FAMILIES = ("llada", "dream", "mlm", "hf")
#: families MEDAL has its own model code for (medal/models/native.py)
NATIVE_FAMILIES = ("llada", "llada-moe", "dream")
#: how the network runs: MEDAL's own code, or the checkpoint's (opt-in remote code)
IMPLEMENTATIONS = ("native", "remote")
IMPLEMENTATION_ENV = "MEDAL_IMPLEMENTATION"
SHORTCUTS = {
    "llada-8b-instruct": "llada:GSAI-ML/LLaDA-8B-Instruct",
    "llada-1.5": "llada:GSAI-ML/LLaDA-1.5",
    "dream-7b-instruct": "dream:Dream-org/Dream-v0-Instruct-7B",
}
TRUST_REMOTE_CODE_ENV = "MEDAL_TRUST_REMOTE_CODE"
DEVICES = ("auto", "cpu", "cuda")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DTYPE_CHOICES = ("auto",) + tuple(DTYPES)

GB = 1e9
#: Memory estimate: the weights times this factor. A search step (K2 = 5 children of a
#: chat prompt with the two-shot decomposition plus 256 slots; logits for the answer rows
#: only) measured 1.06x the weights for LLaDA-8B and 1.08x for Dream-7B (meta device,
#: through the adapter); 1.15 keeps a margin of 7% of the weights above the larger.
#: LLaDA-8B in bfloat16: 16.0 GB x 1.15 = 18.4 GB. --skip-memory-check skips the check.
MEMORY_FACTOR = 1.15


@dataclass(frozen=True)
class ModelSource:
    """Where a checkpoint comes from: a family, a hub id or local directory, a revision."""
    family: str
    target: str
    revision: str | None = None
    local: bool = False

    @property
    def name(self) -> str:
        return f"{self.family}:{self.target}" + (f"@{self.revision}" if self.revision else "")


def choose_implementation(option: str | None = None) -> str:
    """``native`` (default) or ``remote``: the option, else ``MEDAL_IMPLEMENTATION``."""
    value = (option or os.environ.get(IMPLEMENTATION_ENV, "") or "native").strip().lower()
    if value not in IMPLEMENTATIONS:
        raise InputError(f"implementation must be one of {', '.join(IMPLEMENTATIONS)}; got "
                         f"{value!r} (from {'the option' if option else IMPLEMENTATION_ENV})")
    return value


# ---------------------------------------------------------------------- families

def _config_text(config: dict) -> str:
    """model_type, architectures and auto_map of a config, as one lower-case string."""
    parts = [str(config.get("model_type") or "")]
    parts += [str(a) for a in config.get("architectures") or []]
    parts += [str(v) for v in (config.get("auto_map") or {}).values()]
    return " ".join(parts).lower()


def _declares_uniform_noise(config: dict) -> bool:
    for key, value in config.items():
        if any(w in key.lower() for w in ("noise", "diffusion_type", "corruption")):
            if "uniform" in str(value).lower():
                return True
    return "diffusiongemma" in _config_text(config).replace("_", "").replace("-", "")


def detect_family(config: dict, where: str = "config.json") -> str | None:
    """The family a checkpoint's config.json declares (model_type, architectures,
    auto_map): ``llada``, ``llada-moe``, ``dream``, or None when it names none of them.
    Families MEDAL cannot search are refused here, with the reason."""
    text = _config_text(config)
    if _declares_uniform_noise(config):
        raise ModelLoadError(
            f"{where} declares a uniform-noise diffusion model: its tokens are corrupted "
            "into other tokens, not masked, so there are no masked slots to unmask. MEDAL's "
            "actions unmask slots, so it cannot search this model; use a masked diffusion "
            "model (LLaDA, Dream)")
    if "llada2" in text or "sdar" in text:
        raise ModelLoadError(
            f"{where} declares a block-causal diffusion model ({config.get('model_type')}): "
            "it denoises one block at a time, attending causally to the blocks before, with "
            "block-aligned positions. MEDAL's search assumes one bidirectional pass over the "
            "whole answer and has no block-causal model code yet; use LLaDA-8B, LLaDA-1.5 "
            "or Dream")
    if "lladamoe" in text or "llada_moe" in text:
        return "llada-moe"
    if "llada" in text:
        return "llada"
    if "dream" in text:
        return "dream"
    return None


#: tokens whose meaning MEDAL's engine cannot honour: a checkpoint that writes them expects
#: its own decoder to act on them (DreamOn's <|expand|> turns one mask into two, <|delete|>
#: removes a slot: a canvas that grows and shrinks, where MEDAL's has fixed slots)
EDIT_TOKENS = ("<|expand|>", "<|delete|>")
EDIT_WORDS = ("expand", "delete", "insert")
#: generation settings of a variable-length canvas (DreamOn's generation_config)
CANVAS_KEYS = ("expand_budget", "max_expansion", "delete_token_id", "expand_token_id")


def _tokenizer_specials(directory: Path) -> set[str]:
    """The added/special tokens a local tokenizer declares in its small JSON files
    (transformers 4.x saves every added token in tokenizer_config.json's
    added_tokens_decoder; 5.x keeps a fast tokenizer's in tokenizer.json only)."""
    out: set[str] = set()
    for name in ("tokenizer_config.json", "special_tokens_map.json", "added_tokens.json"):
        data = read_json(directory / name, missing_ok=True) or {}
        for entry in data.get("added_tokens") or []:
            if isinstance(entry, dict):
                out.add(str(entry.get("content")))
        for entry in (data.get("added_tokens_decoder") or {}).values():
            if isinstance(entry, dict):
                out.add(str(entry.get("content")))
        if name == "added_tokens.json":
            out.update(str(k) for k in data)
        for key, value in data.items():
            if key.endswith("_token") and isinstance(value, str):
                out.add(value)
            elif key == "additional_special_tokens" and isinstance(value, list):
                out.update(str(v.get("content") if isinstance(v, dict) else v) for v in value)
    return out


def refuse_what_the_engine_cannot_honour(config: dict | None, directory: Path | None,
                                         name: str) -> None:
    """A checkpoint whose files name tokens or a canvas MEDAL's engine cannot honour is
    refused with the reason, as block-causal and uniform-noise models are: DreamOn (Dream's
    network, but <|expand|>/<|delete|> tokens that grow and shrink the canvas) would
    otherwise run silently as plain Dream, its edit tokens written as answer text."""
    found = []
    generation = {}
    if directory is not None:
        generation = read_json(directory / "generation_config.json", missing_ok=True) or {}
    for where, data in (("config.json", config or {}), ("generation_config.json", generation)):
        if not isinstance(data, dict):
            continue
        for key in data:
            k = key.lower()
            if k in CANVAS_KEYS or (k.endswith("token_id") and any(w in k for w in EDIT_WORDS)):
                found.append(f"{where} sets {key}")
    if directory is not None:
        specials = _tokenizer_specials(directory)
        fast = directory / "tokenizer.json"   # megabytes: searched as bytes, not parsed
        raw = fast.read_bytes() if fast.is_file() else b""
        found += [f"the tokenizer has {t}" for t in EDIT_TOKENS
                  if t in specials or json.dumps(t).encode() in raw]
    if found:
        raise ModelLoadError(
            f"{name} is a variable-length (DreamOn-style) model, which MEDAL cannot run",
            fix="use a fixed-canvas masked diffusion model (LLaDA, LLaDA-1.5, Dream, "
                "Dream-Coder)",
            details=f"{'; '.join(found)}. Its decoder grows and shrinks the answer with edit "
                    "tokens (expand one mask into two, delete a slot); MEDAL searches and "
                    "decodes a fixed number of answer slots, so it would write those tokens "
                    "as answer text.")


def resolve_family(prefix: str, config: dict | None, where: str = "config.json") -> str:
    """The adapter family: the one config.json declares; the spec's prefix where the
    config names none (an override for unknown configs). A prefix that contradicts the
    config is an error: the weights would be read as the wrong network."""
    detected = detect_family(config, where) if config else None
    if prefix == "hf":
        if detected is None:
            raise ModelLoadError(
                f"{where} names no family MEDAL knows (model_type "
                f"{(config or {}).get('model_type')!r}); say which it is: llada:, dream: or "
                "mlm: (a BERT-style masked LM)")
        return detected
    if detected is None or detected == prefix or (prefix, detected) == ("llada", "llada-moe"):
        return detected or prefix
    raise ModelLoadError(f"the spec says {prefix}:, but {where} declares a {detected} model "
                         f"(model_type {config.get('model_type')!r}); use {detected.split('-')[0]}:"
                         " or hf: (the family from the config)")


def is_hf_spec(spec: str) -> bool:
    """True for a shortcut or a ``llada:``/``dream:``/``mlm:``/``hf:`` spec."""
    family, sep, _ = spec.partition(":")
    return spec.split("@", 1)[0] in SHORTCUTS or (bool(sep) and family in FAMILIES)


def parse_spec(spec: str, revision: str | None = None) -> ModelSource:
    """``family:target[@revision]`` or a shortcut -> :class:`ModelSource`.

    The target is a local directory if one exists at that path, or if it looks like a
    path (starts with ``/``, ``.`` or ``~``); otherwise a hub id (``org/name``). A
    ``@revision`` suffix pins a hub commit, branch or tag (not split off a path that exists).
    """
    spec = spec.strip()
    head, _, pinned = spec.partition("@")
    if head in SHORTCUTS:
        spec = SHORTCUTS[head] + (f"@{pinned}" if pinned else "")
    family, sep, target = spec.partition(":")
    if not sep or family not in FAMILIES or not target.strip():
        raise ModelLoadError(f"unknown model spec {spec!r}; use llada:<hub id or dir>, "
                             "dream:<hub id or dir>, mlm:<hub id or dir>, hf:<hub id or dir> "
                             "(family from its config.json; all optionally "
                             f"@<revision>) or a shortcut: {', '.join(SHORTCUTS)}")
    target = target.strip()
    if "@" in target and not Path(target).expanduser().exists():
        target, pinned = target.rsplit("@", 1)
        if not pinned:
            raise ModelLoadError(f"{spec!r} ends in '@' with no revision after it")
        if revision and revision != pinned:
            raise ModelLoadError(f"two different revisions: {pinned!r} in the spec and "
                                 f"{revision!r} from --revision; give one")
        revision = pinned
    path = Path(target).expanduser()
    local = path.exists() or target.startswith(("/", ".", "~"))
    if local:
        if revision:
            raise ModelLoadError(f"a revision ({revision!r}) pins a hub checkpoint; "
                                 f"{target} is a local directory -- drop the revision")
        target = str(path)
    return ModelSource(family, target, revision or None, local)


def remote_code_opted_in(option: bool | None = None) -> bool:
    """True if the user opted in to running checkpoint code: the ``trust_remote_code``
    option, or the environment variable ``MEDAL_TRUST_REMOTE_CODE=1``."""
    env = os.environ.get(TRUST_REMOTE_CODE_ENV, "").strip().lower()
    return option is True or env in ("1", "true", "yes", "on")


def choose_device(device: str | None = "auto") -> torch.device:
    """``auto``: CUDA when torch sees a GPU, else the CPU."""
    device = device or "auto"
    if device not in DEVICES:
        raise InputError(f"device must be one of {', '.join(DEVICES)}; got {device!r}")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError(f"--device cuda, but torch sees no CUDA GPU (torch "
                             f"{torch.__version__}; torch.cuda.is_available() is False). Use "
                             "--device cpu, or install a CUDA build of torch on a GPU machine")
    return torch.device(device)


def choose_dtype(dtype: str | None, device: torch.device) -> torch.dtype:
    """``auto``: bfloat16 on a GPU (float16 if it lacks bfloat16), float32 on the CPU."""
    dtype = dtype or "auto"
    if dtype not in DTYPE_CHOICES:
        raise InputError(f"dtype must be one of {', '.join(DTYPE_CHOICES)}; got {dtype!r}")
    if dtype != "auto":
        return DTYPES[dtype]
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32


# ---------------------------------------------------------------------- the one loading door

def remote_code_refusal(source: ModelSource, lead: str = "") -> ModelLoadError:
    where = (f"in {source.target}" if source.local else
             f"on https://huggingface.co/{source.target} under 'Files'")
    return ModelLoadError(
        f"{lead}{source.name} needs remote code, which MEDAL runs only if you opt in",
        fix=f"pass --trust-remote-code (CLI), trust_remote_code=True (load_model), or set "
            f"{TRUST_REMOTE_CODE_ENV}=1 -- after reading the code ({where}) and pinning a "
            "revision (spec@<commit> or --revision)",
        details="The checkpoint ships its own Python model code (modeling_*.py), which "
                "transformers would import and run on this machine with your permissions; "
                "a pinned revision cannot change under you.")


def from_pretrained(auto_class, source: ModelSource, *, needs_remote_code: bool,
                    trust_remote_code: bool | None, **kwargs):
    """Every checkpoint load in MEDAL goes through here: ``auto_class.from_pretrained`` with
    ``trust_remote_code`` set from the user's opt-in and nothing else.

    Refuses a family that needs remote code before anything is read when the user has not
    opted in; turns transformers' errors into :class:`ModelLoadError` with the fix."""
    if "trust_remote_code" in kwargs:
        raise TypeError("trust_remote_code is decided here, from the user's opt-in only")
    opted_in = remote_code_opted_in(trust_remote_code)
    if needs_remote_code and not opted_in:
        raise remote_code_refusal(source)
    if source.revision:
        kwargs["revision"] = source.revision
    try:
        return auto_class.from_pretrained(source.target, trust_remote_code=opted_in, **kwargs)
    except ModelLoadError:
        raise
    except OSError as exc:
        raise ModelLoadError(_missing_files_message(source, exc)) from exc
    except Exception as exc:  # remote code or a config this transformers cannot read
        if is_out_of_memory(exc):                     # torch.cuda.OutOfMemoryError included
            device = torch.device("cuda" if isinstance(exc, torch.cuda.OutOfMemoryError)
                                  else "cpu")
            raise out_of_memory(source.name, exc, device) from exc
        text = str(exc)
        if "trust_remote_code" in text:
            raise remote_code_refusal(source, lead="custom code that transformers would "
                                                   "need to run: ") from exc
        raise ModelLoadError(
            f"could not load {source.name}'s own code with transformers "
            f"{_transformers_version()}",
            fix="for LLaDA, LLaDA-MoE and Dream use MEDAL's native code (--implementation "
                "native, the default), which runs on any transformers; otherwise install "
                "transformers 4.x (pip install 'transformers>=4.50,<5'; docs/REAL_MODELS.md)",
            details=f"transformers said: {type(exc).__name__}: {text[:400]}\n"
                    "A checkpoint's own code is written for the transformers of its day "
                    "(LLaDA's, LLaDA-MoE's and Dream's need 4.x; tested: 4.57.6, and they "
                    "fail on 5.x).") from exc


def _transformers_version() -> str:
    import transformers
    return transformers.__version__


def _offline() -> bool:
    try:
        import huggingface_hub
        return bool(huggingface_hub.is_offline_mode())
    except (ImportError, AttributeError):
        return os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0")


def _missing_files_message(source: ModelSource, exc: Exception, who: str = "transformers") -> str:
    said = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
    if source.local:
        return (f"could not load {source.name}: files are missing or unreadable in "
                f"{source.target} (transformers said: {said}). A checkpoint directory needs "
                "config.json, the weights (*.safetensors) and the tokenizer files; download "
                "it completely, e.g. `hf download <hub id> --local-dir DIR`")
    why = ("offline mode is on (HF_HUB_OFFLINE=1)" if _offline() else
           "the Hugging Face hub could not be reached, or the id is wrong")
    return (f"could not load {source.name}: its files are not in the local Hugging Face "
            f"cache and {why} ({who} said: {said}). Download them once on a machine "
            f"with internet: `hf download {source.target}"
            + (f" --revision {source.revision}" if source.revision else "") + "` (older "
            "huggingface_hub: `huggingface-cli download ...`), then run with HF_HUB_OFFLINE=1; "
            f"or copy the checkpoint folder here and use {source.family}:/path/to/folder")


#: seconds to wait for the hub's address before calling it unreachable
HUB_PROBE_SECONDS = 5.0


def check_hub_reachable(source: ModelSource) -> None:
    """A hub id whose files are not in the local cache needs the hub: find out in seconds
    whether its host resolves, instead of letting the download retry for a minute with
    warnings on the terminal. Cached files, offline mode and local folders skip this."""
    try:
        from huggingface_hub import constants, try_to_load_from_cache
        cached = try_to_load_from_cache(source.target, "config.json", revision=source.revision)
        endpoint = constants.ENDPOINT
    except Exception:  # an old or odd huggingface_hub: let transformers decide
        return
    if isinstance(cached, str):
        return
    if _offline():  # not cached and no hub: say so now, before any other check
        raise ModelLoadError(_missing_files_message(
            source, OSError("config.json is not in the cache"), who="the cache look-up"))
    import concurrent.futures
    import socket
    from urllib.parse import urlparse
    host = urlparse(endpoint).hostname or "huggingface.co"
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        pool.submit(socket.getaddrinfo, host, 443).result(timeout=HUB_PROBE_SECONDS)
    except Exception as exc:
        raise ModelLoadError(_missing_files_message(
            source, OSError(f"{host} could not be resolved ({type(exc).__name__})"),
            who="a look-up of the hub's address")) from None
    finally:
        pool.shutdown(wait=False)


def refuse_pickled_weights(directory: Path, name: str) -> None:
    """Weights only as ``pytorch_model*.bin`` are refused (issue 21): a .bin file is a
    Python pickle, and loading one can run code; safetensors files hold tensors only."""
    if any(directory.glob("pytorch_model*.bin")) and not any(directory.glob("*.safetensors")):
        raise ModelLoadError(f"the checkpoint of {name} in {directory} has its weights only "
                             "as pytorch_model*.bin (a Python pickle, which can run code when "
                             "loaded); MEDAL reads safetensors only. Download the safetensors "
                             "files of the model, or convert the weights once where you trust "
                             "them (e.g. `safetensors.torch.save_file(torch.load(...))`)")


def check_local_files(directory: Path, name: str) -> None:
    """A local checkpoint directory has a config, complete weights and a tokenizer."""
    if not directory.is_dir():
        raise ModelLoadError(f"no checkpoint directory at {directory} (model {name}); give "
                             "the folder that holds config.json and the *.safetensors files")
    refuse_pickled_weights(directory, name)
    missing = []
    if not (directory / "config.json").is_file():
        missing.append("config.json")
    index = directory / "model.safetensors.index.json"
    if index.is_file():
        shards = sorted(set(json.loads(index.read_text()).get("weight_map", {}).values()))
        missing += [s for s in shards if not (directory / s).is_file()]
    elif not any(directory.glob("*.safetensors")):
        missing.append("the weights (*.safetensors)")
    tokenizer_files = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "tokenizer.model")
    if not any((directory / f).is_file() for f in tokenizer_files):
        missing.append("the tokenizer (tokenizer.json / tokenizer_config.json)")
    if missing:
        raise ModelLoadError(f"the checkpoint in {directory} is incomplete: missing "
                             f"{', '.join(missing)}. Download it completely, e.g. "
                             "`hf download <hub id> --local-dir DIR`")


# ---------------------------------------------------------------------- memory

def checkpoint_directory(source: ModelSource) -> Path | None:
    """The local folder holding the checkpoint, if it is on disk (hub cache included)."""
    if source.local:
        return Path(source.target)
    try:
        from huggingface_hub import try_to_load_from_cache
        hit = try_to_load_from_cache(source.target, "config.json", revision=source.revision)
    except Exception:  # an odd id or cache layout: no estimate, the load says the rest
        return None
    return Path(hit).parent if isinstance(hit, str) else None


def count_parameters(directory: Path) -> int | None:
    """Parameters in the safetensors files of ``directory``, read from their headers only."""
    total = 0
    files = sorted(directory.glob("*.safetensors"))
    for f in files:
        try:
            with open(f, "rb") as fh:
                (n,) = struct.unpack("<Q", fh.read(8))
                header = json.loads(fh.read(n))
        except (OSError, ValueError, struct.error):
            return None
        total += sum(math.prod(t["shape"]) for k, t in header.items() if k != "__metadata__")
    return total if files else None


def memory_needed(parameters: float, dtype: torch.dtype) -> float:
    """Bytes to hold the weights in ``dtype`` and run one search step (MEMORY_FACTOR)."""
    return parameters * (torch.finfo(dtype).bits // 8) * MEMORY_FACTOR


def memory_message(name: str, parameters: float, dtype: torch.dtype, need: float,
                   free: float, device: torch.device) -> ModelLoadError:
    """The refusal: what failed and what to do on its first line, the arithmetic after."""
    width = torch.finfo(dtype).bits // 8
    dtype_name = str(dtype).replace("torch.", "")
    if device.type == "cuda":
        have = f"the GPU has {free / GB:.1f} GB free"
        advice = ("use a GPU with more free memory (24 GB+ for an 8B model in bfloat16) or "
                  "free this one" + (", or --dtype bfloat16" if width > 2 else ""))
    else:
        have = (f"this process can take {free / GB:.1f} GB more (the least of the machine's "
                "free memory, its cgroup's and ulimit -v's)")
        advice = "use a CUDA GPU (--device cuda)" + (
            ", or --dtype bfloat16 to halve the weights" if width > 2 else "")
    return ModelLoadError(
        f"not enough memory for {name}: it needs about {need / GB:.1f} GB and {have}",
        fix=f"{advice}; if you know it fits, --skip-memory-check (memory_check=False) loads "
            "it anyway",
        details=f"{parameters / 1e9:.2f} B parameters x {width} bytes in {dtype_name} = "
                f"{parameters * width / GB:.1f} GB of weights, plus activations "
                f"(x{MEMORY_FACTOR:g} in all)")


def check_memory(source: ModelSource, typical_parameters: float | None, device: torch.device,
                 dtype: torch.dtype) -> None:
    directory = checkpoint_directory(source)
    parameters = count_parameters(directory) if directory else None
    parameters = parameters or typical_parameters
    if not parameters:
        return
    need = memory_needed(parameters, dtype)
    free = available_memory(device)
    if free is not None and need > free:
        raise memory_message(source.name, parameters, dtype, need, free, device)


def out_of_memory(name: str, exc: BaseException, device: torch.device) -> ModelLoadError:
    """A load that the guard let through and that still ran out of memory (another process
    took memory meanwhile, a limit the guard cannot read, an estimate too low)."""
    where = "the GPU" if device.type == "cuda" else "this machine or process"
    return ModelLoadError(
        f"ran out of memory while loading {name} on {where}",
        fix=("free the GPU, use a larger one, or --device cpu" if device.type == "cuda" else
             "use a CUDA GPU (--device cuda), --dtype bfloat16 to halve the weights, or "
             "raise this process's memory limit (ulimit -v, the container's limit)"),
        details=f"{type(exc).__name__}: {str(exc)[:300]}")


def _dtype_keyword() -> str:
    """transformers 4.56 renamed ``torch_dtype`` to ``dtype``."""
    from packaging.version import Version
    return "dtype" if Version(_transformers_version()) >= Version("4.56") else "torch_dtype"


# ---------------------------------------------------------------------- adapters

def _placeholder(token_id: int) -> str:
    """What an id without a token shows as."""
    return f"<id {int(token_id)}>"


class HFDiffusionLM(DiffusionLM):
    """A checkpoint folder as a :class:`DiffusionLM`. Subclasses say how a family is loaded
    (:attr:`auto_class`, :attr:`needs_remote_code`, :attr:`native`), which tokens are
    special, and how its forward is called (:meth:`forward`)."""

    family: str = ""
    auto_class: str = "AutoModel"
    #: the checkpoint's own code is needed to run it through transformers
    needs_remote_code: bool = True
    #: MEDAL has its own model code for the family (medal/models/native.py)
    native: bool = False
    #: (token text, official id) of the mask token; None: the tokenizer's mask_token
    mask_token: tuple[str, int] | None = None
    #: (token text, official id) of the end tokens, EOS first
    end_tokens: tuple[tuple[str, int], ...] = ()
    #: parameter count for the memory estimate when the weights are not on disk yet
    typical_parameters: float | None = None
    default_gen_length = 256
    #: the model's outputs are shifted: position i predicts slot i+1 (Dream)
    shifted_logits = False
    #: with a chat template, ``tokenizer(text)`` adds the tokenizer's own special tokens
    #: on top of the template's (LLaDA's model card does; Dream's README tokenizes inside
    #: ``apply_chat_template``, which adds none)
    chat_adds_special_tokens = False

    #: Fast-dLLM's block KV cache (medal.models.native.BlockKVCache), opt-in and
    #: approximate: None (off), "prefix" or "dual" (:meth:`set_kv_cache`)
    kv_cache_mode: str | None = None
    kv_cache_refresh = "block"
    kv_cache = None
    last_token_passes: int | None = None

    def set_kv_cache(self, mode: str | None, refresh: str = "block") -> None:
        """Turn Fast-dLLM's block KV cache on ("prefix" or "dual") or off (None), for the
        native LLaDA and Dream code. APPROXIMATE (see BlockKVCache); each run starts it
        afresh for its block length and prompt. ``refresh="step"`` recomputes it at every
        forward (the exactness check; no saving)."""
        from .native import KV_CACHE_MODES
        if mode is not None and mode not in KV_CACHE_MODES:
            raise InputError(f"kv cache must be one of {', '.join(KV_CACHE_MODES)} or off, "
                             f"got {mode!r}")
        if mode is not None and (self.implementation != "native" or self.family == "llada-moe"):
            raise InputError(f"{self.name}: the KV cache is for MEDAL's native LLaDA and Dream "
                             "code; load with --implementation native, or leave it off")
        if refresh not in ("block", "step"):
            raise InputError(f"kv cache refresh must be 'block' or 'step', got {refresh!r}")
        self.kv_cache_mode, self.kv_cache_refresh, self.kv_cache = mode, refresh, None

    def start_kv_cache(self, block_length: int, prompt_length: int) -> None:
        """A fresh cache for a run (called by :class:`medal.engine.Run`); none when off."""
        from .native import BlockKVCache
        self.kv_cache = (BlockKVCache(self.kv_cache_mode, block_length, prompt_length,
                                      self.kv_cache_refresh) if self.kv_cache_mode else None)

    def __init__(self, net, tokenizer, source: ModelSource, *, device: torch.device,
                 dtype: torch.dtype, chat_template: bool | None = None,
                 config: dict | None = None, implementation: str = "remote",
                 mask_id: int | None = None, generation_config: dict | None = None):
        self.net = net.eval()
        self.tokenizer = tokenizer
        self.source = source
        self.name = source.name
        self.device = device
        self.dtype = dtype
        self.implementation = implementation
        if config is None:
            to_dict = getattr(getattr(net, "config", None), "to_dict", None)
            config = to_dict() if callable(to_dict) else {}
        self.config = config
        has_template = bool(getattr(tokenizer, "chat_template", None))
        if chat_template and not has_template:
            raise ModelLoadError(f"{source.name}: the tokenizer has no chat template; load "
                                 "without chat_template=True (the prompt is then used as is)")
        self.chat = has_template if chat_template is None else bool(chat_template)
        if implementation == "native":
            self._vocab = int(net.cfg.vocab_size)
        else:
            size = getattr(getattr(net, "config", None), "vocab_size", None)
            self._vocab = int(size) if size else len(tokenizer)
        self.mask_id = self._resolve_mask_id(mask_id, generation_config or {})
        self.eos_id, self._end_ids = self._resolve_end_ids(generation_config or {})
        self.max_positions = self._max_positions()
        if self.max_positions is not None:
            self.max_gen_length = self.max_positions - 1
            self.default_gen_length = min(self.default_gen_length, self.max_gen_length)
        self._texts: dict[int, str] = {}
        self._mask_text = tokenizer.decode([self.mask_id], skip_special_tokens=False).strip()
        #: ids from here up have no token in the tokenizer (Dream: 152064 logits, 151667
        #: tokens): never chosen (their logits are -inf), shown as ``<id N>``
        self.text_vocab = min(len(tokenizer), self.vocab_size)

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, source: ModelSource, *, trust_remote_code: bool | None = None,
             device: str | None = "auto", dtype: str | None = "auto",
             chat_template: bool | None = None, implementation: str = "remote",
             config: dict | None = None, mask_id: int | None = None,
             memory_check: bool = True) -> "HFDiffusionLM":
        native = implementation == "native"
        if native and not cls.native:
            raise ModelLoadError(f"{source.name}: MEDAL has no native code for the "
                                 f"{cls.family} family; use --implementation remote "
                                 "(with --trust-remote-code where the checkpoint ships code)")
        needs_code = cls.needs_remote_code and not native
        if needs_code and not remote_code_opted_in(trust_remote_code):
            raise remote_code_refusal(source)  # before touching any file
        if source.local:
            check_local_files(Path(source.target), source.name)
        else:
            check_hub_reachable(source)
        dev = choose_device(device)
        dt = choose_dtype(dtype, dev)
        if native and dt == torch.float16 and (dtype or "auto") == "auto":
            dt = torch.float32  # a GPU without bfloat16: float16 would overflow (below)
        if native and dt == torch.float16:
            raise ModelLoadError(
                f"{source.name}: float16 is not safe for {cls.family}: its activations "
                "overflow float16's range (65504) and the logits turn to NaN/inf. Use "
                "--dtype bfloat16 (GPUs from Ampere on, and CPUs) or --dtype float32")
        if native and source.local:
            from .native import weight_files
            weight_files(Path(source.target))  # safetensors only: say so before anything else
        if memory_check:
            check_memory(source, cls.typical_parameters, dev, dt)
        if native:
            from .native import load_native
            from .tokenizers import load_tokenizer
            directory = Path(source.target) if source.local else download_checkpoint(source)
            config = config if config is not None else read_json(directory / "config.json")
            tokenizer = load_tokenizer(directory)
            try:
                net = load_native(directory, cls.family, dev, dt, config)
            except Exception as exc:   # MemoryError, torch's (CUDA's too), safetensors' ENOMEM
                if not is_out_of_memory(exc):
                    raise
                raise out_of_memory(source.name, exc, dev) from exc
            generation = read_json(directory / "generation_config.json", missing_ok=True)
            return cls(net, tokenizer, source, device=dev, dtype=dt,
                       chat_template=chat_template, config=config, implementation="native",
                       mask_id=mask_id, generation_config=generation)
        import transformers
        tokenizer = from_pretrained(transformers.AutoTokenizer, source,
                                    needs_remote_code=needs_code,
                                    trust_remote_code=trust_remote_code)
        # safetensors only, from a folder or the hub: never a pickled pytorch_model.bin
        kwargs = {_dtype_keyword(): dt, "use_safetensors": True}
        if dev.type == "cuda":
            index = dev.index if dev.index is not None else torch.cuda.current_device()
            kwargs["device_map"] = {"": index}  # straight to the GPU, no CPU copy
        net = from_pretrained(getattr(transformers, cls.auto_class), source,
                              needs_remote_code=needs_code,
                              trust_remote_code=trust_remote_code, **kwargs)
        if dev.type != "cuda":
            try:
                net = net.to(dev)
            except Exception as exc:
                if not is_out_of_memory(exc):
                    raise
                raise out_of_memory(source.name, exc, dev) from exc
        generation = getattr(net, "generation_config", None)
        generation = generation.to_dict() if hasattr(generation, "to_dict") else None
        return cls(net, tokenizer, source, device=dev, dtype=dt, chat_template=chat_template,
                   config=config, implementation="remote", mask_id=mask_id,
                   generation_config=generation)

    # ------------------------------------------------------------------ special ids
    def _text_id(self, text: str) -> int | None:
        """The id of special token ``text`` in this tokenizer; None if it has no such token."""
        tok = self.tokenizer
        tid = tok.convert_tokens_to_ids(text)
        if tid is None or (tid == tok.unk_token_id and text != tok.unk_token):
            return None
        return int(tid)

    def _token_id(self, text: str, official: int | None) -> int | None:
        """The id of special token ``text``; the official id if the tokenizer lacks it."""
        tid = self._text_id(text)
        return official if tid is None else tid

    def _resolve_mask_id(self, override: int | None, generation: dict) -> int:
        """The mask id, in this order: ``override`` (--mask-id); the ids config.json,
        generation_config.json and the tokenizer declare (they must agree); the family's
        mask texts in the tokenizer; the family's official id."""
        where = f"{self.name}"
        if override is not None:
            mask = int(override)
        else:
            declared = {}
            for what, value in (("config.json mask_token_id", self.config.get("mask_token_id")),
                                ("generation_config.json mask_token_id",
                                 generation.get("mask_token_id")),
                                ("the tokenizer's mask_token",
                                 self.tokenizer.mask_token_id
                                 if getattr(self.tokenizer, "mask_token", None) else None)):
                if isinstance(value, int) and not isinstance(value, bool):
                    declared[what] = value
            if len(set(declared.values())) > 1:
                said = ", ".join(f"{w} = {v}" for w, v in declared.items())
                raise ModelLoadError(f"{where}: the checkpoint declares different mask ids "
                                     f"({said}). Fix the checkpoint's files, or say which is "
                                     "right with --mask-id N")
            mask = next(iter(declared.values()), None)
            if mask is None and self.mask_token is not None:
                texts = MASK_TEXTS.get(self.family.split("-")[0], (self.mask_token[0],))
                mask = next((i for i in map(self._text_id, texts) if i is not None),
                            self.mask_token[1])
            if mask is None:
                raise ModelLoadError(f"{where}: the tokenizer has no mask token, so this is "
                                     "not a masked language model; use a checkpoint trained "
                                     "with [MASK] (e.g. a BERT or RoBERTa masked LM), or give "
                                     "the mask id with --mask-id N")
        if not 0 <= mask < self.vocab_size:
            raise ModelLoadError(f"{where}: mask id {mask} is outside the model's "
                                 f"vocabulary of {self.vocab_size} tokens"
                                 + (" (from --mask-id)" if override is not None else ""))
        return mask

    def _resolve_end_ids(self, generation: dict) -> tuple[int | None, frozenset[int]]:
        """EOS first: config.json's eos_token_id, else the tokenizer's, else the family's
        EOS text, else its official id. The answer ends at any of: those, the ids
        generation_config.json declares, the family's end-of-turn token."""
        def ids(value):
            values = value if isinstance(value, (list, tuple)) else [value]
            return [int(v) for v in values if isinstance(v, int) and not isinstance(v, bool)]
        declared = ids(self.config.get("eos_token_id"))
        tok_eos = ids(getattr(self.tokenizer, "eos_token_id", None))
        texts = [self._token_id(text, official) for text, official in self.end_tokens]
        ends = declared + tok_eos + texts + ids(generation.get("eos_token_id"))
        ends += self._extra_end_ids()
        ends = [e for e in dict.fromkeys(ends) if e is not None and 0 <= e < self.vocab_size]
        return (ends[0] if ends else None), frozenset(ends)

    def _extra_end_ids(self) -> list[int]:
        return []

    def _max_positions(self) -> int | None:
        for key in ("max_sequence_length", "max_position_embeddings", "n_positions",
                    "max_seq_len"):
            value = self.config.get(key)
            if isinstance(value, int) and value > 0:
                return value
        return None

    # ------------------------------------------------------------------ the interface
    @property
    def vocab_size(self) -> int:
        return self._vocab

    @property
    def end_ids(self) -> frozenset[int]:
        return self._end_ids

    def format_prompt(self, prompt: str) -> str:
        """The text the model reads: the chat template around ``prompt`` for instruct
        models (ending with the assistant's header), the prompt itself otherwise."""
        if not self.chat:
            return prompt
        return self.tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=False)

    def encode_prompt(self, prompt: str, gen_length: int | None = None) -> list[int]:
        """Prompt -> ids (chat template for instruct models). With ``gen_length``, also
        checks that prompt + answer fit in the model's positions; without it, that at
        least one answer slot fits (:meth:`logits` checks every forward)."""
        self.check_prompt(prompt)
        # a plain prompt gets the tokenizer's special tokens ([CLS] ... [SEP] for BERT); a
        # chat template writes its own, and the tokenizer's are added on top only where
        # the model's own code does so (chat_adds_special_tokens)
        ids = self.tokenizer(self.format_prompt(prompt),
                             add_special_tokens=not self.chat or self.chat_adds_special_tokens
                             )["input_ids"]
        self.check_length(len(ids), gen_length or 1, gen_length is not None)
        return list(ids)

    def check_length(self, prompt_tokens: int, gen_length: int, explicit: bool = True) -> None:
        limit = self.max_positions
        if limit is None or prompt_tokens + gen_length <= limit:
            return
        if not explicit or prompt_tokens >= limit:
            raise InputError(f"the prompt is {prompt_tokens} tokens (with the chat template); "
                             f"{self.name} reads at most {limit} positions, which leaves no "
                             "room for an answer. Shorten the prompt, or turn the "
                             "decomposition off (--no-decompose)")
        raise InputError(f"the prompt ({prompt_tokens} tokens) plus gen_length {gen_length} "
                         f"is {prompt_tokens + gen_length} positions; {self.name} reads at "
                         f"most {limit}. Use --gen-length {limit - prompt_tokens} or less, or "
                         "shorten the prompt")

    @torch.inference_mode()
    def logits(self, ids: torch.Tensor, answer_length: int) -> torch.Tensor:
        """ids ``[B, T]`` -> float32 logits ``[B, answer_length, V]`` of the answer slots,
        on the model's device, row i predicting slot i.

        The output layer runs on the rows that predict answer slots only (the last
        ``answer_length`` positions; Dream: the ``answer_length`` positions before the
        last, its outputs being shifted by one). The prompt's logits -- a
        ``[B, T, V]`` tensor of 126k-152k columns -- are never made where the network's
        output layer is a module :meth:`_answer_rows_only` can see (LLaDA, Dream, masked
        LMs); otherwise they are made and sliced off."""
        ids = ids.to(self.device)
        T = ids.shape[1]
        if self.max_positions is not None and T > self.max_positions:
            raise InputError(f"the sequence is {T} tokens (prompt + answer slots); {self.name} "
                             f"reads at most {self.max_positions}. Lower --gen-length or "
                             "shorten the prompt")
        shifted = self.shifted_logits and T > answer_length
        rows = answer_length + 1 if shifted else answer_length
        try:
            self.last_token_passes = ids.numel()
            if self.implementation == "native" and self.kv_cache is not None:
                out, self.last_token_passes = self.kv_cache.logits(
                    self.net, ids, rows, self.mask_id, shifted=shifted)
            elif self.implementation == "native":
                out = self.net(ids, rows=rows)
            else:
                with self._answer_rows_only(rows):
                    out = self.forward(ids)[:, -rows:]
        except torch.cuda.OutOfMemoryError as exc:
            raise ModelLoadError(
                f"out of GPU memory running {self.name} on {ids.shape[0]} sequences of {T} "
                "tokens. Lower --k2 (children evaluated per forward) or --gen-length, or use "
                "a GPU with more memory") from exc
        check_finite(out, self.name)
        if shifted:               # slot i <- output at i-1
            out = out[:, :-1]
        elif self.shifted_logits:  # no prompt: slot 0 has no output before it; use its own
            out = torch.cat([out[:, :1], out[:, :-1]], dim=1)
        out = out.float()
        out[..., self.mask_id] = float("-inf")
        out[..., self.text_vocab:] = float("-inf")  # ids without a token: never chosen
        return out

    def _answer_rows_only(self, rows: int):
        """While active, the network's output layer (``get_output_embeddings()``, when it
        is a linear module the forward calls: LLaDA's ``ff_out``, Dream's ``lm_head``,
        BERT's decoder) sees only the last ``rows`` positions of its input."""
        import contextlib
        get = getattr(self.net, "get_output_embeddings", None)
        head = get() if callable(get) else None
        if not isinstance(head, torch.nn.Linear):
            return contextlib.nullcontext()

        def keep_last(module, args):
            return (args[0][:, -rows:],) + tuple(args[1:])

        @contextlib.contextmanager
        def hooked():
            handle = head.register_forward_pre_hook(keep_last)
            try:
                yield
            finally:
                handle.remove()
        return hooked()

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """The network's raw logits (in its own alignment and dtype)."""
        return self.net(input_ids=ids, attention_mask=torch.ones_like(ids)).logits

    def has_text(self, token_id: int) -> bool:
        """False for ids the model can output but the tokenizer has no token for."""
        return 0 <= int(token_id) < self.text_vocab

    def token_text(self, token_id: int) -> str:
        token_id = int(token_id)
        text = self._texts.get(token_id)
        if text is None:
            text = ""
            if self.has_text(token_id):
                text = self.tokenizer.decode([token_id], skip_special_tokens=False)
                if not text:
                    text = self.tokenizer.convert_ids_to_tokens(token_id) or ""
            text = text or _placeholder(token_id)
            self._texts[token_id] = text
        return text

    def _decode_runs(self, ids: list[int], skip_special_tokens: bool) -> str:
        """Runs of ids with text decoded as wholes (multi-byte characters and word pieces
        join); an id without text shown as ``<id N>`` between them."""
        parts, run = [], []
        for i in ids:
            if self.has_text(i):
                run.append(i)
                continue
            if run:
                parts.append(self.tokenizer.decode(run, skip_special_tokens=skip_special_tokens))
                run = []
            parts.append(_placeholder(i))
        if run:
            parts.append(self.tokenizer.decode(run, skip_special_tokens=skip_special_tokens))
        return "".join(parts)

    def answer_until_end(self, ids) -> list[int]:
        """The answer ids before the first end token (the rest is padding)."""
        out = []
        for i in (int(t) for t in ids):
            if i in self._end_ids:
                break
            out.append(i)
        return out

    def decode(self, ids) -> str:
        """Answer ids -> text, stopping at the first end token; special tokens dropped."""
        return self._decode_runs(self.answer_until_end(ids), skip_special_tokens=True).strip()

    def decode_masked(self, ids, mask: str = "_") -> str:
        """An answer in progress, decoded as a whole (so multi-byte characters and word
        pieces join properly), masked slots shown as ``mask``, stopping at an end token."""
        text = self._decode_runs(self.answer_until_end(ids), skip_special_tokens=False)
        return text.replace(self._mask_text, mask) if self._mask_text else text

    @property
    def checkpoint_dir(self) -> Path | None:
        """The checkpoint's folder (a local one, or the hub cache's snapshot), if known."""
        return checkpoint_directory(self.source)

    def describe(self) -> dict:
        return {**super().describe(), "family": self.family, "source": self.source.target,
                "revision": self.source.revision, "local": self.source.local,
                "end_tokens": {str(i): self.token_text(i) for i in sorted(self._end_ids)},
                "mask_token": self.token_text(self.mask_id),
                "dtype": str(self.dtype).replace("torch.", ""),
                "parameters": sum(p.numel() for p in self.net.parameters()),
                "vocab_size": self.vocab_size, "max_positions": self.max_positions,
                "chat_template": self.chat, "logits_shifted_by_model": self.shifted_logits,
                "implementation": self.implementation,
                "remote_code": self.needs_remote_code and self.implementation == "remote"}


class LLaDALM(HFDiffusionLM):
    """LLaDA-8B-Instruct / LLaDA-1.5 / LLaDA-8B-Base: per-slot logits, ``model(ids).logits``.
    The prompt is read as LLaDA's model card and generate.py read it:
    ``tokenizer(apply_chat_template(m, add_generation_prompt=True, tokenize=False))``."""
    family = "llada"
    chat_adds_special_tokens = True
    mask_token = (LLADA_MASK_TOKEN, LLADA_MASK_ID)
    end_tokens = ((LLADA_EOS_TOKEN, LLADA_EOS_ID), (LLADA_EOT_TOKEN, LLADA_EOT_ID))
    typical_parameters = 8.0e9
    native = True


class LLaDAMoELM(LLaDALM):
    """LLaDA-MoE (mixture-of-experts MLPs): per-slot logits like LLaDA; MEDAL's native code
    (default) or the checkpoint's own (opt-in). Its mask is named ``<|mask|>``."""
    family = "llada-moe"
    native = True
    typical_parameters = 7.0e9


class DreamLM(HFDiffusionLM):
    """Dream-v0-Instruct-7B: the output at position i-1 predicts slot i; shifted back here."""
    family = "dream"
    mask_token = (DREAM_MASK_TOKEN, DREAM_MASK_ID)
    end_tokens = ((DREAM_EOS_TOKEN, DREAM_EOS_ID), (DREAM_IM_END_TOKEN, DREAM_IM_END_ID))
    typical_parameters = 7.6e9
    shifted_logits = True
    native = True

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.net(input_ids=ids, attention_mask=DREAM_FULL_ATTENTION).logits


class MaskedLM(HFDiffusionLM):
    """Any ``AutoModelForMaskedLM`` checkpoint: a one-step masked diffusion model. The mask
    is the tokenizer's; the answer ends at its EOS or separator token ([SEP] for BERT)."""
    family = "mlm"
    auto_class = "AutoModelForMaskedLM"
    needs_remote_code = False
    default_gen_length = 32

    def _extra_end_ids(self) -> list[int]:
        return [self.tokenizer.eos_token_id, self.tokenizer.sep_token_id]


ADAPTERS = {"llada": LLaDALM, "llada-moe": LLaDAMoELM, "dream": DreamLM, "mlm": MaskedLM}


def read_json(path: Path, missing_ok: bool = False) -> dict | None:
    """A JSON file of the checkpoint as a dict; unreadable -> ModelLoadError."""
    path = Path(path)
    if missing_ok and not path.is_file():
        return None
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"{path} is missing or unreadable ({type(exc).__name__}: "
                             f"{str(exc)[:200]}); download the checkpoint again") from exc
    if not isinstance(value, dict):
        raise ModelLoadError(f"{path} is not a JSON object; download the checkpoint again")
    return value


#: the files native loading reads from a hub checkpoint (no *.py, no pickles)
NATIVE_FILES = ("*.json", "*.safetensors", "merges.txt", "vocab.json", "tokenizer*")


def _hub_config(source: ModelSource) -> dict:
    """config.json of a hub checkpoint (from the cache, or downloaded: a few kB)."""
    try:
        from huggingface_hub import hf_hub_download
        path = hf_hub_download(source.target, "config.json", revision=source.revision)
    except Exception as exc:  # offline, unreachable, unknown id
        raise ModelLoadError(_missing_files_message(source, exc, who="huggingface_hub")) from exc
    return read_json(Path(path))


def download_checkpoint(source: ModelSource) -> Path:
    """The folder of a hub checkpoint's files native loading needs (cache, or download)."""
    try:
        from huggingface_hub import snapshot_download
        return Path(snapshot_download(source.target, revision=source.revision,
                                      allow_patterns=list(NATIVE_FILES)))
    except Exception as exc:
        raise ModelLoadError(_missing_files_message(source, exc, who="huggingface_hub")) from exc


#: transformers releases affected by CVE-2026-4372 when the optional ``kernels`` package
#: is installed (fixed in 5.3.0): [first affected, first fixed)
KERNELS_CVE = ("CVE-2026-4372", "4.56", "5.3.0")


def security_warnings() -> list[str]:
    """Known vulnerabilities of this environment that a model load would touch."""
    import importlib.util

    from packaging.version import Version
    cve, first, fixed = KERNELS_CVE
    version = Version(_transformers_version())
    if Version(first) <= version < Version(fixed) and importlib.util.find_spec("kernels"):
        return [f"transformers {version} with the 'kernels' package installed is affected by "
                f"{cve} (fixed in transformers {fixed}): upgrade transformers "
                f"(pip install 'transformers>={fixed}') or uninstall kernels"]
    return []


def load_hf_model(spec: str, *, trust_remote_code: bool | None = None, device: str | None = "auto",
                  dtype: str | None = "auto", revision: str | None = None,
                  chat_template: bool | None = None, implementation: str | None = None,
                  mask_id: int | None = None, memory_check: bool = True) -> HFDiffusionLM:
    """Load a ``llada:``/``dream:``/``mlm:``/``hf:`` spec or a shortcut (see the module
    docstring). The family is the one config.json declares (the prefix where it declares
    none); LLaDA, LLaDA-MoE and Dream run on MEDAL's own code unless
    ``implementation="remote"`` (or ``MEDAL_IMPLEMENTATION=remote``)."""
    source = parse_spec(spec, revision)
    impl = choose_implementation(implementation)
    import warnings

    from ..errors import MedalWarning
    for message in security_warnings():
        warnings.warn(message, MedalWarning, stacklevel=2)
    if impl == "remote" and source.family != "mlm" and not remote_code_opted_in(
            trust_remote_code):
        raise remote_code_refusal(source)  # before touching any file
    if source.local:
        check_local_files(Path(source.target), source.name)
        config = read_json(Path(source.target) / "config.json")
        where = str(Path(source.target) / "config.json")
    else:
        check_hub_reachable(source)
        config = _hub_config(source)
        where = f"{source.target}'s config.json"
    family = resolve_family(source.family, config, where)
    refuse_what_the_engine_cannot_honour(config, Path(source.target) if source.local else None,
                                         source.name)
    cls = ADAPTERS[family]
    if impl == "native" and not cls.native:
        if family == "mlm":
            impl = "remote"  # transformers' own BERT-style classes: no checkpoint code runs
        elif not remote_code_opted_in(trust_remote_code):
            raise remote_code_refusal(source, lead=(
                f"a {family} model, which MEDAL has no native code for (it runs only on the "
                "checkpoint's own code): "))
        else:
            impl = "remote"
    return cls.load(source, trust_remote_code=trust_remote_code, device=device, dtype=dtype,
                    chat_template=chat_template, implementation=impl, config=config,
                    mask_id=mask_id, memory_check=memory_check)
