"""`python -m hf_icl.harness --data DIR --output TASKDIR` (the console command `hf-icl lm-eval-tasks`)."""

from .tasks import main

if __name__ == "__main__":
    main()
