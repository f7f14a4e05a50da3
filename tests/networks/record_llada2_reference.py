#!/usr/bin/env python
"""Record tests/data/llada2-reference.json from LLaDA2.0's GENUINE code.

Needs MEDAL_REAL_MODEL_CODE with ``llada2/`` (see docs/REAL_MODELS.md) and transformers
4.x (the genuine code fails on 5.x). For each checkpoint variant of test_llada2.py
(``VARIANTS``) and dtype: a folder with the genuine code and the variant's seeded random
weights, loaded with ``implementation="remote"``; the ids of a fixed batch and, at block
lengths 4 and 32, every position's top-3 ids and logits (``_reference_numbers``).
test_llada2.py checks the native code against these on any transformers.

    MEDAL_REAL_MODEL_CODE=.real-model-code python tests/networks/record_llada2_reference.py
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent), str(HERE.parents[1])]

import standins  # noqa: E402
import test_llada2 as t  # noqa: E402
from medal.models import load_model  # noqa: E402


def main() -> int:
    code, why = standins.genuine_llada2_code("2.0")
    if code is None:
        raise SystemExit(why)
    import transformers
    commit = (code / "COMMIT").read_text().strip()[:8] if (code / "COMMIT").is_file() else "?"
    out = {"recorded_with": {"code": f"genuine LLaDA2.0 (dllm {commit})",
                             "transformers": transformers.__version__}}
    with tempfile.TemporaryDirectory() as tmp:
        for variant, (seed, std, overrides) in t.VARIANTS.items():
            d = standins.save_llada2(Path(tmp) / variant, "2.0", "genuine", seed=seed,
                                     std=std, overrides=overrides)
            for dtype in ("float32", "bfloat16"):
                m = load_model(f"llada:{d}", trust_remote_code=True, device="cpu",
                               dtype=dtype, implementation="remote")
                out[f"{variant}-{dtype}"] = t._reference_numbers(m, variant)
    path = HERE.parent / "data" / "llada2-reference.json"
    path.write_text(json.dumps(out) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
