#!/usr/bin/env bash
# P2 Table 1 protocol, scaled down to a <=30-minute single-core CPU budget (issue: position schemes/RegularGPT).
# Train on lengths 1-40, test every length 41-500 (8 samples per length), report the mean test accuracy.
# Models: RegularGPT (C=2, K=1 as in P2's regular-language setting), Transformer with NoPE, Transformer with
# learned positions (max_position_embeddings=512 so it can run past its training lengths). Same width, optimiser,
# data and number of steps for all of them.
#   bash experiments/length_generalization.sh parity_check      # or cycle_navigation: `small`, 1,500 steps, lr 1e-3
# Knobs (environment): PRESET (small), STEPS (1500), LR (1e-3), SCHEDULE (cosine), MODELS (all three, by run
# name), OUTPUT_ROOT. The issue-#16 revisit, which trains longer with the wsd schedule at the `tiny` width:
#   PRESET=tiny STEPS=6000 LR=3e-3 SCHEDULE=wsd MODELS=regular_gpt_c2 \
#     OUTPUT_ROOT=outputs/length-generalization-revisit bash experiments/length_generalization.sh parity_check
set -euo pipefail
cd "$(dirname "$0")/.."
TASK=${1:?usage: experiments/length_generalization.sh TASK}
OUT=${OUTPUT_ROOT:-outputs/length-generalization}/$TASK
export OMP_NUM_THREADS=1
COMMON=(--task "$TASK" --task-option n_per_length=8 --preset "${PRESET:-small}" --max-steps "${STEPS:-1500}"
        --batch-size 64 --lr "${LR:-1e-3}" --lr-schedule "${SCHEDULE:-cosine}" --warmup-ratio 0.1 --seed 0
        --threads 1 --report-to none --checkpoint-every 500)
declare -A RUNS=(
  [regular_gpt_c2]="--architecture regular_gpt --override num_hidden_layers=1 --override dilated_attention_chunk_size=2"
  [transformer_nope]="--architecture transformer --override position_embedding=nope"
  [transformer_learned]="--architecture transformer --override max_position_embeddings=512"
)
DONE=()
for name in ${MODELS:-regular_gpt_c2 transformer_nope transformer_learned}; do
  read -r -a run <<< "${RUNS[$name]:?unknown run name $name (allowed: ${!RUNS[*]})}"
  if [[ ! -f "$OUT/$name/metrics.json" ]]; then  # finished runs are reused, interrupted ones resumed
    resume=()
    [[ -d "$OUT/$name" ]] && resume=(--resume)
    python train.py "${run[@]}" "${COMMON[@]}" "${resume[@]}" --output-dir "$OUT/$name"
  fi
  DONE+=("$OUT/$name/metrics.json")
done
python experiments/summarize_runs.py "${DONE[@]}" --plot "$OUT/length_generalization.png" | tee "$OUT/summary.md"
