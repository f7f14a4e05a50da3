#!/usr/bin/env bash
# Reproduces every figure in docs/RESULTS.md (about 30-40 minutes on 2 cores).
# Usage: bash scripts/results.sh [N]   (N fresh problems per task, default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200}
ALL=greedy,random,entropy,margin,eb,bst5,medal,medal-no-mcts,medal-no-decomposition,medal-margin-only

for task in countdown sudoku; do
  out=results/$task
  python -m medal bench --task $task --n "$N" --strategies $ALL --seed 0 \
      --out $out/results.json --frontier --no-progress \
      --sweep lc=1,2,4,6,8 --sweep k2=1,3,5,10 --sweep max_iterations=2,4,8,16,64
  # beyond the paper: the verifier-aware reward (off by default)
  python -m medal bench --task $task --n "$N" --strategies medal --seed 0 \
      --reward ig+verifier --out $out/verifier.json --no-progress
done
python -m medal bench --task countdown --n 20 --strategies medal --out results/ui.json --ui --no-progress
