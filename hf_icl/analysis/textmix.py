"""Slow/fast Transformer analyses on text mixtures (P3 §4.3, App. E; Figs. 12, 13, 14, 16; issue 27).

`python -m hf_icl.analysis textmix --checkpoint DIR --output DIR` reads a slow/fast model trained on `text_mixture`
and writes `textmix_analysis.json` and three PNGs:

- **joins** (`textmix_joins.png`, P3 Figs. 12b and 16): n_i·n_j with n = y^ℓ/‖y^ℓ‖ on held-out mixtures of two
  excerpts (the split's rows) and of three (built from its documents, out of distribution as in App. E). The
  blocks are measured per row as the mean n_i·n_j within an excerpt minus the mean across excerpts (`contrast`),
  and the *lag*: the positions after a join until n_p is nearer (cosine) to the new excerpt's mean n than to the old
  one's. The same numbers for the fast stream's x^ℓ are the control: slow features should mark the join more
  sharply than the fast state they are computed from;
- **embedding** (`textmix_embedding.png`, P3 Figs. 4.3 and 14, t-SNE of pages by category): ⟨y⟩ over
  single-document excerpts of the held-out documents, in 2-D (t-SNE), and the leave-one-out 1-nearest-neighbour
  (cosine) accuracy of the excerpt's document from ⟨y⟩, beside the same accuracy from ⟨x^ℓ⟩ and from the excerpt's
  character histogram (a bag-of-characters control: documents differ in their characters too) and chance;
- **informed vs uninformed** (`textmix_informed.png`, P3 Figs. 12a and 13): a held-out document's second part
  (positions L … 2L − 1) scored with its own dynamic y (uninformed), with y started at the first part's last y^ℓ and
  moved on at γ = 1/300 (informed), with that y frozen (specialised), and — the control — informed by *another*
  document's first part (mismatched). Per-position cross-entropy minus the uninformed one, averaged over
  documents; informed below zero means the first part's y carries its topic.

Every measurement reads one held-out split, `--split test` (the default, for verdicts) or `--split validation` (for a
recipe search), never both: the corpus assigns every 10th document to test and the one after it to validation
(`hf_icl.tasks.documents.split_documents`), so a setting chosen on validation is rated on documents it never saw.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM, AutoTokenizer

from ..tasks.documents import load_documents, split_documents
from ..tasks.text_mixture import CONFIG_FIELDS, TextMixtureConfig, sample_mixtures
from ..tasks.text_mixture.spec import FAMILY as TEXT_MIXTURE
from ..tasks.text_mixture.text_mixture import split_rng
from ..utils.validation import POSITIVE_INT, SEED, Limit, check_limits, check_output_folder

COMMAND = "textmix"  # python -m hf_icl.analysis textmix
TASK_FAMILY = "text_mixture"  # the task family whose models it reads (`python -m hf_icl.analysis --help`)
DESCRIPTION = """P3 slow/fast analyses on text mixtures: join blocks of n_i·n_j, ⟨y⟩ as a document embedding, informed
vs uninformed cross-entropy.

Writes textmix_analysis.json, textmix_joins.png, textmix_embedding.png and textmix_informed.png."""

LIMITS = {
    "n_rows": POSITIVE_INT,
    "excerpts_per_document": POSITIVE_INT,
    "update_rate": Limit(float, low=0.0, high=1.0),
    "seed": SEED,
    "threads": Limit(int, low=1, high=1024),
}
"""The allowed range of every numeric argument."""

SPLITS = ("test", "validation")
"""The held-out splits an analysis can read: test for verdicts, validation for a recipe search."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--checkpoint", required=True, type=Path, help="slow/fast model folder trained on text_mixture")
    parser.add_argument("--output", required=True, type=Path, help="folder for the JSON and PNGs")
    parser.add_argument("--split", default="test", choices=SPLITS,
                        help="the held-out split whose documents and mixtures are measured: test (default, for "
                             "verdicts) or validation (for a recipe search)")  # fmt: skip
    parser.add_argument("--n-rows", type=int, default=200, help="the split's mixtures for the joins (default 200)")
    parser.add_argument("--excerpts-per-document", type=int, default=8, help="embedding excerpts per document")
    parser.add_argument("--update-rate", type=float, default=1 / 300, help="γ of the informed mode (P3: 1/300)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the three-excerpt mixtures and of t-SNE")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")


def check_arguments(args: argparse.Namespace) -> None:
    """Every argument before any model is loaded: the ranges, the model folder and the output folder."""
    check_limits(args, LIMITS)
    if not (args.checkpoint / "config.json").is_file():
        raise ValueError(
            f"argument --checkpoint: {str(args.checkpoint)!r} has no config.json (a save_pretrained folder)"
        )
    check_output_folder(args.output, "--output")


