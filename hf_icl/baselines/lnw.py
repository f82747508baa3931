"""Learned n-gram reweighting: LNW, LNW_r and LNW_b (P1 §5.3, Appendix D eq. 95–96; DESIGN §5.8).

Features of position i (after reading x_{1:i}, predicting x_{i+1}), for n = 1 … 3 and every w in the vocabulary:

    gram(i; n)[w] = count in x_{1:i} of the n-gram (x_{i−n+2} … x_i, w)        (eq. 95, as the authors ran it)
    gram(i; ≤3)   = concatenate(gram(i; 1), gram(i; 2), gram(i; 3)) ∈ Z^{3|V|}   (eq. 96)

so n = 1 is the unigram count of w, n = 2 the count of w after x_i and n = 3 after x_{i−1} x_i (§5.3: "contexts
matching the last 1 and 2 tokens of the input, as well as the empirical unigram distribution"). The instance is
read as if preceded by ``||`` (berlino/seq_icl ``get_smoothing_mlp_probs.py`` starts its history at ``|||``), so the
first string's opening n-grams count like those after any ``|``. Eq. 95's indexing x_{i−n}^{i−1} and its "− 1" do
not appear in that code and are not applied: for counts the shift is absorbed by the first layer's bias, for
frequencies it would make the normaliser negative, and existence is ``count > 0`` either way.

Variants: ``counts`` (LNW; fed to the MLP divided by 100, as in the authors' code), ``frequencies`` (LNW_r: each
block divided by its sum, a zero block stays zero) and ``existence`` (LNW_b: 1[count > 0]). The model is a 2-layer
GeLU MLP (hidden 1024) from gram(i; ≤3) to next-token logits, trained with the LM loss (:func:`train_lnw`).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import nn

from ..utils.atomic_files import write_folder_atomic, write_json_atomic
from .ngram import check_regbench_text

REGBENCH_VOCAB: list[str] = [".", *"abcdefghijklmnopqr", "|"]
"""RegBench's reference token order (P1's code), as ``hf_icl.tasks.regbench.REGBENCH_VOCAB``: the feature columns."""

VARIANTS = ("counts", "frequencies", "existence")
PAPER_NAMES = {"counts": "LNW", "frequencies": "LNW_r", "existence": "LNW_b"}
TRAINING_PRESETS = {"paper": {"epochs": 50}, "cpu": {"epochs": 10}}
"""Epochs per preset: the paper's 50, and a CPU budget (~18 CPU s an epoch at N = 2500, ~9 minutes for all three)."""
COUNT_SCALE = 100.0  # the authors divide raw counts by 100 before the MLP
CONFIG_NAME, WEIGHTS_NAME = "config.json", "model.safetensors"
_TOKEN_ID = {symbol: i for i, symbol in enumerate(REGBENCH_VOCAB)}
SEP_ID = _TOKEN_ID["|"]


def _check_variant(variant: str) -> None:
    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r} is not one of: {', '.join(VARIANTS)}")


def token_ids(text: str) -> np.ndarray:
    """RegBench ids (``REGBENCH_VOCAB`` order) of a problem instance; raises on symbols outside ``a``..``r``, ``|``."""
    bad = set(text) - set("abcdefghijklmnopqr|")
    if bad:
        raise ValueError(f"text contains {sorted(bad)!r}: only a..r and '|' are allowed")
    return np.array([_TOKEN_ID[c] for c in text], dtype=np.int64)


def ngram_counts(ids: np.ndarray, n: int, vocab_size: int = len(REGBENCH_VOCAB)) -> np.ndarray:
    """gram(i; n) for every prefix, without a Python loop over positions: O(T log T + T·V).

    Events are the n-grams ending at j = 0 … T−1 (left-padded with ``|``), keyed by (context, j) and sorted; the
    count of (context c, w) up to position i is a difference of two rows of the cumulative one-hot of w.

    Args:
        ids: token ids of one instance, shape (T,).
        n: n-gram order (>= 1).
        vocab_size: size of the vocabulary the counts range over.

    Returns:
        Int array (T−1, V): row i counts, for each w, the n-grams (x_{i−n+2} … x_i, w) ending at or before i.
    """
    T = len(ids)
    padded = np.concatenate([np.full(n - 1, SEP_ID, dtype=np.int64), ids])  # (T + n − 1,)
    context = np.zeros(T, dtype=np.int64)  # (T,) id of the (n−1)-gram before position j
    for k in range(n - 1):
        context = context * vocab_size + padded[k : k + T]
    keys = context * T + np.arange(T)  # (T,) unique, sorted by (context, j)
    order = np.argsort(keys, kind="stable")
    cumulative = np.zeros((T + 1, vocab_size), dtype=np.int64)  # (T + 1, V)
    np.cumsum(np.eye(vocab_size, dtype=np.int64)[ids[order]], axis=0, out=cumulative[1:])
    query = context[1:]  # (T − 1,) the context that predicts x_{i+1} is the one of the n-gram ending at i + 1
    sorted_keys = keys[order]
    start = np.searchsorted(sorted_keys, query * T, side="left")  # first event with that context
    end = np.searchsorted(sorted_keys, query * T + np.arange(T - 1), side="right")  # events with j <= i
    return cumulative[end] - cumulative[start]  # (T − 1, V)


