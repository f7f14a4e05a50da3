#!/usr/bin/env bash
# Reproduces every figure in docs/RESULTS.md (about 25 minutes on 2 cores: the two tasks
# run side by side, one thread each).
# Usage: bash scripts/results.sh [N]   (N fresh problems per task, default 150)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-150}
ALL=greedy,random,entropy,margin,eb,bst5,medal,medal-no-mcts,medal-no-decomposition,medal-margin-only
export OMP_NUM_THREADS=1

task_results() {
  local task=$1 out=results/$1
  python -m medal bench --task "$task" --n "$N" --strategies $ALL --seed 0 \
      --out $out/results.json --frontier --no-progress \
      --sweep lc=1,2,4,6 --sweep k2=1,3,5,10 --sweep max_iterations=1,2,4,8,32
  # is the information gain picking the right candidate? (every candidate completed)
  python -m medal bench --task "$task" --n "$N" --strategies medal --seed 0 \
      --complete-candidates --out $out/candidates.json --no-progress
  # the paper's full setting: MEDAL with task decomposition on
  python -m medal bench --task "$task" --n "$N" --strategies medal --seed 0 \
      --decompose --out $out/decomposition.json --no-progress
  # beyond the paper: the verifier-aware reward (off by default)
  python -m medal bench --task "$task" --n "$N" --strategies medal --seed 0 \
      --reward ig+verifier --out $out/verifier.json --no-progress
}

task_results countdown > results/countdown.log 2>&1 &
task_results sudoku > results/sudoku.log 2>&1 &
wait
python -m medal bench --task countdown --n 5 --strategies medal --out results/ui.json \
    --ui --no-progress > results/ui.log 2>&1
cat results/countdown.log results/sudoku.log results/ui.log
