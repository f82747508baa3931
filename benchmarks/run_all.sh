#!/usr/bin/env bash
# Runs every benchmark once, one after another, single-threaded (training_throughput on two threads), with short repeat settings, and writes each one's
# tables, command, machine facts and load average to docs/results/benchmarks/<name>.json (docs/benchmarks.md is
# rendered from those files: `python benchmarks/render_docs.py`). On a shared machine the load average recorded in
# each file says so; rerunning on an idle machine overwrites the files.
#   bash benchmarks/run_all.sh [NAME ...]      # default: all
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUTPUT_DIR:-docs/results/benchmarks}
export OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1
declare -A ARGS=(
  [ngram_baseline]="--instances 10 --repeats 3"
  [regbench_generation]="--repeats 1"
  [baum_welch]="--instances 10 --every 25 --full-split"
  [ngram_head]="--repeats 2 --reference-limit-gib 4"
  [linear_attention_chunked]="--repeats 3 --rounds 2"
  [gla_fast_forgetting]="--repeats 3 --rounds 2"
  [mamba_training_step]="--skip-hf --repeats 5"
  [transformer_vs_gpt2]="--repeats 5"
  [training_throughput]="--presets tiny --batches 6 --rounds 4"
  [regular_gpt_attention]="--preset tiny --repeats 1"
  [regression_training_step]="--repeats 2 --rounds 5"
  [decode_per_token]="--steps 16 --warmup 2"
  [recurrent_mixers_chunked]="--repeats 3 --rounds 2"
  [h3_short_form]="--repeats 3"
  [training_levers]="--repeats 3 --rounds 2 --steps 20"
  [mamba_mixing_map]="--repeats 3 --rounds 2"
  [cpu_kernels]="--rounds 5 --repeats 5"
  [zoo_step_cost]="--rounds 15 --repeats 1"
  [zoo_output_ops]="--rounds 7 --repeats 5"
  [compiled_recurrences]="--rounds 5 --repeats 3"
  [run_time_breakdown]="--steps 60"
)
# Benchmarks timed on more threads than one: the quickstart step runs on two, as a bare `train.py` does.
declare -A THREADS=([training_throughput]=2)
ORDER=(ngram_baseline regbench_generation baum_welch ngram_head linear_attention_chunked gla_fast_forgetting
       mamba_training_step transformer_vs_gpt2 training_throughput regular_gpt_attention regression_training_step
       decode_per_token recurrent_mixers_chunked h3_short_form training_levers mamba_mixing_map cpu_kernels
       zoo_step_cost compiled_recurrences run_time_breakdown)
mkdir -p "$OUT"
for name in "${@:-${ORDER[@]}}"; do
  [[ -n "${ARGS[$name]+x}" ]] || { echo "unknown benchmark $name (one of: ${ORDER[*]})" >&2; exit 2; }
  echo "== $name" >&2
  # shellcheck disable=SC2086
  OMP_NUM_THREADS=${THREADS[$name]:-1} python "benchmarks/$name.py" ${ARGS[$name]} --output "$OUT/$name.json"
done
