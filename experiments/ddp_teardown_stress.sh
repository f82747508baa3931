#!/usr/bin/env bash
# Stress check of the 2-process DDP teardown on CPU (the CI hang of stop 19): runs the DDP test's train.py command
# N times (default 16) while two busy loops load the 2 cores, and prints each run's exit status and seconds.
# A hang shows as "rc 124" (killed after 150 s). Before the fix in `hf_icl/training/loop.py::train` (drop the DDP
# wrapper before the process group is destroyed) run 2 of 2 hung; after it, 16 of 16 finished in 15-17 s.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$(mktemp -d)}
python -c "while True: pass" & load1=$!
python -c "while True: pass" & load2=$!
trap 'kill $load1 $load2' EXIT
for i in $(seq 1 "${N:-16}"); do
  start=$(date +%s)
  OMP_NUM_THREADS=1 ACCELERATE_USE_CPU=true timeout 150 accelerate launch --main_process_port $((41000 + i)) \
    --multi_gpu --num_processes 2 --num_machines 1 --mixed_precision no --dynamo_backend no train.py \
    --preset tiny --report-to none --threads 1 --n-train 100 --task-option n_test=8 --task-option n_validation=8 \
    --max-steps 4 --checkpoint-every 2 --log-every 1 --lr 1e-3 --warmup-steps 2 --gradient-accumulation-steps 2 \
    --output-dir "$out/run$i" > "$out/log$i" 2>&1
  echo "run $i rc $? $(( $(date +%s) - start ))s"
done
