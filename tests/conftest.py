import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import tempfile  # noqa: E402

import torch  # noqa: E402

# One datasets cache per test session, shared with the training subprocesses, so each task is generated once.
os.environ.setdefault("HF_DATASETS_CACHE", tempfile.mkdtemp(prefix="hf_icl_datasets_"))

torch.set_num_threads(1)
