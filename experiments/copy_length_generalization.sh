#!/usr/bin/env bash
# P4 (Repeat After Me) §3.3 / Fig. 1b, scaled down to a <=30-minute single-core CPU budget (issue 6):
# train on copy with strings of length 1-20 (packed into 220-character contexts, loss on answers + EOS only),
# then generate greedily through pipeline("text-generation") on strings of length 10, 20, ..., 80 and report
# string-level exact match by length. Models: Transformer with Hard-ALiBi, NoPE and RoPE (d=64, 2 layers, 4 heads;
# Hard-ALiBi masks 2 heads to windows of 1 and 2 tokens, the others are NoPE), Mamba and LSTM (their tiny presets,
# parameter-matched). Same data, optimiser and number of steps for all. The lookup oracle and the n-gram copiers
# (P4 Algorithm 1, Fig. 11) are scored on the same test strings. Paper's direction beyond the training length:
# Hard-ALiBi >> NoPE/ALiBi > RoPE >> Mamba/LSTM.
#   bash experiments/copy_length_generalization.sh                   # full budget (~5 CPU minutes per model)
#   STEPS=30 N_PER_LENGTH=4 bash experiments/copy_length_generalization.sh   # smoke run
# Knobs (environment): STEPS (1500), LR (3e-3), SCHEDULE (cosine), N_PER_LENGTH (64), MODELS (run names, default
# all five), OUTPUT_ROOT. The issue-#16 revisit, longer and at a learning rate that stays high (wsd):
#   STEPS=2000 SCHEDULE=wsd MODELS="transformer_hard_alibi transformer_rope mamba" \
#     OUTPUT_ROOT=outputs/copy-length-generalization-revisit bash experiments/copy_length_generalization.sh
# Architectures not registered in hf_icl are skipped with a message.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUTPUT_ROOT:-outputs/copy-length-generalization}
export OMP_NUM_THREADS=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
COMMON=(--task copy --preset tiny --max-steps "${STEPS:-1500}" --batch-size 16 --lr "${LR:-3e-3}"
        --lr-schedule "${SCHEDULE:-cosine}" --warmup-ratio 0.05
        --seed 0 --threads 1 --report-to none --checkpoint-every 100000 --log-every 20
        --n-train 8000 --task-option context_len=220 --task-option train_min_length=1
        --task-option train_max_length=20 --task-option test_min_length=10 --task-option test_max_length=80
        --task-option test_length_step=10 --task-option "n_per_length=${N_PER_LENGTH:-64}")
TRANSFORMER=(--architecture transformer --override num_attention_heads=4)
declare -A RUNS=(
  [transformer_hard_alibi]="${TRANSFORMER[*]} --override position_embedding=hard_alibi --override num_masked_heads=2"
  [transformer_nope]="${TRANSFORMER[*]} --override position_embedding=nope"
  [transformer_rope]="${TRANSFORMER[*]} --override position_embedding=rope"
  [mamba]="--architecture mamba"
  [lstm]="--architecture lstm"
)
REGISTERED=$(python -c "import hf_icl; print(' '.join(hf_icl.list_architectures()))")
DONE=()
for name in ${MODELS:-transformer_hard_alibi transformer_nope transformer_rope mamba lstm}; do
  read -r -a run <<< "${RUNS[$name]:?unknown run name $name (allowed: ${!RUNS[*]})}"
  if [[ " $REGISTERED " != *" ${run[1]} "* ]]; then
    echo "skipping $name: architecture '${run[1]}' is not registered in hf_icl" >&2
    continue
  fi
  if [[ -f "$OUT/$name/metrics.json" ]]; then  # finished runs are reused, never overwritten
    echo "reusing $OUT/$name" >&2
  else
    resume=()
    [[ -d "$OUT/$name" ]] && resume=(--resume)
    python train.py "${run[@]}" "${COMMON[@]}" "${resume[@]}" --output-dir "$OUT/$name"
  fi
  DONE+=("$OUT/$name/metrics.json")
done
python -m hf_icl.tasks.generation.evaluation "${DONE[@]}" --plot "$OUT/copy_length_generalization.png" \
  | tee "$OUT/summary.md"
