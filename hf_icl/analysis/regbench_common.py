"""What the RegBench analyses share (P1 §5): checkpoint and rows, token ids, hidden states and attention maps.

A checkpoint is the folder `train.py` writes to `<run>/model`; its training record (`config.hf_icl_run`) names the
task and the generator settings, so the analyses rebuild exactly the rows the model was trained and tested on.
Automaton states come from `hf_icl.tasks.regbench.automaton_states`, the same run that defines the ground truth.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from ..tasks import FAMILIES, task_builder
from ..tasks.regbench import REGBENCH_VOCAB
from ..utils.atomic_files import atomic_path, write_json_atomic
from ..utils.validation import check_output_folder

TASK_FAMILY = "regbench"  # the task family whose models the RegBench analyses read (each declares it)
(TASK,) = FAMILIES[TASK_FAMILY].tasks  # its one task: the rows the analyses rebuild

TOKEN_ID = {symbol: i for i, symbol in enumerate(REGBENCH_VOCAB)}
"""RegBench symbol -> id, the order of `next_token_truth` and of the tokenizer (`.` = 0, a..r = 1..18, `|` = 19)."""


def token_ids(text: str) -> np.ndarray:
    """The ids of a RegBench text, shape (T,)."""
    return np.array([TOKEN_ID[ch] for ch in text], dtype=np.int64)


def training_record(folder: Path, flag: str = "--checkpoint") -> dict:
    """The checkpoint's training record; raises `ValueError` naming `flag` unless it is a RegBench model folder.

    Reads only `config.json`, so commands call it from `check_arguments`, before any work.
    """
    from ..evaluation.checkpoint_files import check_checkpoint_files

    config_file = Path(folder) / "config.json"
    if not config_file.is_file():
        raise ValueError(f"argument {flag}: {str(folder)!r} has no config.json (expected <run>/model from train.py)")
    try:  # damaged weights, tokenizer files or model_type: named now, not in a traceback (or a prompt) later
        check_checkpoint_files(Path(folder))
    except ValueError as err:
        raise ValueError(f"argument {flag}: {err}") from None
    config = json.loads(config_file.read_text())
    run = config.get("hf_icl_run") or {}
    family = FAMILIES[TASK_FAMILY]
    if run.get("task") not in family.tasks:
        raise ValueError(
            f"argument {flag}: {str(folder)!r} was trained on task={run.get('task')!r}; the analysis needs a "
            f"RegBench model (config.hf_icl_run.task one of: {', '.join(family.tasks)})"
        )
    return run


def load_checkpoint(folder: Path):
    """`(model, tokenizer)` of a checkpoint folder, the model in eval mode on the CPU."""
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    return model, AutoTokenizer.from_pretrained(folder)


def architecture_name(config) -> str:
    """The public architecture name of a loaded config (its registry entry's name), else its `model_type`."""
    from ..architectures import ARCHITECTURES

    for name, entry in ARCHITECTURES.items():
        if entry.config_class.model_type == config.model_type:
            return name
    return config.model_type


def regbench_rows(run: dict, split: str, n_rows: int | None = None) -> list[dict]:
    """The first `n_rows` rows of a split, generated with the training run's settings.

    Args:
        run: the training record (`training_record`), with `n_train`, `task_seed` and `task_options`.
        split: `train`, `validation` or `test`.
        n_rows: how many leading rows (default: all).
    """
    training = {option.name for option in FAMILIES[TASK_FAMILY].training_options}  # run options, not data options
    overrides = {k: v for k, v in (run.get("task_options") or {}).items() if k not in training}
    if run.get("n_train") is not None:
        overrides["n_train"] = run["n_train"]
    overrides["seed"] = run.get("task_seed") or 0
    builder = task_builder(TASK, **overrides)
    builder.download_and_prepare()
    rows = builder.as_dataset(split=split)
    count = len(rows) if n_rows is None else min(n_rows, len(rows))
    return [dict(rows[i]) for i in range(count)]


def _batches(tokenizer, texts: Sequence[str], batch_size: int) -> Iterator[tuple[list[int], dict]]:
    for start in range(0, len(texts), batch_size):
        chunk = list(range(start, min(start + batch_size, len(texts))))
        encoded = tokenizer([texts[i] for i in chunk], padding=True, padding_side="right", return_tensors="pt")
        yield chunk, {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]}


