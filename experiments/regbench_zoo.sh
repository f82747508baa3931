#!/usr/bin/env bash
# RegBench N=2500 comparison of architectures on a CPU budget (issues: architecture zoo, n-gram heads).
# Every run uses the same command -- `small` preset (matched parameter counts), same data, optimiser, batch size
# and number of steps -- apart from `--architecture` (and `--ngram-heads` for the NGH runs).
#   bash experiments/regbench_zoo.sh transformer mamba retnet gla lstm hyena          # issue 3 table
#   bash experiments/regbench_zoo.sh transformer retnet retnet+ngh gla gla+ngh         # issue 5 (P1 Table 1)
# A run whose metrics.json exists is reused, not retrained. JOBS runs go in parallel, one thread each.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUTPUT_ROOT:-outputs/regbench-zoo}
STEPS=${STEPS:-1200}
JOBS=${JOBS:-2}
export OMP_NUM_THREADS=1
COMMON=(--task regbench --n-train 2500 --preset small --max-steps "$STEPS" --batch-size 32 --lr 2e-3
        --min-lr 2.5e-5 --warmup-ratio 0.1 --weight-decay 0.1 --seed 0 --threads 1 --report-to none
        --checkpoint-every 400)

run() {  # run NAME: NAME is an architecture, optionally with "+ngh" for NGH^(1,2,3) after layer 1 (P1 Table 1)
  local name=$1 arch=${1%+ngh} extra=()
  [[ $name == *+ngh ]] && extra=(--ngram-heads "1:1,2,3")
  if [[ -f "$OUT/$name/metrics.json" ]]; then echo "reusing $OUT/$name"; return; fi
  local resume=()
  [[ -d "$OUT/$name" ]] && resume=(--resume)
  python train.py --architecture "$arch" "${extra[@]}" "${COMMON[@]}" "${resume[@]}" --output-dir "$OUT/$name" \
    > "$OUT/$name.log" 2>&1 && echo "done $name" || { echo "FAILED $name (see $OUT/$name.log)"; return 1; }
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
python experiments/summarize_runs.py "${metrics[@]}" | tee "$OUT/summary-$(IFS=_; echo "$*" | tr '+' 'p').md"
exit $status