def ngram_features(text: str, variant: str, order: int = 3) -> np.ndarray:
    """gram(i; ≤ order) of every prefix ``text[: i + 1]``, as LNW (counts), LNW_r (frequencies) or LNW_b (existence).

    Args:
        text: a RegBench problem instance.
        variant: ``"counts"``, ``"frequencies"`` or ``"existence"``.
        order: highest n-gram order (the paper's 3).

    Returns:
        Float32 array (len(text) − 1, order · 20): raw counts (not yet divided by 100), per-block frequencies or
        0/1 existence, block n−1 holding order n, columns in ``REGBENCH_VOCAB`` order.
    """
    check_regbench_text(text)
    _check_variant(variant)
    if not isinstance(order, (int, np.integer)) or order < 1:
        raise ValueError(f"order={order!r} is not allowed: expected an integer >= 1")
    ids = token_ids(text)
    blocks = [ngram_counts(ids, n).astype(np.float32) for n in range(1, order + 1)]  # each (T − 1, V)
    if variant == "frequencies":
        blocks = [b / np.where(b.sum(-1, keepdims=True) > 0, b.sum(-1, keepdims=True), 1) for b in blocks]
    elif variant == "existence":
        blocks = [(b > 0).astype(np.float32) for b in blocks]
    return np.concatenate(blocks, axis=1)  # (T − 1, order · V)


@dataclass
class LNWConfig:
    variant: str = "frequencies"
    order: int = 3
    hidden_size: int = 1024
    vocab_size: int = len(REGBENCH_VOCAB)


class LearnedNgramReweighting(nn.Module):
    """LNW / LNW_r / LNW_b: a 2-layer GeLU MLP from in-context n-gram features to next-token logits (P1 App. D).

    Args:
        variant: ``"counts"`` (LNW), ``"frequencies"`` (LNW_r) or ``"existence"`` (LNW_b).
        order: highest n-gram order of the features (3 in the paper).
        hidden_size: MLP width (1024 in the paper).
        vocab_size: RegBench vocabulary size (20).
    """

    def __init__(self, variant: str = "frequencies", order: int = 3, hidden_size: int = 1024, vocab_size: int = 20):
        super().__init__()
        _check_variant(variant)
        self.config = LNWConfig(variant, order, hidden_size, vocab_size)
        self.input_scale = 1.0 / COUNT_SCALE if variant == "counts" else 1.0
        self.mlp = nn.Sequential(
            nn.Linear(order * vocab_size, hidden_size), nn.GELU(), nn.Linear(hidden_size, vocab_size)
        )

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """Logits (..., V) from features (..., order · V) as returned by :func:`ngram_features`."""
        return self.mlp(features * self.input_scale)

    @torch.no_grad()
    def predict_proba(self, text: str) -> np.ndarray:
        """Next-token distributions after every prefix ``text[: i + 1]``, like ``InContextNGram.predict_proba``.

        Args:
            text: a RegBench problem instance.

        Returns:
            Float64 array (len(text) − 1, 20) in ``REGBENCH_VOCAB`` order (softmax over the whole vocabulary).
        """
        features = torch.from_numpy(ngram_features(text, self.config.variant, self.config.order))
        logits = self(features.to(next(self.parameters()).device))  # (T − 1, V)
        return torch.softmax(logits.double(), dim=-1).cpu().numpy()

    def save_pretrained(self, folder: str | Path) -> None:
        """Write ``config.json`` and ``model.safetensors`` into ``folder`` (replaced as a whole, atomically)."""

        def write(tmp: Path) -> None:
            save_file({k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}, tmp / WEIGHTS_NAME)
            write_json_atomic(tmp / CONFIG_NAME, {"model_type": "lnw", **asdict(self.config)})

        write_folder_atomic(folder, write)

    @classmethod
    def from_pretrained(cls, folder: str | Path) -> LearnedNgramReweighting:
        """Load a model written by :meth:`save_pretrained`."""
        config = json.loads((Path(folder) / CONFIG_NAME).read_text())
        config.pop("model_type", None)
        model = cls(**config)
        model.load_state_dict(load_file(Path(folder) / WEIGHTS_NAME))
        return model.eval()

    def __repr__(self) -> str:
        return f"LearnedNgramReweighting({PAPER_NAMES[self.config.variant]}, {self.config})"


