"""The shipped built-in Countdown model: how it loads, and that it makes a meaningful demo."""
import json
from pathlib import Path

import torch

from medal.engine import generate
from medal.models import load_model
from medal.models.tiny import CharTokenizer
from medal.tasks.countdown import generate_problems

ASSETS = Path(__file__).resolve().parents[2] / "medal" / "assets"


def test_checkpoints_are_safetensors_only():
    # the checkpoint folders (medal/assets/ also holds examples, a results file and the
    # lm-eval task, which are data, not weights)
    shipped = [p for d in {m.parent for m in ASSETS.glob("*/model.safetensors")}
               for p in d.iterdir() if p.is_file()]
    assert not list(ASSETS.rglob("*.bin")) and not list(ASSETS.rglob("*.pt"))
    assert shipped, "no built-in checkpoints shipped"
    assert {p.suffix for p in shipped} <= {".safetensors", ".json"}
    for cfg in ASSETS.glob("*/config.json"):
        meta = json.loads(cfg.read_text())
        assert meta["training"]["command"].startswith("python -m medal train")
        assert meta["training"]["seconds"] > 0
        assert cfg.with_name("model.safetensors").stat().st_size < 8_000_000


def test_builtin_model_interface(builtin_model):
    model = load_model("builtin:countdown")
    assert model.mask_id == CharTokenizer().mask_id and model.builtin
    ids = torch.tensor([model.encode_prompt("Use 4, 18, 13 to make 20.") + [model.mask_id] * 28])
    logits = model.logits(ids, 28)  # the answer slots only
    assert logits.shape == (1, 28, len(CharTokenizer()))
    assert torch.isfinite(logits).all()
    # the same rows as the network's logits of every position
    torch.testing.assert_close(logits, model.net(ids)[:, -28:].float())


def test_greedy_accuracy_makes_a_meaningful_demo(builtin_model):
    """Greedy low-confidence decoding should solve some, not all, fresh problems (the
    precise figure is in docs/RESULTS.md, from `python -m medal bench`)."""
    problems = generate_problems(40, seed=777)
    solved = sum(generate(builtin_model, problem=p, strategy="greedy").verified for p in problems)
    assert 4 <= solved <= 36, f"greedy solved {solved}/40"
