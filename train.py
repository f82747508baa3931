"""`accelerate launch train.py [--architecture A] [--task T] [...]`: train an hf_icl model, then evaluate it.

With no arguments it trains RegBench's `quickstart` preset (N = 2500: a 4-layer Transformer with P1's n-gram heads)
and writes `metrics.json`, `summary.md`, `training_curves.png`, `checkpoints/` and the model (`model/`) to the output
directory. The same as `python -m hf_icl.train` (the installed package's entry point).
"""

from hf_icl.training import main

if __name__ == "__main__":
    main()
