#!/usr/bin/env bash
# Reproduces every figure in docs/RESULTS.md, then regenerates it (scripts/results_md.py).
# Usage: bash scripts/results.sh [N] [M]
#   N: fresh problems per task for the headline tables (with the candidate analysis) and
#      the research runs (default 300)
#   M: problems for the paper's options, the parameter sweeps and the decomposition and
#      verifier checks (default N)
# The runs go in two lanes side by side (two processes, one thread each: the machine has 2
# cores), most important first; LANE=a / LANE=b / LANE=sudoku runs one lane only. A run whose output file exists is skipped, so an
# interrupted script resumes where it stopped; delete results/ (or a task's folder, e.g.
# after retraining its model) to measure again. docs/RESULTS.md is regenerated from
# whatever results/ holds and marks anything missing "not run".
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-300}
M=${2:-$N}
export OMP_NUM_THREADS=1
# medal-no-decomposition is left out: with the built-in models (decomposition off by
# default for them) it is medal exactly; the decomposition check below measures it
ALL=greedy,random,entropy,margin,eb,bst5,medal,medal-no-mcts,medal-margin-only
CD=results/countdown SD=results/sudoku R=results/countdown/research O=results/countdown/options

bench() {  # bench TASK OUT N ARGS...
  local task=$1 out=$2 n=$3
  shift 3
  if [ -f "$out" ]; then echo "== skip $out (exists)"; return; fi
  echo "== $(date -u +%H:%M:%S) $task $out (n=$n): $*"
  python -m medal bench --task "$task" --n "$n" --seed 0 --out "$out" --no-progress "$@"
}

meta() {  # meta TASK: what ran for it
  python - "$1" "$N" "$M" <<'EOF'
import json, os, platform, sys
t, n, m = sys.argv[1:]
json.dump({"command": f"bash scripts/results.sh {n} {m}",
           "what": f"{n} fresh problems for the headline table, the candidate analysis and the "
                   f"research runs; {m} for the paper's options, the parameter sweeps and the "
                   "decomposition and verifier checks; two processes side by side, one thread each.",
           "machine": f"{os.cpu_count()} CPU cores shared with other work, no GPU, Python "
                      f"{platform.python_version()}"},
          open(f"results/{t}/meta.json", "w"), indent=1)
EOF
}

mkdir -p $CD $SD $R $O
meta countdown
meta sudoku

# Two lanes, one thread each, run side by side (the machine has 2 cores); LANE=a or LANE=b
# runs only one of them (e.g. the Sudoku runs while the Countdown model is retrained).
lane_a() {
  # headline table
  bench countdown $CD/results.json "$N" --strategies $ALL --frontier
  # research: a search that beats greedy without a verifier? (issue 11, item 4)
  bench countdown $R/vote_lc1_s8.json "$N" --strategies medal --candidate-choice vote --lc 1 --steps 8
  bench countdown $R/paper_t0.json "$N" --strategies medal --candidate-choice rollout \
      --simulation rollout --rollout-steps 3
  bench countdown $R/vote_lc1.json "$N" --strategies medal --candidate-choice vote --lc 1
  # the paper's own choices, each against the default (issue 11, item 2)
  bench countdown $O/pair.json "$M" --strategies medal --pair-temperature 1
  bench countdown $O/rollout_choice.json "$M" --strategies medal --candidate-choice rollout
  bench countdown $O/sim_rollout.json "$M" --strategies medal --simulation rollout --rollout-steps 3
  bench countdown $O/margin_all.json "$M" --strategies medal-margin-only --scoring-scope all
}
lane_b() {
  bench sudoku $SD/results.json "$N" --strategies $ALL --frontier
  bench sudoku $SD/sweeps.json "$M" --strategies medal \
      --sweep lc=1,2,4,6 --sweep k2=1,3,5,10 --sweep max_iterations=1,2,4,8,32
  [ "${LANE:-}" = sudoku ] && return
  # the parameter sweeps (the paper's figures)
  bench countdown $CD/sweeps.json "$M" --strategies medal \
      --sweep lc=1,2,4,6 --sweep k2=1,3,5,10 --sweep max_iterations=1,2,4,8,32
  # the paper's full setting: MEDAL with task decomposition on
  bench countdown $CD/decomposition.json "$M" --strategies medal --decompose
  # beyond the paper: the verifier-aware reward (off by default)
  bench countdown $CD/verifier.json "$M" --strategies medal --reward ig+verifier
  bench countdown $R/paper.json "$M" --strategies medal --pair-temperature 1 \
      --candidate-choice rollout --simulation rollout --rollout-steps 3
  # the budget's arithmetic: what decoding in fewer steps (to free forwards for search) costs
  bench countdown $R/greedy_s16.json "$N" --strategies greedy --steps 16
  bench countdown $R/greedy_s8.json "$N" --strategies greedy --steps 8
  # the L_c sweep's best settings for this model, on the full problem set
  bench countdown $R/lc1.json "$N" --strategies medal --lc 1
  bench countdown $R/lc4.json "$N" --strategies medal --lc 4
  # the default search with phase C in 12 steps: within a third of Best-of-5's sequences
  bench countdown $R/lc2_s12.json "$N" --strategies medal --steps 12
}
case "${LANE:-both}" in
  a) lane_a 2>&1 | tee -a results/results-a.log ;;
  b|sudoku) lane_b 2>&1 | tee -a results/results-b.log ;;
  *) lane_a > results/results-a.log 2>&1 &
     lane_b 2>&1 | tee -a results/results-b.log
     wait
     cat results/results-a.log ;;
esac
case "${LANE:-both}" in a|b|sudoku) exit 0 ;; esac   # one lane: no document yet
if [ ! -f results/ui.log ]; then
  python -m medal bench --task countdown --n 5 --strategies medal --out results/ui.json \
      --ui --no-progress > results/ui.log 2>&1
fi
python scripts/results_md.py results docs/RESULTS.md
