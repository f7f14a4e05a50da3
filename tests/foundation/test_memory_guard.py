"""One memory guard on every load (issue 27 item 3).

The guard compared a load's need with the machine's free memory only: full-size LLaDA in
bfloat16 (18.4 GB) passed on a 23 GB machine, and under ``ulimit -v 6000000`` the load
ended in a raw ``MemoryError`` traceback. Now the guard reads what this process can take
(the machine's free memory, its cgroup's room and its address-space limit), and a load
that still runs out of memory ends in the project's error with its fix.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

import standins
from medal import memory
from medal.errors import ModelLoadError
from medal.models import hf, load_model

ROOT = Path(__file__).resolve().parents[2]

#: the command line under an address-space limit: ``room`` MiB above what the imports took
UNDER_LIMIT = """
import resource, sys
from medal import cli
from medal.memory import _vm_size
# the imports' own memory is taken before the limit: the guard is under test, not imports
import medal.engine, medal.models.hf, medal.models.native, medal.models.tokenizers  # noqa
import safetensors.torch, tokenizers, transformers  # noqa: F401
room = int(sys.argv[1]) * 2 ** 20
resource.setrlimit(resource.RLIMIT_AS, (int(_vm_size()) + room, resource.RLIM_INFINITY))
sys.exit(cli.main(["generate", "--model", sys.argv[2], "--prompt", "Hi", "--gen-length", "4",
                   "--dtype", "bfloat16"]))
"""


@pytest.fixture(scope="module")
def llada(tmp_path_factory):
    return standins.save_checkpoint(tmp_path_factory.mktemp("mem") / "llada", "llada",
                                    "native", seed=0)


def test_the_guard_counts_the_address_space_limit(llada):
    """The reproducer at small scale: bfloat16 weights (39 MB with activations) that the
    machine's free memory holds easily, under a limit that leaves 16 MiB: refused before
    a byte is read, the fix on the first line (before: the load started)."""
    need = hf.memory_needed(hf.count_parameters(llada), torch.bfloat16)
    free = memory.available_memory()
    assert free is not None and need < free      # the machine alone would let it load
    out = subprocess.run([sys.executable, "-c", UNDER_LIMIT, "16", f"llada:{llada}"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 2, out.stderr[-2000:]
    first = out.stderr.splitlines()[0]
    assert first.startswith("error: not enough memory for llada:") and "ulimit -v" in first
    assert first.endswith("--skip-memory-check (memory_check=False) loads it anyway")
    assert "Traceback" not in out.stderr


def test_available_memory_is_the_least_of_what_limits_it(monkeypatch):
    monkeypatch.setattr(memory, "_meminfo_available", lambda: 20e9)
    monkeypatch.setattr(memory, "_cgroup_room", lambda: None)
    monkeypatch.setattr(memory, "_address_space_room", lambda: None)
    assert memory.available_memory() == 20e9
    monkeypatch.setattr(memory, "_cgroup_room", lambda: 8e9)
    assert memory.available_memory() == 8e9
    monkeypatch.setattr(memory, "_address_space_room", lambda: 6e9)
    assert memory.available_memory() == 6e9
    assert memory.available_memory(torch.device("cpu")) == 6e9


@pytest.mark.parametrize("failure", [
    MemoryError(),
    RuntimeError("[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't "
                 "allocate memory: you tried to allocate 2147483648 bytes."),
    OSError(12, "Cannot allocate memory"),
], ids=["MemoryError", "torch-cpu-allocator", "ENOMEM"])
def test_a_load_that_still_runs_out_of_memory_is_a_clear_error(llada, monkeypatch, failure):
    """The guard let it through (another process took memory meanwhile, a limit it cannot
    read): native and remote loads end in the project's error, never a traceback."""
    import medal.models.native as native

    def fail(*args, **kwargs):
        raise failure
    monkeypatch.setattr(native, "load_native", fail)
    with pytest.raises(ModelLoadError) as info:
        load_model(f"llada:{llada}")
    first = str(info.value).splitlines()[0]
    assert first.startswith(f"ran out of memory while loading llada:{llada}")
    assert "--dtype bfloat16" in first and "ulimit -v" in first


def test_a_remote_load_out_of_memory_is_a_clear_error(llada, monkeypatch):
    import transformers

    def fail(*args, **kwargs):
        raise MemoryError()
    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", fail)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained",
                        lambda *a, **k: None)
    with pytest.raises(ModelLoadError, match="ran out of memory while loading"):
        load_model(f"llada:{llada}", implementation="remote", trust_remote_code=True)


