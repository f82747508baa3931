"""Attention maps with automaton annotations, and the n-gram-head signature of every head (P1 §5.1, Fig. 3).

`python -m hf_icl.analysis attention --checkpoint DIR [--instance K]` writes `attention.json` and two PNGs:

- `attention_maps.png`: one heatmap per layer (rows) and head (columns) for test instance K, each axis labelled
  with the token and the true automaton state after it (`automaton_states`: the state that emits the next token);
- `attention_ngram_heads.png`: per head, the attention mass on the keys each signature selects, averaged over the
  query positions of `--n-rows` test rows that have at least one such key, next to what a uniform causal head puts
  there (the chance level).

Signatures. P1 §5.1 describes the layer-5 head of Fig. 3 as attending "to tokens *following* 2-grams matching the
most recent 2-gram": for an input ending in `nh` it attends to every X in `nhX`. We read eq. (10) through Fig. 7's
code (as `hf_icl/mixers/ngram.py` does, with shift 1): key j *follows the current k-gram* at query i when

    x_{j−k..j−1} = x_{i−k+1..i},   k ≤ j ≤ i,

i.e. the k tokens ending at j − 1 equal the k tokens ending at i (not the k tokens ending at j). k = 1 is the
induction head, k = 2 the Fig. 3 head; such a head reads the (k+1)-gram statistics, i.e. with the issue's wording
"positions that share the current (n−1)-gram", k = n − 1 (n = 1, an empty context, would select every key, so
`--orders` counts the matched tokens k, default 1 2 3). Three more signatures frame them: `previous_token`
(j = i − 1, Fig. 3's layers 2–3), `current_token` (j = i) and `same_state` (x_j was emitted from the current state:
state after x_{j−1} = state after x_i), which §5.1 notes the heads do *not* single out. Tokens are the raw stream,
`|` included.

Architectures without softmax attention are analysed on their exact token-mixing maps (`output_attentions=True`,
`mixers/ops/mixing_maps.py`: linear attention, RetNet, GLA, DeltaNet, Mamba, ...). Those rows are neither
non-negative nor normalised, so each row is read as the share of its absolute weight, |M_ij| / Σ_j |M_ij| (the
"mass" of a key), and the chance level is the same uniform causal head.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

from ..tasks.regbench import VOCAB_SIZE, automaton_states
from ..utils.validation import POSITIVE_INT, Limit, check_limits
from . import regbench_common as common

COMMAND = "attention"  # python -m hf_icl.analysis attention
TASK_FAMILY = common.TASK_FAMILY  # the task family whose models it reads (`python -m hf_icl.analysis --help`)
DESCRIPTION = """P1 §5.1 attention maps with automaton states on the axes, and per-head n-gram-head mass.

Writes attention.json, attention_maps.png (one test instance) and attention_ngram_heads.png (test rows)."""


def follows_kgram_mask(tokens: np.ndarray, k: int) -> np.ndarray:
    """(T, T) bool: key j follows an occurrence of the k-gram ending at query i (x_{j−k..j−1} = x_{i−k+1..i}, j ≤ i).

    Args:
        tokens: token ids, shape (T,).
        k: matched tokens (≥ 1).
    """
    length = len(tokens)
    ids = np.full(length, -1, dtype=np.int64)  # (T,) id of the k-gram ending at p, −1 while incomplete
    if length >= k:
        windows = np.lib.stride_tricks.sliding_window_view(tokens, k)  # (T − k + 1, k)
        ids[k - 1 :] = windows @ (VOCAB_SIZE ** np.arange(k - 1, -1, -1))
    before = np.concatenate([[-1], ids[:-1]])  # (T,) id of the k-gram ending at j − 1
    causal = np.tril(np.ones((length, length), dtype=bool))
    return (ids[:, None] == before[None, :]) & (ids[:, None] >= 0) & causal


def previous_token_mask(length: int) -> np.ndarray:
    """(T, T) bool: key j = i − 1."""
    return np.eye(length, k=-1, dtype=bool)


def same_state_mask(states: np.ndarray) -> np.ndarray:
    """(T, T) bool: key j ≥ 1 was emitted from the state the query i is in (states[j − 1] == states[i], j ≤ i)."""
    emitted_from = np.concatenate([[-1], states[:-1]])  # (T,)
    return (states[:, None] == emitted_from[None, :]) & np.tril(np.ones((len(states),) * 2, dtype=bool))


def signature_masks(row: dict, orders: tuple[int, ...]) -> dict[str, np.ndarray]:
    """Every signature's (T, T) key mask for one RegBench row."""
    tokens = common.token_ids(row["text"])
    masks = {f"follows_{k}gram": follows_kgram_mask(tokens, k) for k in orders}
    masks["previous_token"] = previous_token_mask(len(tokens))
    masks["current_token"] = np.eye(len(tokens), dtype=bool)
    masks["same_state"] = same_state_mask(automaton_states(row))
    return masks


