"""Issue 39 item 5: a damaged weights file ends in one line naming the file and the fix,
from the command line, with and without ``--skip-memory-check`` (the memory guard reads the
headers first; without it the load did), natively and through transformers. Before: random
bytes -> OverflowError (the guard) or SafetensorError (the load), a Git-LFS pointer ->
MemoryError or SafetensorError, a file cut short -> SafetensorError, each a traceback."""
from __future__ import annotations

import os
import shutil

import pytest
import torch

import standins
from medal.cli import main
from medal.errors import ModelLoadError
from medal.models import hf
from medal.models.native import load_native

POINTER = (b"version https://git-lfs.github.com/spec/v1\n"
           b"oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
           b"size 16032932000\n")
#: case -> (what the file becomes, what the one line must say)
CASES = {
    "random-bytes": (lambda good: os.urandom(4096), "is not a safetensors file"),
    "lfs-pointer": (lambda good: POINTER,
                    "is a Git-LFS pointer, not weights (the checkpoint was cloned without Git "
                    "LFS): run `git lfs pull` in "),
    "cut-short": (lambda good: good[: len(good) // 2], "was cut short: it has "),
    "trailing-bytes": (lambda good: good + b"\0" * 10, "is damaged: 10 bytes follow its last"),
}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("damaged")
    good = standins.save_checkpoint(root / "good", "llada", "native")
    weights = (good / "model.safetensors").read_bytes()
    out = {}
    for case, (damage, _) in CASES.items():
        d = root / case
        shutil.copytree(good, d)
        (d / "model.safetensors").write_bytes(damage(weights))
        out[case] = d
    return out


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("flags", [[], ["--skip-memory-check"],
                                   ["--implementation", "remote", "--trust-remote-code"]],
                         ids=["guarded", "skip-memory-check", "remote"])
def test_a_damaged_weights_file_is_one_line(folders, capsys, case, flags):
    d = folders[case]
    rc = main(["generate", "--model", f"llada:{d}", "--prompt", "1 2 3 -> 6", "--gen-length",
               "4", "--device", "cpu", *flags])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if not line.startswith("medal: warning")]
    assert rc != 0 and len(lines) == 1, err
    assert lines[0].startswith(f"error: {d / 'model.safetensors'} "), lines[0]
    assert CASES[case][1] in lines[0]
    assert lines[0].endswith("--local-dir DIR`)") or lines[0].endswith("--local-dir DIR`")


@pytest.mark.parametrize("case", list(CASES))
def test_the_native_load_checks_what_it_reads(folders, case):
    """A hub checkpoint's files reach :func:`load_native` without the local folder's check:
    it reads each file's header first too."""
    with pytest.raises(ModelLoadError) as info:
        load_native(folders[case], "llada", torch.device("cpu"), torch.float32)
    assert CASES[case][1] in str(info.value) and "\n" not in str(info.value)


def test_count_parameters_names_the_damaged_file(folders):
    with pytest.raises(ModelLoadError, match="Git-LFS pointer"):
        hf.count_parameters(folders["lfs-pointer"])


@pytest.mark.parametrize("dtype, suggested", [(torch.float32, True), (torch.bfloat16, False),
                                              (None, True)])
def test_out_of_memory_suggests_bfloat16_only_when_it_helps(dtype, suggested):
    """The message suggested --dtype bfloat16 when the weights were already bfloat16."""
    err = hf.out_of_memory("llada:x", MemoryError(), torch.device("cpu"), dtype)
    first = str(err).splitlines()[0]
    assert ("--dtype bfloat16" in first) is suggested
    assert "ulimit -v" in first


def test_a_bfloat16_load_out_of_memory_does_not_suggest_bfloat16(folders, monkeypatch):
    import medal.models.native as native
    from medal.models import load_model

    def fail(*args, **kwargs):
        raise MemoryError()
    monkeypatch.setattr(native, "load_native", fail)
    d = folders["lfs-pointer"].parent / "good"
    for dtype, suggested in (("bfloat16", False), ("float32", True)):
        with pytest.raises(ModelLoadError) as info:
            load_model(f"llada:{d}", dtype=dtype, device="cpu")
        first = str(info.value).splitlines()[0]
        assert first.startswith("ran out of memory") and ("--dtype bfloat16" in first) is suggested
