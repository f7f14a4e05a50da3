"""Checkpoints are read from safetensors only (issue 21, "Requirements"): weights only as
``pytorch_model*.bin`` (a pickle, which can run code when loaded) are refused with the
fix, and every model load asks transformers for safetensors (``use_safetensors=True``)."""
from __future__ import annotations

import pytest

pytest.importorskip("transformers")

import standins  # noqa: E402
from medal.errors import ModelLoadError  # noqa: E402
from medal.models import load_model  # noqa: E402


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    return standins.save_bert(tmp_path_factory.mktemp("bert") / "bert")


def test_pickled_weights_are_refused(bert_dir, tmp_path):
    import shutil

    import transformers
    pickled = tmp_path / "pickled"
    shutil.copytree(bert_dir, pickled)
    net = transformers.BertForMaskedLM.from_pretrained(bert_dir)
    (pickled / "model.safetensors").unlink()
    net.save_pretrained(pickled, safe_serialization=False)
    assert (pickled / "pytorch_model.bin").is_file()
    assert not list(pickled.glob("*.safetensors"))
    with pytest.raises(ModelLoadError, match="pytorch_model.*safetensors"):
        load_model(f"mlm:{pickled}", device="cpu")


def test_models_are_loaded_from_safetensors(bert_dir, monkeypatch):
    import transformers
    seen = []
    cls = transformers.AutoModelForMaskedLM
    original = cls.from_pretrained.__func__

    def spy(klass, *args, **kwargs):
        seen.append(kwargs.get("use_safetensors"))
        return original(klass, *args, **kwargs)
    monkeypatch.setattr(cls, "from_pretrained", classmethod(spy))
    load_model(f"mlm:{bert_dir}", device="cpu")
    assert seen == [True]
