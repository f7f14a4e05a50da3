"""A checkpoint's files: a local folder checked complete and pickle-free; the hub; the cache."""
from __future__ import annotations

import json
import os
from pathlib import Path

from ...errors import ModelLoadError
from .spec import ModelSource


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


#: the first line of a Git-LFS pointer file: what a clone without Git LFS holds in place
#: of each large file
LFS_POINTER = b"version https://git-lfs.github.com/spec/"
#: safetensors' own limit on a header (its Rust reader refuses larger ones)
MAX_HEADER_BYTES = 100_000_000
DOWNLOAD_AGAIN = "download it again (e.g. `hf download <hub id> --local-dir DIR`)"


def read_safetensors_header(path: Path) -> dict:
    """The header of one ``.safetensors`` file (its tensors' names, dtypes, shapes and
    offsets), read and checked without reading the tensors. A damaged file is a
    :class:`ModelLoadError` of one line naming the file and the fix: a Git-LFS pointer
    (a clone made without Git LFS: ``git lfs pull``), a file cut short, or bytes that are
    not a safetensors file (the last two: download it again). Without this check they
    ended in OverflowError, MemoryError or SafetensorError tracebacks (issue 39)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            start = fh.read(len(LFS_POINTER))
            if start == LFS_POINTER:
                raise ModelLoadError(
                    f"{path} is a Git-LFS pointer, not weights (the checkpoint was cloned "
                    f"without Git LFS): run `git lfs pull` in {path.parent}, or download the "
                    "checkpoint with `hf download <hub id> --local-dir DIR`")
            if size < 8:
                raise ModelLoadError(f"{path} is {size} bytes, too short for a safetensors "
                                     f"file (cut short?): {DOWNLOAD_AGAIN}")
            n = int.from_bytes(start[:8], "little")
            if n > MAX_HEADER_BYTES or 8 + n > size:
                raise ModelLoadError(
                    f"{path} is not a safetensors file or was cut short (its first 8 bytes "
                    f"give a {n:,}-byte header; the file has {size:,} bytes): {DOWNLOAD_AGAIN}")
            fh.seek(8)
            raw = fh.read(n)
    except OSError as exc:
        raise ModelLoadError(f"{path} could not be read ({type(exc).__name__}: {exc}): check "
                             f"the file's permissions, or {DOWNLOAD_AGAIN}") from exc
    try:
        header = json.loads(raw.decode("utf-8"))
        ends = [int(t["data_offsets"][1]) for k, t in header.items() if k != "__metadata__"]
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        raise ModelLoadError(f"{path} is not a safetensors file (its header is not a "
                             f"tensor table: {type(exc).__name__}): {DOWNLOAD_AGAIN}") from None
    need = 8 + n + max(ends, default=0)
    if need > size:
        raise ModelLoadError(f"{path} was cut short: it has {size:,} of the {need:,} bytes its "
                             f"header lists: {DOWNLOAD_AGAIN}")
    if need < size:
        raise ModelLoadError(f"{path} is damaged: {size - need:,} bytes follow its last tensor "
                             f"({need:,} expected): {DOWNLOAD_AGAIN}")
    return header


def weights_files(directory: Path) -> list[Path]:
    """The ``.safetensors`` files of a checkpoint folder: the shards its index lists, else
    every ``*.safetensors`` file."""
    index = directory / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            shards = []
        return [directory / s for s in shards if (directory / s).is_file()]
    return sorted(directory.glob("*.safetensors"))


def check_weights_files(directory: Path) -> None:
    """Every weights file of ``directory`` is a whole safetensors file
    (:func:`read_safetensors_header`)."""
    for f in weights_files(directory):
        read_safetensors_header(f)


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
    check_weights_files(directory)


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