# --- measurements (pure functions, tested against hand-built cases) ------------------------------------------------


def normalise(features: torch.Tensor) -> torch.Tensor:
    """n = f / ‖f‖ along the last axis."""
    return features / features.norm(dim=-1, keepdim=True).clamp(min=1e-6)


def join_contrast(features: torch.Tensor, boundaries: list[int]) -> float:
    """Mean n_i·n_j within an excerpt minus the mean across excerpts, for one row (T, d) cut at `boundaries`."""
    n = normalise(features)
    similarity = n @ n.T  # (T, T)
    segment = torch.zeros(len(n), dtype=torch.long)
    for boundary in boundaries:
        segment[boundary:] += 1
    same = segment[:, None] == segment[None, :]
    return float(similarity[same].mean() - similarity[~same].mean())


def join_lag(features: torch.Tensor, boundary: int, end: int | None = None) -> int:
    """Positions after `boundary` until n_p is nearer to the new excerpt's mean n than to the previous one's.

    The previous excerpt is [0, boundary) (or from the last boundary), the new one [boundary, end); returns
    `end − boundary` when it never switches.
    """
    n = normalise(features)
    end = len(n) if end is None else end
    before, after = normalise(n[:boundary].mean(0)), normalise(n[boundary:end].mean(0))
    nearer = (n[boundary:end] @ after) > (n[boundary:end] @ before)
    switched = torch.nonzero(nearer)
    return int(switched[0]) if len(switched) else end - boundary


def nearest_neighbour_accuracy(embeddings: np.ndarray, labels: list) -> float:
    """Leave-one-out 1-NN accuracy under cosine similarity."""
    n = embeddings / np.maximum(np.linalg.norm(embeddings, axis=1, keepdims=True), 1e-12)
    similarity = n @ n.T
    np.fill_diagonal(similarity, -np.inf)
    labels = np.asarray(labels)
    return float((labels[similarity.argmax(1)] == labels).mean())


def chance_accuracy(labels: list) -> float:
    """1-NN accuracy of a random neighbour: the mean over items of (same-label others) / (others)."""
    labels = np.asarray(labels)
    same = (labels[:, None] == labels[None, :]).sum(1) - 1
    return float((same / (len(labels) - 1)).mean())


def character_histograms(ids: torch.Tensor, vocabulary: int) -> np.ndarray:
    """(N, V) relative character frequencies of each row."""
    counts = torch.zeros(len(ids), vocabulary).scatter_add_(1, ids, torch.ones_like(ids, dtype=torch.float))
    return (counts / counts.sum(1, keepdim=True)).numpy()


# --- model passes --------------------------------------------------------------------------------------------------


