#!/usr/bin/env bash
# The RegBench architecture zoo at the CPU recipe (issue #16): every run is
#   train.py --config experiments/configs/regbench_cpu.yaml --architecture A [--ngram-heads 1:1,2,3] --max-steps STEPS
# i.e. the same data, matched `tiny` presets, optimiser, schedule, batch size and number of steps.
#   STEPS=1500 bash experiments/regbench_cpu_zoo.sh transformer mamba retnet gla hyena lstm retnet+ngh gla+ngh
# A run whose metrics.json exists is reused; an interrupted one resumes. JOBS runs go in parallel, one thread each
# (the recipe's own `threads: 2` is for a single run on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUTPUT_ROOT:-outputs/regbench_cpu_zoo}
STEPS=${STEPS:-1500}
JOBS=${JOBS:-2}
export OMP_NUM_THREADS=1

run() {  # run NAME: an architecture, optionally with "+ngh" for NGH^(1,2,3) after layer 1 (P1 Table 1)
  local name=$1 arch=${1%+ngh} extra=()
  [[ $name == *+ngh ]] && extra=(--ngram-heads "1:1,2,3")
  if [[ -f "$OUT/$name/metrics.json" ]]; then echo "reusing $OUT/$name"; return; fi
  local resume=()
  [[ -d "$OUT/$name/checkpoints" ]] && resume=(--resume)
  python train.py --config experiments/configs/regbench_cpu.yaml --architecture "$arch" "${extra[@]}" \
    --max-steps "$STEPS" --threads 1 "${resume[@]}" --output-dir "$OUT/$name" > "$OUT/$name.log" 2>&1 \
    && echo "done $name" || { echo "FAILED $name (see $OUT/$name.log)"; return 1; }
}

mkdir -p "$OUT"
status=0
for name in "$@"; do
  run "$name" &
  while (( $(jobs -rp | wc -l) >= JOBS )); do wait -n || status=1; done
done
while (( $(jobs -rp | wc -l) > 0 )); do wait -n || status=1; done
metrics=()
for name in "$@"; do metrics+=("$OUT/$name/metrics.json"); done
python experiments/summarize_runs.py "${metrics[@]}" | tee "$OUT/summary.md"
exit $status
