#!/usr/bin/env bash
# The P5 findings at CPU scale (issue #12): each config of experiments/in_context_regression/ trains one model with
# `train.py` (1 thread), then its metrics.json, summary.md and curves are copied to docs/results/regression/<name>/
# with the run's wall and CPU seconds. `bash experiments/in_context_regression.sh [NAME ...]` (default: every config);
# run two of these at once at most on a 2-core machine. Finished runs are kept (delete the output folder to redo).
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  names=($(ls experiments/in_context_regression/*.yaml | xargs -n1 basename | sed 's/\.yaml$//'))
fi
for name in "${names[@]}"; do
  out="outputs/in_context_regression/$name"
  results="docs/results/regression/$name"
  if [ ! -f "$out/metrics.json" ]; then
    start=$(date +%s)
    python - "$name" "$out" <<'PY'
import json, resource, sys, time
from hf_icl.training import main
name, out = sys.argv[1], sys.argv[2]
started = time.time()
main(["--config", f"experiments/in_context_regression/{name}.yaml", "--output-dir", out, "--overwrite"])
usage = resource.getrusage(resource.RUSAGE_SELF)
json.dump({"wall_s": time.time() - started, "cpu_s": usage.ru_utime + usage.ru_stime}, open(f"{out}/resources.json", "w"))
PY
    echo "$name: $(( $(date +%s) - start )) s"
  fi
  mkdir -p "$results"
  cp "$out"/metrics.json "$out"/summary.md "$out"/in_context_curves.png "$out"/training_curves.png "$out"/resources.json "$results"/
done