def masked_mass(attention: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, int, float]:
    """Attention mass on the masked keys, summed over the queries with at least one masked key.

    Args:
        attention: (H, T, T) rows of softmax probabilities.
        mask: (T, T) bool.

    Returns:
        `(mass (H,), queries, uniform)`: per-head summed mass, the number of such queries, and the summed mass a
        uniform causal head (1/(i + 1) on each key j ≤ i) would put on the masked keys.
    """
    rows = mask.any(axis=1)  # (T,)
    mass = (attention[:, rows] * mask[rows]).sum(axis=(1, 2))  # (H,)
    uniform = float((mask[rows].sum(axis=1) / (np.flatnonzero(rows) + 1)).sum())
    return mass, int(rows.sum()), uniform


def head_signatures(model, tokenizer, rows: list[dict], orders: tuple[int, ...], batch_size: int = 8) -> dict:
    """Mean masked attention mass per layer and head for every signature, over the rows' queries.

    Returns:
        `{signature: {"per_head": {layer: [mass per head]}, "uniform": float, "queries": int}}` (layers from 1).
    """
    sums: dict = {}
    texts = [row["text"] for row in rows]
    for index, maps in common.attention_maps(model, tokenizer, texts, batch_size):
        for name, mask in signature_masks(rows[index], orders).items():
            entry = sums.setdefault(name, {"mass": {}, "queries": 0, "uniform": 0.0})
            for layer, attention in maps.items():
                mass, queries, uniform = masked_mass(attention, mask)
                entry["mass"][layer] = entry["mass"].get(layer, 0.0) + mass
            entry["queries"] += queries
            entry["uniform"] += uniform
    return {
        name: {
            "per_head": {str(layer): (mass / max(e["queries"], 1)).tolist() for layer, mass in e["mass"].items()},
            "uniform": e["uniform"] / max(e["queries"], 1),
            "queries": e["queries"],
        }
        for name, e in sums.items()
    }


def axis_labels(row: dict) -> list[str]:
    """`token·state` for every position of a row (the state after reading that token)."""
    return [f"{ch}·{s}" for ch, s in zip(row["text"], automaton_states(row))]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--checkpoint", required=True, type=Path, help="RegBench model folder (<run>/model)")
    parser.add_argument("--output", type=Path, help="folder for the JSON and PNGs (default: <run>/analysis)")
    parser.add_argument("--instance", type=int, default=0, help="test row whose maps are drawn")
    parser.add_argument("--start", type=int, default=0, help="first token of the drawn window")
    parser.add_argument("--window", type=int, default=40, help="tokens in the drawn window")
    parser.add_argument("--n-rows", type=int, default=100, help="test rows for the per-head summary")
    parser.add_argument("--orders", type=int, nargs="+", default=[1, 2, 3], help="matched tokens k of the signature")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")


LIMITS = {
    "instance": Limit(int, low=0),
    "start": Limit(int, low=0),
    "window": Limit(int, low=2),
    "n_rows": POSITIVE_INT,
    "threads": Limit(int, low=1, high=1024),
}
"""The allowed range of every numeric argument."""


def check_arguments(args: argparse.Namespace) -> None:
    """Ranges, a RegBench checkpoint with softmax attention, and the output folder, before any work."""
    check_limits(args, LIMITS)
    for k in args.orders:
        POSITIVE_INT.check("orders", k, "--orders")
    common.training_record(args.checkpoint)
    check_attention_architecture(args.checkpoint)
    common.check_output(args.output)


def check_attention_architecture(folder: Path) -> None:
    """Raises `ValueError` naming the architecture when none of the checkpoint's mixers reports attention maps."""
    from ..mixers import MIXERS

    config = json.loads((Path(folder) / "config.json").read_text())
    mixers = config.get("mixer_types") or [config.get("mixer")]
    declared = ("returns_attention_maps", "mixing_maps")
    if not any(getattr(MIXERS.get(m), flag, False) for m in mixers for flag in declared):
        raise ValueError(
            f"argument --checkpoint: architecture {config.get('model_type')!r} "
            f"(mixers {sorted(set(map(str, mixers)))}) "
            "has neither softmax attention nor an exact linear token-mixing map (LSTM), so it has no maps to analyse"
        )


