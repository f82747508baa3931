#!/usr/bin/env bash
# N-gram heads on real text (P1 §6, Table 2) at CPU scale: Llama, RetNet and GLA on `text_lm` (the standard-library
# docstring corpus, byte-level BPE of 1,024), each trained twice with the same data, seed and steps
# (experiments/ngram_heads_text/common.yaml): as is, and with NGH₁^(1,2,3) + NGH₋₂^(1,2,3), the three n-gram blocks
# replacing layer 1 (the second) and layer −2 (the second-to-last). One thread per run, one run after another; each
# model is then scored on the validation split, and summarize.py writes docs/results/ngram_heads_text/.
#   bash experiments/ngram_heads_text.sh            # 6 runs of ≤ 4 CPU minutes each (seed 0)
#   SEEDS="1 2" bash experiments/ngram_heads_text.sh   # the same six runs with training seeds 1 and 2
# A seed S > 0 names its runs <arch>-<variant>-seedS; the data (task_seed 0), steps and recipe are those of seed 0.
# Two processes with disjoint SEEDS can run side by side, one per core.
# Decision rule for seeds 1-2, written before their runs (issue 51, item 5): every seed is committed, whatever it
# shows, and the report rates "NGH lowers perplexity" per architecture on the 3 seeds per side (test perplexity,
# pairs base/+NGH of one architecture, separation of the seeds); the recipe is not changed between seeds.
# Finished runs are kept (delete outputs/ngram_heads_text/<run> to redo one).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUTPUT_DIR:-outputs/ngram_heads_text}"
export OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
mkdir -p "$OUT"
for seed in ${SEEDS:-0}; do
 for arch in llama retnet gla; do
  for variant in base ngh; do
    run="$OUT/$arch-$variant"
    if [ "$seed" != 0 ]; then run="$run-seed$seed"; fi
    heads=()
    if [ "$variant" = ngh ]; then heads=("--ngram-heads=1:1,2,3:replace;-2:1,2,3:replace"); fi
    if [ ! -f "$run/validation/metrics.json" ]; then
      python train.py --config experiments/ngram_heads_text/common.yaml --architecture "$arch" ${heads[@]+"${heads[@]}"} \
        --seed "$seed" --output-dir "$run" --overwrite > "$run.log" 2>&1
      python -m hf_icl.evaluate --checkpoint "$run/model" --task text_lm --split validation \
        --output-dir "$run/validation" --overwrite >> "$run.log" 2>&1
      echo "$run: $(tail -n 1 "$run.log")"
    fi
  done
 done
done
python experiments/ngram_heads_text/summarize.py "$OUT" --output docs/results/ngram_heads_text
