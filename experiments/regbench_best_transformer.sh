#!/usr/bin/env bash
# Best <=30-minute CPU run of icl_transformer on RegBench N=2500 (issue: RegBench end to end).
# 2 CPU threads, 14 epochs of the `small` preset (d=128, 4 layers, 2 heads) with a higher peak LR than the
# paper's GPU setting (200 epochs at 1e-4), because a CPU budget allows ~10x fewer steps.
set -euo pipefail
cd "$(dirname "$0")/.."
accelerate launch --num_cpu_threads_per_process 2 train.py \
  --architecture transformer --preset small --task regbench --n-train 2500 \
  --epochs 14 --batch-size 32 --lr 1e-3 --min-lr 2.5e-5 --weight-decay 0.1 --warmup-ratio 0.1 \
  --seed 0 --output-dir "${OUTPUT_DIR:-outputs/regbench-best-transformer}" "$@"