def run(args: argparse.Namespace) -> dict:
    torch.set_num_threads(args.threads)
    record = common.training_record(args.checkpoint)
    model, tokenizer = common.load_checkpoint(args.checkpoint)
    rows = common.regbench_rows(record, "test", max(args.n_rows, args.instance + 1))
    if args.instance >= len(rows):
        raise ValueError(
            f"argument --instance: instance={args.instance} is not allowed: the test split has {len(rows)}"
        )
    row = rows[args.instance]
    _, maps = next(common.attention_maps(model, tokenizer, [row["text"]]))
    window = slice(min(args.start, len(row["text"]) - 2), min(args.start + args.window, len(row["text"])))
    # two rows per batch: channel-wise maps (Mamba: d_inner maps of T × T per layer) take gigabytes at 8
    signatures = head_signatures(model, tokenizer, rows[: args.n_rows], tuple(args.orders), batch_size=2)
    results = {
        "checkpoint": str(args.checkpoint),
        "architecture": common.architecture_name(model.config),
        "instance": {
            "index": args.instance,
            "window": [window.start, window.stop],
            "text": row["text"][window],
            "states": automaton_states(row)[window].tolist(),
            "num_states": row["num_states"],
        },
        "rows": min(args.n_rows, len(rows)),
        "signatures": signatures,
        "definitions": {
            "follows_kgram": "key j with x[j-k..j-1] == x[i-k+1..i], j <= i (attends after the current k-gram)",
            "previous_token": "key j == i - 1",
            "current_token": "key j == i",
            "same_state": "key j >= 1 with state(after x[j-1]) == state(after x[i]), j <= i",
            "value": "mean attention mass on those keys over queries having at least one; uniform = chance level",
        },
    }
    drawn = drawn_heads(signatures)
    figures = {
        "attention_maps.png": plot_maps(maps, axis_labels(row), window, results["architecture"], args.instance, drawn),
        "attention_ngram_heads.png": plot_signatures(signatures, results["architecture"], results["rows"], drawn),
    }
    common.save_results(common.output_folder(args), "attention", results, figures)
    for name, entry in signatures.items():
        heads = {layer: [round(v, 3) for v in values] for layer, values in entry["per_head"].items()}
        print(f"{name}: {heads} (uniform {entry['uniform']:.3f})")
    return results


MAX_DRAWN_HEADS = 4
"""Heads drawn per layer: channel-wise maps (Mamba's d_inner channels, S4's, ...) have over a hundred per layer."""


def drawn_heads(signatures: dict) -> dict[int, list[int]]:
    """Per layer, the heads the figures show: all of them up to `MAX_DRAWN_HEADS`, else those with the most mass
    on the keys after the current 2-gram (else the first signature's), in that order."""
    name = "follows_2gram" if "follows_2gram" in signatures else next(iter(signatures))
    drawn = {}
    for layer, values in signatures[name]["per_head"].items():
        order = np.argsort(values)[::-1] if len(values) > MAX_DRAWN_HEADS else np.arange(len(values))
        drawn[int(layer)] = [int(h) for h in order[:MAX_DRAWN_HEADS]]
    return drawn


def plot_maps(maps: dict, labels: list[str], window: slice, architecture: str, instance: int, drawn: dict):
    """A (layers × drawn heads) grid of heatmaps over the window, `token·state` on both axes."""
    plt = common.pyplot()
    layers, heads = len(maps), max(len(drawn[layer]) for layer in maps)
    size = 2.2 + 0.11 * (window.stop - window.start)
    fig, axes = plt.subplots(layers, heads, figsize=(size * heads, size * layers), squeeze=False)
    ticks = labels[window]
    for r, (layer, attention) in enumerate(sorted(maps.items())):
        for column in range(heads):
            ax = axes[r, column]
            if column >= len(drawn[layer]):
                ax.axis("off")
                continue
            h = drawn[layer][column]
            ax.imshow(attention[h, window, window], cmap="viridis", vmin=0, vmax=1)
            ax.set_xticks(range(len(ticks)), ticks, rotation=90, fontsize=6)
            ax.set_yticks(range(len(ticks)), ticks, fontsize=6)
            ax.set_title(f"layer {layer}, head {h}", fontsize=9)
    fig.suptitle(f"{architecture}: attention on test instance {instance} (token·automaton state)")
    fig.tight_layout()
    return fig


def plot_signatures(signatures: dict, architecture: str, n_rows: int, drawn: dict):
    """Grouped bars: each signature's mass per drawn (layer, head), with the uniform-head chance level."""
    plt = common.pyplot()
    names = list(signatures)
    heads = [(str(layer), h) for layer, chosen in sorted(drawn.items()) for h in chosen]
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(heads) * len(names) / 3), 4))
    width = 0.8 / len(names)
    for s, name in enumerate(names):
        values = [signatures[name]["per_head"][layer][h] for layer, h in heads]
        bars = ax.bar(np.arange(len(heads)) + s * width, values, width, label=name)
        ax.hlines(
            signatures[name]["uniform"],
            -0.4,
            len(heads) - 0.2,
            colors=bars.patches[0].get_facecolor(),
            linestyles="dotted",
            linewidth=1,
        )
    ax.set_xticks(np.arange(len(heads)) + 0.4 - width / 2, [f"L{layer} H{h}" for layer, h in heads])
    ax.set(
        ylim=(0, 1),
        ylabel="attention mass on the signature's keys",
        title=f"{architecture}: n-gram-head signatures over {n_rows} test rows (dotted: uniform head; at most "
        f"{MAX_DRAWN_HEADS} heads per layer, those with the most 2-gram mass)",
    )
    ax.legend(fontsize=8, ncols=len(names))
    fig.tight_layout()
    return fig
