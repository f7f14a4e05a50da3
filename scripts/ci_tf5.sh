#!/usr/bin/env bash
# CI's second lane: the newest transformers 5.x, in a fresh virtual environment.
#
# MEDAL's native LLaDA/Dream code needs transformers for tokenizers only, so it must load,
# tokenize and run the same on 5.x as on 4.x. This lane installs the project's requirements
# with the newest transformers 5.x and runs the tests of the native models, the tokenizers
# and checkpoint loading:
#
#   tests/networks/test_native.py           native logits/traces; on 5.x the comparisons with the
#                                  checkpoints' own code skip (that code fails on 5.x by
#                                  design, docs/REAL_MODELS.md) and the native numbers are
#                                  checked against ones recorded from the genuine code
#   tests/networks/test_checkpoint_facts.py families, special ids, NaN checks, memory and offline
#                                  errors (checkpoint folders written without model code)
#   tests/foundation/test_memory_guard.py     the memory guard, refusals (DreamOn), the CVE warning
#   tests/cli/test_long_answers.py     256-slot LLaDA and Dream answers through every path
#   tests/networks/test_llada2.py      LLaDA2.0/2.1 native: logits against numbers recorded from
#                                  the genuine code, blocks, token edits, the command line
#
# Usage: scripts/ci_tf5.sh [extra pytest arguments]
# Env:   KEEP_VENV=1 keeps the environment (its path is printed).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
VENV="$(mktemp -d "${TMPDIR:-/tmp}/medal-tf5.XXXXXX")"
cleanup() { [ "${KEEP_VENV:-0}" = 1 ] && echo "kept $VENV" || rm -rf "$VENV"; }
trap cleanup EXIT

cd "$ROOT"   # requirements.txt installs the project itself (-e .)
"$PYTHON" -m venv "$VENV"
# the requirements without their transformers line (which may cap it below 5), then the
# newest 5.x, at least 5.3 (4.56-5.2 with the optional `kernels` package are affected by
# CVE-2026-4372); torch exactly as requirements.txt pins it (other versions pull CUDA builds)
grep -v -E '^[[:space:]]*transformers([<>=!~ ;[]|$)' "$ROOT/requirements.txt" > "$VENV/requirements-tf5.txt"
"$VENV/bin/pip" install --quiet -r "$VENV/requirements-tf5.txt" 'transformers>=5.3,<6' pytest pytest-xdist
"$VENV/bin/python" - <<'PY'
import torch, transformers
print(f"lane: transformers {transformers.__version__}, torch {torch.__version__}")
from packaging.version import Version
assert Version("5.3") <= Version(transformers.__version__) < Version("6"), transformers.__version__
PY

cd "$ROOT"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
"$VENV/bin/python" -m pytest -q -p no:cacheprovider \
    tests/networks/test_native.py tests/networks/test_checkpoint_facts.py tests/foundation/test_memory_guard.py \
    tests/cli/test_long_answers.py tests/networks/test_llada2.py "$@"