@dataclass
class SplitFeatures:
    """All positions of a split: ``features`` (P, F), ``targets`` (P,) and per-row ``offsets`` (rows + 1,)."""

    features: torch.Tensor
    targets: torch.Tensor
    offsets: np.ndarray

    def rows(self, indices) -> tuple[torch.Tensor, torch.Tensor]:
        spans = [slice(self.offsets[i], self.offsets[i + 1]) for i in indices]
        return torch.cat([self.features[s] for s in spans]), torch.cat([self.targets[s] for s in spans])


def featurise(texts: list[str], variant: str, order: int = 3, train_on_delimiter: bool = True) -> SplitFeatures:
    """Features and next-token targets of every position of every text, computed once per split.

    Args:
        texts: RegBench instances.
        variant: feature variant.
        order: highest n-gram order.
        train_on_delimiter: keep ``|`` targets (as the models train by default); ``False`` masks them with -100,
            as the authors' LNW script did. ``|`` is never scored either way.
    """
    features = [ngram_features(t, variant, order) for t in texts]
    targets = [token_ids(t)[1:] for t in texts]
    if not train_on_delimiter:
        targets = [np.where(t == SEP_ID, -100, t) for t in targets]
    offsets = np.concatenate([[0], np.cumsum([len(t) for t in targets])])
    return SplitFeatures(torch.from_numpy(np.concatenate(features)), torch.from_numpy(np.concatenate(targets)), offsets)


@torch.no_grad()
def mean_loss(model: LearnedNgramReweighting, split: SplitFeatures, chunk: int = 65536) -> float:
    """Token cross-entropy over every (unmasked) position of a split."""
    total, count = 0.0, 0
    for start in range(0, len(split.targets), chunk):
        targets = split.targets[start : start + chunk]
        total += float(F.cross_entropy(model(split.features[start : start + chunk]), targets, reduction="sum"))
        count += int((targets != -100).sum())
    return total / max(count, 1)


def train_lnw(
    variant: str,
    train_rows,
    validation_rows=None,
    epochs: int = 50,
    batch_size: int = 32,
    lr: float = 1e-3,
    betas: tuple[float, float] = (0.9, 0.99),
    seed: int = 0,
    train_on_delimiter: bool = True,
    patience: int = 5,
    factor: float = 0.5,
    min_lr: float = 1e-5,
    hidden_size: int = 1024,
    order: int = 3,
    log=None,
) -> tuple[LearnedNgramReweighting, list[dict]]:
    """Train LNW / LNW_r / LNW_b with the LM loss on RegBench rows (P1 App. D hyper-parameters as defaults).

    Adam (``lr``, ``betas``); ``ReduceLROnPlateau(patience, factor, min_lr)`` stepped once per epoch on the
    validation loss (the training loss when no validation rows are given, as the authors' script did). A batch is
    ``batch_size`` rows (all their positions); rows are shuffled every epoch from ``seed``.

    Args:
        variant: ``"counts"``, ``"frequencies"`` or ``"existence"``.
        train_rows: RegBench rows (mappings with ``text``) or strings.
        validation_rows: rows for the plateau schedule and the curve, or ``None``.
        epochs, batch_size, lr, betas, patience, factor, min_lr: optimisation (paper values by default).
        seed: initialisation and shuffling seed.
        train_on_delimiter: train on ``|`` targets (see :func:`featurise`).
        hidden_size, order: model size and feature order.
        log: optional callable receiving each epoch's record.

    Returns:
        ``(model, history)``: the trained model (eval mode) and one record per epoch
        (``epoch``, ``train_loss``, ``validation_loss``, ``lr``, ``seconds``).
    """
    _check_variant(variant)
    texts = [r if isinstance(r, str) else r["text"] for r in train_rows]
    train = featurise(texts, variant, order, train_on_delimiter)
    validation = None
    if validation_rows is not None:
        val_texts = [r if isinstance(r, str) else r["text"] for r in validation_rows]
        validation = featurise(val_texts, variant, order, train_on_delimiter)
    torch.manual_seed(seed)
    model = LearnedNgramReweighting(variant, order, hidden_size)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=betas)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=factor, patience=patience, min_lr=min_lr)
    generator = torch.Generator().manual_seed(seed)
    history, started = [], time.perf_counter()
    for epoch in range(1, epochs + 1):
        model.train()
        total, count = 0.0, 0
        for batch in torch.randperm(len(texts), generator=generator).split(batch_size):
            features, targets = train.rows(batch.tolist())
            loss = F.cross_entropy(model(features), targets)  # mean over unmasked positions
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            n = int((targets != -100).sum())
            total, count = total + loss.item() * n, count + n
        model.eval()
        record = {"epoch": epoch, "train_loss": total / max(count, 1), "lr": optimizer.param_groups[0]["lr"]}
        record["validation_loss"] = mean_loss(model, validation) if validation is not None else None
        scheduler.step(record["validation_loss"] if validation is not None else record["train_loss"])
        record["seconds"] = time.perf_counter() - started
        history.append(record)
        if log is not None:
            log(record)
    return model.eval(), history
