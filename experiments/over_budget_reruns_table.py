"""`python experiments/over_budget_reruns_table.py`: the table of the over-budget P4 search points re-run within the
budget on 2026-12-02 (docs/results/length_generalization/README.md, "Over-budget search points re-run within the
budget"). Each row reads the first run's metrics from git history (FIRST_RUNS, the commit before the re-runs) and the
re-run's from the committed file; a row whose CPU time did not change says it was not re-run.
"""

import json
import subprocess
from pathlib import Path

FIRST_RUNS = "9cf0e23"  # the commit before the re-runs
runs = [
    ("copy_mamba_search", "d128-seed0"),
    ("copy_mamba_search", "state64-seed0"),
    ("copy_mamba_search_round5", "batch32-3250-seed2"),
    ("copy_mamba_search_round5", "wd0-seed2"),
    ("copy_nope_search_round2", "L3-6000-seed0"),
    ("lookup_mamba_suffix_search", "L4-lr1e-3-6000-seed0"),
    ("lookup_mamba_suffix_search", "lr1e-3-8000-seed0"),
    ("lookup_mamba_suffix_search", "lr3e-3-9000-seed0"),
    ("lookup_transformer_search", "lookup_prefix-hard_alibi-L3-lr1e-3-seed0"),
    ("lookup_transformer_search", "lookup_suffix-hard_alibi-L3-lr1e-3-seed0"),
]
print("| experiment | run | threads | first run: CPU s | validation | re-run: CPU s | validation |")
print("|---|---|---|---|---|---|---|")
for exp, name in runs:
    path = f"docs/results/length_generalization/{exp}/{name}_metrics.json"
    shown = subprocess.run(["git", "show", f"{FIRST_RUNS}:{path}"], capture_output=True, text=True, check=True)
    old = json.loads(shown.stdout)
    new = json.loads(Path(path).read_text())
    same = old["train"]["cpu_time_s"] == new["train"]["cpu_time_s"]

    def v(m):
        return f"{m['validation']['model']['string_accuracy']:.3f}"

    print(
        f"| `{exp}` | `{name}` | {old['train'].get('threads', 1)} | {old['train']['cpu_time_s']:,.0f} | {v(old)} | "
        + ("not re-run yet | – |" if same else f"{new['train']['cpu_time_s']:,.0f} | {v(new)} |")
    )