@torch.no_grad()
def hidden_states_at(
    model, tokenizer, texts: Sequence[str], positions: Sequence[np.ndarray], batch_size: int = 32
) -> torch.Tensor:
    """Hidden states of every layer at chosen positions (`output_hidden_states=True`).

    Layer 0 is the embedding output and layer ℓ the output of block ℓ (before the final norm), as in
    transformers' `hidden_states`. Right padding with a mask leaves each row's own positions exact (causal model).

    Args:
        model: a causal LM.
        tokenizer: its tokenizer.
        texts: RegBench texts.
        positions: per text, the token positions to keep.
        batch_size: texts per forward pass.

    Returns:
        Tensor of shape (L + 1, Σ len(positions), d), the rows in the order of `texts` then `positions`.
    """
    gathered = []
    for chunk, batch in _batches(tokenizer, texts, batch_size):
        states = torch.stack(model(**batch, output_hidden_states=True).hidden_states)  # (L + 1, B, T, d)
        for b, i in enumerate(chunk):
            gathered.append(states[:, b, torch.as_tensor(positions[i], dtype=torch.long)].float())  # (L + 1, P, d)
    return torch.cat(gathered, dim=1)


@torch.no_grad()
def attention_maps(model, tokenizer, texts: Sequence[str], batch_size: int = 8) -> Iterator[tuple[int, dict]]:
    """Attention maps of each text (`output_attentions=True`): softmax probabilities, or for layers with exact
    linear token-mixing maps (`mixers.ops.mixing_maps`) each row's share of absolute weight |M_ij| / Σ_j |M_ij|.

    Yields:
        `(text_index, {layer: array (H, T, T)})` for the block applications that report a map (layers numbered
        from 1, so layer ℓ's map produced `hidden_states[ℓ]`); layers without a map (LSTM) are absent.
    """
    for chunk, batch in _batches(tokenizer, texts, batch_size):
        maps = model(**batch, output_attentions=True).attentions  # per layer (B, H, T, T) or None
        maps = [m if m is None or _is_softmax(m) else m.abs() / m.abs().sum(-1, keepdim=True).clamp(min=1e-30)
                for m in maps]  # fmt: skip
        for b, i in enumerate(chunk):
            length = len(texts[i])
            yield (
                i,
                {layer + 1: m[b, :, :length, :length].float().numpy() for layer, m in enumerate(maps) if m is not None},
            )


def _is_softmax(maps) -> bool:
    """Rows are distributions already (softmax attention, Based's normalised Taylor attention)."""
    return bool((maps >= 0).all()) and bool(torch.allclose(maps.sum(-1), torch.ones(()), atol=1e-4))


def output_folder(args: argparse.Namespace) -> Path:
    """`--output`, else `analysis/` beside the (first) checkpoint folder, i.e. `<run>/analysis`."""
    if args.output is not None:
        return args.output
    checkpoint = args.checkpoint[0] if isinstance(args.checkpoint, list) else args.checkpoint
    return Path(checkpoint).resolve().parent / "analysis"


def check_output(path: Path | None) -> None:
    """`--output` must be a folder, or one that can be created (nothing is created here)."""
    if path is not None:
        check_output_folder(path, "--output")


def save_results(folder: Path, name: str, results: dict, figures: dict) -> None:
    """Write `<name>.json` and every figure (`file name -> matplotlib figure`) atomically into `folder`."""
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    for file_name, figure in figures.items():
        with atomic_path(folder / file_name) as tmp:
            figure.savefig(tmp, dpi=110, bbox_inches="tight")
        plt.close(figure)
    write_json_atomic(folder / f"{name}.json", results)


def pyplot():
    """matplotlib's pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
