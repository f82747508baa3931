"""The arguments of the suite's tiny `train.py` runs, in one place.

`TINY_RUN` trains the tiny Transformer on RegBench with short prompts (6-10 strings of at most 20 letters, about 90
tokens against the recipe's 380): the tests check what a run writes, resumes and refuses, not what it learns at the
recipe's length, and a step at full length cost most of a tiny run (RegularGPT's depth grows with the length: 56 s for
20 steps). `TINY_ANY_TASK` leaves out the RegBench-only options, for tests that name another `--task`.
"""

SHORT_PROMPT_OPTIONS = {"min_strings": 6, "max_strings": 10, "max_length": 20}
"""RegBench's sampling ranges for short prompts (a sweep spec gives them as `task_option.<name>`)."""
SHORT_PROMPTS = [arg for name, value in SHORT_PROMPT_OPTIONS.items() for arg in ("--task-option", f"{name}={value}")]
TINY_ANY_TASK = [
    "--architecture", "transformer", "--preset", "tiny", "--report-to", "none", "--threads", "1", "--warmup-steps", "2",
    "--n-train", "100", "--task-option", "n_test=24", "--task-option", "n_validation=8"]  # fmt: skip
TINY_RUN = [*TINY_ANY_TASK, *SHORT_PROMPTS]
