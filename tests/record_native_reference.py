#!/usr/bin/env python
"""Record tests/data/native-reference.json from the GENUINE checkpoint code.

Needs MEDAL_REAL_MODEL_CODE (see docs/REAL_MODELS.md) and transformers 4.x (the genuine
code fails on 5.x). For each family: a checkpoint folder with the genuine code and seeded
random weights (seed 0), loaded with ``implementation="remote"``; the ids of a fixed batch
and the top-3 answer logits per slot (float32). LLaDA-MoE (its genuine code in
``lladamoe/``): the two checkpoints of test_native.py's ``MOE_VARIANTS``, same numbers.
And the ids the slow DreamTokenizer (genuine) gives for the chat template and a text with special tokens. test_native.py
checks the native code against these numbers on any transformers.

    MEDAL_REAL_MODEL_CODE=/path/to/genuine-code python tests/record_native_reference.py
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import standins  # noqa: E402
import test_native as t  # noqa: E402
from medal.models import load_model  # noqa: E402


def main() -> int:
    if standins.genuine_code()[0] is None:
        raise SystemExit(standins.genuine_code()[1])
    import transformers
    out = {"recorded_with": {"code": "genuine", "transformers": transformers.__version__}}
    with tempfile.TemporaryDirectory() as tmp:
        for family in ("llada", "dream"):
            d = standins.save_checkpoint(Path(tmp) / f"genuine-{family}", family, "genuine")
            m = load_model(f"{family}:{d}", trust_remote_code=True, device="cpu",
                           implementation="remote")
            out[family] = t._reference_numbers(m)
        if standins.genuine_moe_code()[0] is None:
            raise SystemExit(standins.genuine_moe_code()[1])
        for variant in t.MOE_VARIANTS:
            family, seed, overrides = t.VARIANTS[variant]
            d = standins.save_checkpoint(Path(tmp) / f"genuine-{variant}", family, "genuine",
                                         seed=seed, overrides=overrides)
            m = load_model(f"hf:{d}", trust_remote_code=True, device="cpu",
                           implementation="remote")
            out[variant] = t._reference_numbers(m)
    slow = t._slow_dream_tokenizer()
    chat = slow.apply_chat_template([{"role": "user", "content": t.PROMPT}],
                                    add_generation_prompt=True, tokenize=False)
    out["dream_tokenizer"] = {"chat": slow(chat, add_special_tokens=False)["input_ids"],
                              "special": slow(t.DREAM_TEXT, add_special_tokens=False)["input_ids"]}
    t.REFERENCE.write_text(json.dumps(out) + "\n")
    print(f"wrote {t.REFERENCE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
