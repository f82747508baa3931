#!/usr/bin/env bash
# P2 Table 1 protocol, scaled down to a <=30-minute single-core CPU budget (issue: position schemes/RegularGPT).
# Train on lengths 1-40, test every length 41-500 (8 samples per length), report the mean test accuracy.
# Models: RegularGPT (C=2, K=1 as in P2's regular-language setting), Transformer with NoPE, Transformer with
# learned positions (max_position_embeddings=512 so it can run past its training lengths). Same width (d=128,
# 2 heads), optimiser, data and number of steps for all three.
#   bash experiments/length_generalization.sh parity_check      # or cycle_navigation
set -euo pipefail
cd "$(dirname "$0")/.."
TASK=${1:?usage: experiments/length_generalization.sh TASK}
OUT=${OUTPUT_ROOT:-outputs/length-generalization}/$TASK
export OMP_NUM_THREADS=1
COMMON=(--task "$TASK" --task-option n_per_length=8 --preset small --max-steps "${STEPS:-1500}" --batch-size 64
        --lr 1e-3 --warmup-ratio 0.1 --seed 0 --threads 1 --report-to none --checkpoint-every 500)
python train.py --architecture regular_gpt --override num_hidden_layers=1 --override dilated_attention_chunk_size=2 \
  "${COMMON[@]}" --output-dir "$OUT/regular_gpt_c2"
python train.py --architecture transformer --override position_embedding=nope "${COMMON[@]}" \
  --output-dir "$OUT/transformer_nope"
python train.py --architecture transformer --override max_position_embeddings=512 "${COMMON[@]}" \
  --output-dir "$OUT/transformer_learned"
python experiments/summarize_runs.py "$OUT"/{regular_gpt_c2,transformer_nope,transformer_learned}/metrics.json \
  --plot "$OUT/length_generalization.png" | tee "$OUT/summary.md"