@torch.no_grad()
def slow_and_fast(model, ids: torch.Tensor, batch_size: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    """y^ℓ and the fast state x^ℓ after the same ℓ blocks, each (N, T, d), from one forward per batch (the model in
    eval mode, so y^ℓ is what `compute_slow_features` returns)."""
    ell = model.config.slow_layer
    slow, fast = [], []
    for start in range(0, len(ids), batch_size):
        record = {}
        outputs = model(
            ids[start : start + batch_size], output_hidden_states=True, block_context={"slow_record": record}
        )
        slow.append(record["features"])
        fast.append(outputs.hidden_states[ell])  # [0] is the embedding
    return torch.cat(slow).float(), torch.cat(fast).float()


@torch.no_grad()
def token_losses(model, ids: torch.Tensor, **kwargs) -> torch.Tensor:
    """(N, T − 1) next-token cross-entropy (nats) of `model(ids, **kwargs)`."""
    logits = model(ids, **kwargs).logits[:, :-1].float()  # (N, T − 1, V)
    return F.cross_entropy(logits.transpose(1, 2), ids[:, 1:], reduction="none")


def informed_losses(model, first: torch.Tensor, second: torch.Tensor, rate: float) -> dict[str, torch.Tensor]:
    """Per-position losses on `second` (N, L): uninformed, informed, frozen and mismatched (module docstring)."""
    start = model.model.compute_slow_features(first)[:, -1]  # (N, d_y): y^ℓ at the end of the first part
    others = start.roll(1, dims=0)  # another document's first part
    return {
        "uninformed": token_losses(model, second),
        "informed": token_losses(model, second, slow_features=start, slow_update_rate=rate),
        "frozen": token_losses(model, second, slow_features=start),
        "mismatched": token_losses(model, second, slow_features=others, slow_update_rate=rate),
    }


# --- data ----------------------------------------------------------------------------------------------------------


def task_config(model) -> TextMixtureConfig:
    """The text-mixture layout the checkpoint trained on (its `task_options`; the class defaults otherwise)."""
    run = getattr(model.config, "hf_icl_run", None) or {}
    if run and run.get("task") not in TEXT_MIXTURE.tasks:
        raise ValueError(f"argument --checkpoint: trained on {run.get('task')!r}, not {TEXT_MIXTURE.name}")
    options = {k: v for k, v in (run.get("task_options") or {}).items() if k in CONFIG_FIELDS and k != "seed"}
    return TextMixtureConfig(name="analysis", seed=run.get("task_seed", 0), **options)


def held_out_documents(documents: dict[str, str], split: str, length: int) -> dict[str, str]:
    """The documents of the held-out `split` (test or validation) of at least `length` characters."""
    if split not in SPLITS:
        raise ValueError(f"split: {split!r} is not one of {', '.join(SPLITS)}")
    return {name: documents[name] for name in split_documents(documents, split) if len(documents[name]) >= length}


def encode(tokenizer, texts: list[str]) -> torch.Tensor:
    return torch.tensor(tokenizer(texts)["input_ids"], dtype=torch.long)


def three_excerpt_rows(documents: dict[str, str], length: int, count: int, rng) -> tuple[list[str], list[list[int]]]:
    """`count` rows of three excerpts of distinct documents, joined at thirds of `length`."""
    names, size = sorted(documents), length // 3
    sizes = [size, size, length - 2 * size]
    texts = []
    for _ in range(count):
        parts = []
        for name, part in zip(rng.choice(len(names), size=3, replace=False), sizes):
            text = documents[names[name]]
            start = int(rng.integers(0, len(text) - part + 1))
            parts.append(text[start : start + part])
        texts.append("".join(parts))
    return texts, [[size, 2 * size]] * count


def mixture_rows(
    documents: dict[str, str], config: TextMixtureConfig, count: int, split: str
) -> tuple[list[str], list[list[int]]]:
    """The first `count` rows of the checkpoint's `split` (the builder's sampler and stream; no cache written)."""
    rows = sample_mixtures(documents, split_documents(documents, split), config, count, split_rng(config, split))
    return [row["text"] for row in rows], [[row["cut"]] for row in rows]


# --- the command ---------------------------------------------------------------------------------------------------


def joins(model, tokenizer, texts, boundaries) -> dict:
    slow, fast = slow_and_fast(model, encode(tokenizer, texts))
    result = {"rows": len(texts)}
    for name, features in (("y", slow), ("x", fast)):
        contrasts = [join_contrast(f, b) for f, b in zip(features, boundaries)]
        lags = [join_lag(f, b[0], b[1] if len(b) > 1 else None) for f, b in zip(features, boundaries)]
        result[name] = {"contrast": float(np.mean(contrasts)), "contrast_sd": float(np.std(contrasts)),
                        "lag_median": float(np.median(lags)), "lag_mean": float(np.mean(lags))}  # fmt: skip
    return result | {"_example": (slow[0], fast[0], boundaries[0])}


def embedding(model, tokenizer, documents: dict[str, str], length: int, per_document: int, seed: int) -> dict:
    texts, labels = [], []
    for name, text in documents.items():
        for k in range(min(per_document, len(text) // length)):
            texts.append(text[k * length : (k + 1) * length])
            labels.append(name)
    ids = encode(tokenizer, texts)
    slow, fast = slow_and_fast(model, ids)
    mean_y, mean_x = slow.mean(1).numpy(), fast.mean(1).numpy()
    histograms = character_histograms(ids, len(tokenizer))
    result = {
        "excerpts": len(texts),
        "documents": len(set(labels)),
        "nearest_neighbour_accuracy": {
            "mean y": nearest_neighbour_accuracy(mean_y, labels),
            "mean x (fast state, control)": nearest_neighbour_accuracy(mean_x, labels),
            "character histogram (control)": nearest_neighbour_accuracy(histograms, labels),
            "chance": chance_accuracy(labels),
        },
    }
    from sklearn.manifold import TSNE

    perplexity = float(min(30, max(2, len(texts) // 4)))
    points = TSNE(n_components=2, perplexity=perplexity, random_state=seed, init="pca").fit_transform(mean_y)
    return result | {"_points": (points, labels)}


def informed(model, tokenizer, documents: dict[str, str], length: int, rate: float) -> dict:
    texts = list(documents.values())
    first = encode(tokenizer, [t[:length] for t in texts])
    second = encode(tokenizer, [t[length : 2 * length] for t in texts])
    losses = informed_losses(model, first, second, rate)
    means = {name: float(value.mean()) for name, value in losses.items()}
    curves = {name: (value - losses["uninformed"]).mean(0) for name, value in losses.items() if name != "uninformed"}
    return {
        "documents": len(texts),
        "length": length,
        "update_rate": rate,
        "mean_loss": means,
        "mean_difference_to_uninformed": {name: float(curve.mean()) for name, curve in curves.items()},
        "share_of_positions_below_uninformed": {
            name: float((curve < 0).float().mean()) for name, curve in curves.items()
        },
        "_curves": {name: curve.numpy() for name, curve in curves.items()},
    }


def run(args: argparse.Namespace) -> dict:
    torch.set_num_threads(args.threads)
    model = AutoModelForCausalLM.from_pretrained(args.checkpoint).eval()
    if not hasattr(model.model, "compute_slow_features"):
        raise ValueError(f"argument --checkpoint: a {model.config.model_type} has no slow features (a slow/fast model)")
    tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)
    config = task_config(model)
    length = config.l_max
    corpus = load_documents(config)
    documents = held_out_documents(corpus, args.split, 2 * length)
    if len(documents) < 3:
        raise ValueError(f"argument --checkpoint: its corpus has {len(documents)} {args.split} documents of ≥ "
                         f"{2 * length} characters; the analysis needs 3")  # fmt: skip
    texts, boundaries = mixture_rows(corpus, config, args.n_rows, args.split)
    rng = np.random.default_rng(args.seed)
    three_texts, three_boundaries = three_excerpt_rows(documents, length, args.n_rows, rng)
    results = {
        "checkpoint": str(args.checkpoint),
        "task": {k: getattr(config, k) for k in ("source", "l_start", "l_finish", "l_max")},
        "split": args.split,
        "held_out_documents": len(documents),
        "joins": {
            "two_excerpts": joins(model, tokenizer, texts, boundaries),
            "three_excerpts": joins(model, tokenizer, three_texts, three_boundaries),
        },  # fmt: skip
        "embedding": embedding(model, tokenizer, documents, length, args.excerpts_per_document, args.seed),
        "informed": informed(model, tokenizer, documents, length, args.update_rate),
    }
    args.output.mkdir(parents=True, exist_ok=True)
    plot_all(args.output, results)
    public = strip_private(results)
    (args.output / "textmix_analysis.json").write_text(json.dumps(public, indent=2) + "\n")
    print(json.dumps({k: public[k] for k in ("joins", "embedding", "informed")}, indent=2))
    return public


def strip_private(value):
    """The results without the `_`-prefixed plotting payloads."""
    if isinstance(value, dict):
        return {k: strip_private(v) for k, v in value.items() if not k.startswith("_")}
    return value


def plot_all(output: Path, results: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 9.5))
    for row, key in enumerate(("two_excerpts", "three_excerpts")):
        slow, fast, boundaries = results["joins"][key]["_example"]
        for ax, features, name in zip(axes[row], (slow, fast), ("y^ℓ (slow)", "x^ℓ (fast, control)")):
            n = normalise(features)
            image = ax.imshow((n @ n.T).numpy(), cmap="viridis", vmin=-1, vmax=1)
            for boundary in boundaries:
                ax.axhline(boundary - 0.5, color="white", linewidth=0.7)
                ax.axvline(boundary - 0.5, color="white", linewidth=0.7)
            ax.set(title=f"n_i · n_j of {name}, {key.replace('_', ' ')}", xlabel="position j", ylabel="position i")
    fig.colorbar(image, ax=axes, shrink=0.6)
    fig.savefig(output / "textmix_joins.png", dpi=90)
    plt.close(fig)

    points, labels = results["embedding"]["_points"]
    fig, ax = plt.subplots(figsize=(7, 6))
    for index, name in enumerate(sorted(set(labels))):
        chosen = np.asarray(labels) == name
        ax.scatter(points[chosen, 0], points[chosen, 1], s=18, color=plt.cm.tab20(index % 20), label=name)
    accuracy = results["embedding"]["nearest_neighbour_accuracy"]
    ax.set(title=f"t-SNE of ⟨y⟩ per excerpt (1-NN document accuracy {accuracy['mean y']:.2f}, "
                 f"chance {accuracy['chance']:.2f})")  # fmt: skip
    ax.legend(fontsize=6, ncol=2, loc="best")
    fig.tight_layout()
    fig.savefig(output / "textmix_embedding.png", dpi=90)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 4))
    for name, curve in results["informed"]["_curves"].items():
        smooth = np.convolve(curve, np.ones(8) / 8, mode="valid")
        ax.plot(np.arange(len(smooth)) + 4, smooth, label=name)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set(xlabel="position in the second part", ylabel="cross-entropy − uninformed (nats, 8-token mean)",
           title="Informed vs uninformed (P3 Fig. 13); mismatched: another document's y")  # fmt: skip
    ax.legend()
    fig.tight_layout()
    fig.savefig(output / "textmix_informed.png", dpi=90)
    plt.close(fig)