def test_an_error_that_is_not_memory_is_not_called_one(llada, monkeypatch):
    import medal.models.native as native

    def fail(*args, **kwargs):
        raise RuntimeError("shape mismatch")
    monkeypatch.setattr(native, "load_native", fail)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        load_model(f"llada:{llada}")


# ---------------------------------------------------------------------- families it cannot run
# (issue 27 item 4; here beside the other load refusals that need a real checkpoint folder)

@pytest.fixture(scope="module")
def dream(tmp_path_factory):
    return standins.save_checkpoint(tmp_path_factory.mktemp("dreamon") / "dream", "dream",
                                    "native", seed=0)


def _dreamon(dream, tmp_path, tokens=True, generation=True):
    """A DreamOn-style checkpoint: Dream's network and files, plus its edit tokens in the
    tokenizer (ids 151667, 151668) and/or its canvas settings in generation_config.json."""
    import json
    import shutil
    out = tmp_path / "dreamon"
    shutil.copytree(dream, out)
    if tokens:   # where transformers 4.x saves added tokens, and where a fast tokenizer does
        edits = ((151667, "<|expand|>"), (151668, "<|delete|>"))
        entry = {"special": True, "lstrip": False, "rstrip": False, "normalized": False,
                 "single_word": False}
        f = out / "tokenizer_config.json"
        cfg = json.loads(f.read_text())
        if "added_tokens_decoder" in cfg:
            for i, text in edits:
                cfg["added_tokens_decoder"][str(i)] = {"content": text, **entry}
            f.write_text(json.dumps(cfg))
        f = out / "tokenizer.json"
        if f.is_file():
            tok = json.loads(f.read_text())
            tok["added_tokens"] += [{"id": i, "content": text, **entry} for i, text in edits]
            f.write_text(json.dumps(tok))
    if generation:
        f = out / "generation_config.json"
        gen = json.loads(f.read_text())
        gen.update(expand_token_id=151667, delete_token_id=151668, expand_budget=64)
        f.write_text(json.dumps(gen))
    return out


@pytest.mark.parametrize("tokens, generation", [(True, True), (True, False), (False, True)])
def test_dreamon_style_checkpoints_are_refused_with_the_reason(dream, tmp_path, tokens,
                                                               generation):
    """Before: a DreamOn-style checkpoint ran as plain Dream and answered 16 x id 151667
    (<|expand|>), text '', with no warning."""
    folder = _dreamon(dream, tmp_path, tokens, generation)
    with pytest.raises(ModelLoadError) as info:
        load_model(f"dream:{folder}")
    text = str(info.value)
    assert text.startswith(f"dream:{folder} is a variable-length (DreamOn-style) model, "
                           "which MEDAL cannot run: use a fixed-canvas")
    assert ("<|expand|>" in text) == tokens and ("expand_token_id" in text) == generation
    assert load_model(f"dream:{dream}").mask_id == 151666      # plain Dream still loads


# ---------------------------------------------------------------------- known vulnerabilities

@pytest.mark.parametrize("version, kernels, warned", [
    ("4.55.4", True, False), ("4.56.0", True, True), ("4.57.6", True, True),
    ("5.2.1", True, True), ("5.3.0", True, False), ("5.24.0", True, False),
    ("4.57.6", False, False)])
def test_a_load_warns_of_the_kernels_cve(llada, monkeypatch, capsys, version, kernels, warned):
    """Issue 27 item 6: transformers 4.56-5.2 with the optional ``kernels`` package is
    affected by CVE-2026-4372 (fixed in 5.3.0): every load says so, the CLI on one line."""
    import importlib.util

    from medal import cli
    monkeypatch.setattr(hf.remote, "_transformers_version", lambda: version)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: (object() if kernels else None) if name == "kernels"
                        else real(name, *a))
    assert bool(hf.security_warnings()) == warned
    assert cli.main(["generate", "--model", f"llada:{llada}", "--prompt", "Hi",
                     "--gen-length", "2", "--strategy", "greedy"]) == 0
    err = capsys.readouterr().err
    line = "medal: warning: transformers " + version + " with the 'kernels' package"
    assert (line in err) == warned and ("CVE-2026-4372" in err) == warned
