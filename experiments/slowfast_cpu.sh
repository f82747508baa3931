#!/usr/bin/env bash
# Slow/fast Transformer vs. the x-only baseline on ICL arithmetic at CPU scale (P3 §4.2; issue #13).
# Two single-thread processes at once (equal steps, batch and parameters: experiments/slowfast_cpu/*.yaml), then
# `python -m hf_icl.analysis slowfast`, which writes JSON and PNGs to docs/results/slowfast/.
#   bash experiments/slowfast_cpu.sh            # about 25 minutes on 2 cores
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUTPUT_DIR:-outputs/slowfast_cpu}"
mkdir -p "$OUT"
export OMP_NUM_THREADS=1
for run in baseline ymodel; do
  python train.py --config "experiments/slowfast_cpu/$run.yaml" --output-dir "$OUT/$run" --overwrite \
    > "$OUT/$run.log" 2>&1 &
done
wait
python -m hf_icl.analysis slowfast --checkpoint "$OUT/ymodel/model" --baseline "$OUT/baseline/model" \
  --output docs/results/slowfast
