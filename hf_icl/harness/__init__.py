"""lm-evaluation-harness tasks for hf_icl's benchmarks, run offline against a local dataset export.

`hf-icl lm-eval-tasks --data DIR --output TASKDIR` (or `python -m hf_icl.harness`) writes the task YAMLs for the
exports in DIR (`python -m hf_icl.export ...`); then `lm_eval --model hf --model_args pretrained=MODEL,
trust_remote_code=True --tasks hf_icl_regbench --include_path TASKDIR` scores any Hugging Face causal LM.

- :mod:`.spec`: :class:`HarnessTask` and :class:`HarnessGroup`, what a task family declares in its folder's
  ``harness.py`` (``hf_icl/tasks/regbench/harness.py``, ``hf_icl/tasks/generation/harness.py``);
- :mod:`.tasks`: the command that finds those declarations and writes the YAMLs.

Nothing here imports ``lm_eval``: the YAMLs import the family modules' document and scoring functions when lm-eval
loads them (``pip install "hf-icl[eval]"``).
"""
