#!/usr/bin/env bash
# Second <=30-minute CPU attempt at RegBench N=2500 with icl_transformer `small`: more, smaller updates
# (batch 16, peak LR 2e-3, 10 epochs = 1,570 steps) than regbench_best_transformer.sh (batch 32, 1e-3, 1,106 steps).
set -euo pipefail
cd "$(dirname "$0")/.."
accelerate launch --num_cpu_threads_per_process 2 train.py \
  --architecture transformer --preset small --task regbench --n-train 2500 \
  --epochs 10 --batch-size 16 --lr 2e-3 --min-lr 2.5e-5 --weight-decay 0.1 --warmup-ratio 0.1 \
  --seed 0 --output-dir "${OUTPUT_DIR:-outputs/regbench-transformer-small-batches}" "$@"
