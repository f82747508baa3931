"""`accelerate launch train.py [--architecture A] [--task T] [...]`: train an hf_icl model, then evaluate it.

With no arguments it trains the default small Transformer on RegBench (N=2500) in a few CPU minutes and writes
`metrics.json`, `summary.md`, `training_curves.png` and a checkpoint folder (`model/`) to the output directory.
"""

from hf_icl.training import main

if __name__ == "__main__":
    main()
