"""MLP probes for in-context n-gram statistics and automaton states (P1 §5.2, Appendix E; DESIGN §5.8).

`python -m hf_icl.analysis probe --checkpoint DIR` trains, for every layer ℓ = 0 … L (0: embeddings) at once:

- n-gram probes, n = 1…3 (App. E eq. 97–101), on the hidden state h_i and a query n-gram c = (x_{i−n+2..i}, x)
  (the last n − 1 tokens at position i and a query symbol x):
      e_c = flatten(W_embed c) ∈ R^{n·d/2},  e_h = W_proj h ∈ R^{n·d/2},
      y = W_2 GeLU(W_1 [e_c, e_h, e_c ⊙ e_h] + b_1) + b_2,           d = 128 (the probe width);
  targets, counted in the prefix x_{0..i} over the raw token stream (`|` included, as in the authors' probe.py):
      count(c) = #{j ≤ i : x_{j−n+1..j} = c},
      frequency(c) = count(c) / Σ_w count(x_{i−n+2..i} w)   (for n = 1: count / (i + 1)),
      existence(c) = 1[count(c) > 0];
- the state-equivalence probe (eq. 102–105): [e_i, e_j, e_i ⊙ e_j] with e = W_proj h → same automaton state?

Sampling (App. E, with the authors' probe.py where the text is silent): a position i ≥ `--min-position` (the
authors use 75) and, for count/frequency, a query symbol read after a uniformly chosen earlier occurrence of the
context, so count ≥ 1 ("only n-grams that appear at least once"); existence: half such positives, half negatives
drawn from the prefix's symbols never seen after the context (for n = 1, letters absent from the prefix); state
equivalence: two distinct non-separator positions of one row, half with the same state (the state after `|` is the
start state by construction, so separators are left out). Metrics on the test split: relative error |ŷ − y|/y for
count and frequency, accuracy for existence and equivalence; the best layer is reported (Fig. 4).

Training follows App. E's table (batch 64, Adam 3e-4, β = (0.9, 0.99), cosine to 1e-4) on a fixed pool of
queries (`--samples-per-row` per row and probe) for `--epochs` epochs; CPU default: 500 training rows, 200 test
rows, 16 queries per row, 40 epochs (the paper: 2500 rows, a fresh query per row and epoch, 1000 epochs).
Hidden states and regression targets are standardised with training statistics (affine maps the probe could
learn itself; they make the short schedule converge). Every layer's probe is independent: one batched module holds
them all, and the summed loss gives each its own gradient.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..tasks.regbench import SEP_ID, VOCAB_SIZE, automaton_states
from ..utils.validation import POSITIVE_INT, SEED, Limit, check_limits
from . import regbench_common as common

COMMAND = "probe"  # python -m hf_icl.analysis probe
TASK_FAMILY = common.TASK_FAMILY  # the task family whose models it reads (`python -m hf_icl.analysis --help`)
DESCRIPTION = """P1 §5.2 probes: n-gram count / frequency / existence (n = 1…3) and automaton-state equivalence.

Per layer MLP probes on the hidden states of the training split, scored on the test split; the best layer is
reported. Writes probe.json and probe.png (Fig. 4 style)."""

ORDERS = (1, 2, 3)
LETTERS = np.arange(1, 19)  # a..r


def ngram_counts(tokens: np.ndarray, i: int, gram: np.ndarray) -> tuple[int, int]:
    """Count of the n-gram `gram` ending at positions ≤ i, and how often its context was continued by then.

    Args:
        tokens: token ids of the text, shape (T,).
        i: the current position.
        gram: the query n-gram (context x_{i−n+2..i} then the query symbol), shape (n,).

    Returns:
        `(count(gram), Σ_w count(context·w))`; the second is i + 1 for n = 1.
    """
    n, prefix = len(gram), tokens[: i + 1]
    if len(prefix) < n:
        return 0, 0
    windows = np.lib.stride_tricks.sliding_window_view(prefix, n)  # (i + 2 − n, n)
    count = int((windows == gram).all(axis=1).sum())
    total = int(((windows[:, :-1] == gram[:-1]).all(axis=1)).sum())  # occurrences of the context followed by a token
    return count, total


def _continuations(tokens: np.ndarray, i: int, n: int) -> np.ndarray:
    """The tokens that followed each earlier occurrence of the context x_{i−n+2..i} (with repeats)."""
    windows = np.lib.stride_tricks.sliding_window_view(tokens[: i + 1], n)  # (i + 2 − n, n)
    return windows[(windows[:, :-1] == tokens[i - n + 2 : i + 1]).all(axis=1), -1]


def sample_ngram_queries(tokens: np.ndarray, n: int, count: int, rng, min_position: int, existence: bool):
    """Query n-grams for one text: `[(position, gram (n,), target)]`, `count` of them or fewer.

    Regression queries (`existence=False`) have target `(count, total)`; existence queries have target 0 / 1.
    """
    first = min(max(min_position, n - 1), len(tokens) - 1)
    queries = []
    for _ in range(20 * count):
        if len(queries) == count:
            break
        i = int(rng.integers(first, len(tokens)))
        seen = _continuations(tokens, i, n)
        positive = not existence or rng.random() < 0.5
        if positive:
            if len(seen) == 0:
                continue
            symbol = int(rng.choice(seen))
        else:  # for n = 1 every prefix symbol was "seen", so the negatives are letters absent from the prefix
            pool = np.setdiff1d(LETTERS if n == 1 else np.unique(tokens[: i + 1]), seen)
            if len(pool) == 0:
                continue
            symbol = int(rng.choice(pool))
        gram = np.append(tokens[i - n + 2 : i + 1], symbol)
        statistics = ngram_counts(tokens, i, gram)
        queries.append((i, gram, int(statistics[0] > 0) if existence else statistics))
    return queries


def sample_state_pairs(states: np.ndarray, tokens: np.ndarray, count: int, rng) -> list[tuple[int, int, int]]:
    """`count` position pairs `(i, j, same_state)`, half with the same automaton state; separators left out."""
    eligible = np.flatnonzero(tokens != SEP_ID)
    values, sizes = np.unique(states[eligible], return_counts=True)
    repeated = values[sizes >= 2]
    if len(repeated) == 0 or len(values) < 2:
        return []
    pairs = []
    for k in range(count):
        if k % 2 == 0:
            where = eligible[states[eligible] == rng.choice(repeated)]
            i, j = rng.choice(where, size=2, replace=False)
        else:
            i = rng.choice(eligible)
            j = rng.choice(eligible[states[eligible] != states[i]])
        pairs.append((int(i), int(j), int(states[i] == states[j])))
    return pairs


class LayerLinear(nn.Module):
    """An independent `Linear(fan_in, fan_out)` per layer, applied to (L, B, fan_in) in one `baddbmm`."""

    def __init__(self, layers: int, fan_in: int, fan_out: int):
        super().__init__()
        bound = 1 / math.sqrt(fan_in)  # nn.Linear's default initialisation
        self.weight = nn.Parameter(torch.empty(layers, fan_in, fan_out).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(layers, 1, fan_out).uniform_(-bound, bound))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.bias, x, self.weight)  # (L, B, fan_out)


class NgramProbe(nn.Module):
    """f_ngram(h, c) of App. E eq. 97–101, one per layer; `forward(h (L, B, d_model), grams (B, n)) -> (L, B)`."""

    def __init__(self, layers: int, hidden_size: int, n: int, width: int = 128):
        super().__init__()
        self.embed = nn.Parameter(torch.randn(layers, VOCAB_SIZE, width // 2))  # W_embed
        self.proj = LayerLinear(layers, hidden_size, n * width // 2)
        self.fc1 = LayerLinear(layers, 3 * n * width // 2, width)
        self.fc2 = LayerLinear(layers, width, 1)

    def forward(self, h: torch.Tensor, grams: torch.Tensor) -> torch.Tensor:
        e_c = self.embed[:, grams].flatten(2)  # (L, B, n·d/2)
        e_h = self.proj(h)  # (L, B, n·d/2)
        return self.fc2(F.gelu(self.fc1(torch.cat([e_c, e_h, e_c * e_h], dim=-1)))).squeeze(-1)  # (L, B)


class StateEquivalenceProbe(nn.Module):
    """f_equal(h_i, h_j) of App. E eq. 102–105, one per layer; `forward(h_i, h_j) -> (L, B)` logits."""

    def __init__(self, layers: int, hidden_size: int, width: int = 128):
        super().__init__()
        self.proj = LayerLinear(layers, hidden_size, width)
        self.fc1 = LayerLinear(layers, 3 * width, width)
        self.fc2 = LayerLinear(layers, width, 1)

    def forward(self, h_i: torch.Tensor, h_j: torch.Tensor) -> torch.Tensor:
        e_i, e_j = self.proj(h_i), self.proj(h_j)  # (L, B, d)
        return self.fc2(F.gelu(self.fc1(torch.cat([e_i, e_j, e_i * e_j], dim=-1)))).squeeze(-1)  # (L, B)


def train_probe(probe: nn.Module, inputs: tuple, targets: torch.Tensor, classify: bool, args) -> nn.Module:
    """Minibatch training of all layers' probes at once (App. E: Adam, β = (0.9, 0.99), cosine to `--min-lr`).

    Args:
        probe: `NgramProbe` or `StateEquivalenceProbe`.
        inputs: the probe's forward arguments; tensors whose sample axis is 1 (hidden states) or 0 (grams).
        targets: (N,) float targets (0/1 for classification).
        classify: binary cross-entropy on logits instead of mean squared error.
        args: `batch_size`, `epochs`, `lr`, `min_lr`, `seed`.
    """
    generator = torch.Generator().manual_seed(args.seed)
    steps_per_epoch = math.ceil(len(targets) / args.batch_size)
    optimizer = torch.optim.Adam(probe.parameters(), lr=args.lr, betas=(0.9, 0.99))
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, args.epochs * steps_per_epoch, args.min_lr)
    probe.train()
    for _ in range(args.epochs):
        order = torch.randperm(len(targets), generator=generator)
        for start in range(0, len(targets), args.batch_size):
            index = order[start : start + args.batch_size]
            batch = [x[:, index] if x.dim() == 3 else x[index] for x in inputs]
            output = probe(*batch)  # (L, B)
            target = targets[index].expand_as(output)
            loss = F.binary_cross_entropy_with_logits(output, target) if classify else F.mse_loss(output, target)
            optimizer.zero_grad()
            (loss * len(output)).backward()  # the sum of the layers' mean losses
            optimizer.step()
            schedule.step()
    return probe.eval()


def _slot(positions: dict, position: int) -> int:
    return positions.setdefault(position, len(positions))


def collect(rows: list[dict], args, rng) -> dict:
    """Sample every probe's queries from `rows`.

    Returns:
        `{"positions": per row, the positions whose hidden states are read (P_r,),
          "ngram": {n: [(existence, state index, gram (n,), target)]}, "state": [(state index, state index, same)]}`
        where a state index points into the rows' positions concatenated in order.
    """
    per_text_positions, records = [], {"ngram": {n: [] for n in ORDERS}, "state": []}
    base = 0
    for row in rows:
        tokens, positions = common.token_ids(row["text"]), {}
        for n in ORDERS:
            for existence in (False, True):
                queries = sample_ngram_queries(tokens, n, args.samples_per_row, rng, args.min_position, existence)
                for i, gram, target in queries:
                    records["ngram"][n].append((existence, base + _slot(positions, i), gram, target))
        for i, j, same in sample_state_pairs(automaton_states(row), tokens, args.samples_per_row, rng):
            records["state"].append((base + _slot(positions, i), base + _slot(positions, j), same))
        per_text_positions.append(np.array(list(positions), dtype=np.int64))
        base += len(positions)
    return {"positions": per_text_positions, **records}


def probe_data(model, tokenizer, rows: list[dict], args, rng) -> dict:
    """Hidden states (L + 1, P, d) and the sampled queries of a split."""
    sampled = collect(rows, args, rng)
    if any(not sampled["ngram"][n] for n in ORDERS) or not sampled["state"]:
        raise ValueError(
            f"argument --min-position: no probe queries could be sampled from {len(rows)} rows with "
            f"min_position={args.min_position} (rows too short, or no repeated automaton state)"
        )
    sampled["states"] = common.hidden_states_at(model, tokenizer, [row["text"] for row in rows], sampled["positions"])
    return sampled


def _ngram_tensors(records: list, existence: bool, states: torch.Tensor):
    chosen = [r for r in records if r[0] == existence]
    if not chosen:
        raise ValueError(f"no {'existence' if existence else 'count'} queries were sampled; use more rows")
    index = torch.tensor([r[1] for r in chosen], dtype=torch.long)
    grams = torch.tensor(np.stack([r[2] for r in chosen]), dtype=torch.long)  # (N, n)
    targets = np.array([r[3] for r in chosen], dtype=np.float64)  # (N,) or (N, 2): count, total
    return states[:, index], grams, targets


def regression_probes(train: dict, test: dict, n: int, args) -> dict:
    """Count and frequency probes of order n: `{"count": summary, "frequency": summary}` (relative error)."""
    h, grams, stats = _ngram_tensors(train["ngram"][n], False, train["states"])
    h_test, grams_test, stats_test = _ngram_tensors(test["ngram"][n], False, test["states"])
    summaries = {}
    for name, target, target_test in (
        ("count", stats[:, 0], stats_test[:, 0]),
        ("frequency", stats[:, 0] / stats[:, 1], stats_test[:, 0] / stats_test[:, 1]),
    ):
        centre, scale = target.mean(), max(target.std(), 1e-6)
        probe = NgramProbe(len(h), h.shape[-1], n, args.width)
        train_probe(probe, (h, grams), torch.tensor((target - centre) / scale, dtype=torch.float32), False, args)
        with torch.no_grad():
            predicted = probe(h_test, grams_test).double().numpy() * scale + centre  # (L, N)
        errors = np.abs(predicted - target_test) / target_test  # (L, N)
        constant = np.mean(np.abs(centre - target_test) / target_test)
        summaries[name] = _summary("relative_error", errors.mean(1), constant, len(target), len(target_test))
    return summaries


def existence_probe(train: dict, test: dict, n: int, args) -> dict:
    """Existence probe of order n (accuracy), with the share of positive training queries."""
    h, grams, exists = _ngram_tensors(train["ngram"][n], True, train["states"])
    h_test, grams_test, exists_test = _ngram_tensors(test["ngram"][n], True, test["states"])
    probe = NgramProbe(len(h), h.shape[-1], n, args.width)
    train_probe(probe, (h, grams), torch.tensor(exists, dtype=torch.float32), True, args)
    with torch.no_grad():
        hits = (probe(h_test, grams_test).numpy() > 0) == (exists_test > 0)  # (L, N)
    majority = np.mean((exists_test > 0) == (exists.mean() >= 0.5))
    summary = _summary("accuracy", hits.mean(1), majority, len(exists), len(exists_test))
    return summary | {"train_positive_share": float(exists.mean())}


def state_equivalence_probe(train: dict, test: dict, args) -> dict:
    """The two-time-step state-equivalence probe (accuracy)."""
    pairs, pairs_test = (torch.tensor(split["state"], dtype=torch.long) for split in (train, test))  # (N, 3)
    states, states_test = train["states"], test["states"]
    probe = StateEquivalenceProbe(len(states), states.shape[-1], args.width)
    train_probe(probe, (states[:, pairs[:, 0]], states[:, pairs[:, 1]]), pairs[:, 2].float(), True, args)
    with torch.no_grad():
        logits = probe(states_test[:, pairs_test[:, 0]], states_test[:, pairs_test[:, 1]])  # (L, N)
    hits = (logits > 0).numpy() == pairs_test[:, 2].numpy().astype(bool)
    return _summary("accuracy", hits.mean(1), 0.5, len(pairs), len(pairs_test))


def run_probes(model, tokenizer, train_rows: list[dict], test_rows: list[dict], args) -> dict:
    """Train and score every probe at every layer; the callable core of the `probe` command.

    Args:
        model, tokenizer: the checkpoint.
        train_rows, test_rows: RegBench rows (the probes train on the first, are scored on the second).
        args: `samples_per_row`, `min_position`, `batch_size`, `epochs`, `lr`, `min_lr`, `width`, `seed`.

    Returns:
        `{probe: {n: {"metric", "per_layer", "best_layer", "best", "constant_baseline", "train", "test"}}}` with
        `probe` in `count`, `frequency`, `existence` and `state_equivalence` (whose single entry has key `"-"`).
    """
    rng = np.random.default_rng(args.seed)
    train = probe_data(model, tokenizer, train_rows, args, rng)
    test = probe_data(model, tokenizer, test_rows, args, rng)
    mean = train["states"].mean(dim=1, keepdim=True)
    std = train["states"].std(dim=1, keepdim=True).clamp_min(1e-6)
    for split in (train, test):
        split["states"] = (split["states"] - mean) / std  # (L + 1, P, d) standardised with training statistics
    results: dict = {"count": {}, "frequency": {}, "existence": {}, "state_equivalence": {}}
    for n in ORDERS:
        torch.manual_seed(args.seed + n)
        for name, summary in regression_probes(train, test, n, args).items():
            results[name][str(n)] = summary
        results["existence"][str(n)] = existence_probe(train, test, n, args)
    torch.manual_seed(args.seed)
    results["state_equivalence"]["-"] = state_equivalence_probe(train, test, args)
    return results


def _summary(metric: str, per_layer: np.ndarray, constant: float, n_train: int, n_test: int) -> dict:
    best = int(np.argmin(per_layer) if metric == "relative_error" else np.argmax(per_layer))
    return {
        "metric": metric,
        "per_layer": [float(v) for v in per_layer],
        "best_layer": best,
        "best": float(per_layer[best]),
        "constant_baseline": float(constant),  # the training mean (regression) or majority label (classification)
        "train": n_train,
        "test": n_test,
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--checkpoint", required=True, type=Path, help="RegBench model folder (<run>/model)")
    parser.add_argument("--output", type=Path, help="folder for probe.json / probe.png (default: <run>/analysis)")
    parser.add_argument("--train-rows", type=int, default=500, help="training-split rows the probes train on")
    parser.add_argument("--test-rows", type=int, default=200, help="test-split rows the probes are scored on")
    parser.add_argument("--samples-per-row", type=int, default=16, help="queries per row and probe")
    parser.add_argument("--min-position", type=int, default=75, help="earliest query position (authors: 75)")
    parser.add_argument("--epochs", type=int, default=40, help="passes over the query pool (paper: 1000)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--min-lr", type=float, default=1e-4, help="end of the cosine schedule")
    parser.add_argument("--width", type=int, default=128, help="probe hidden size d")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")


LIMITS = {
    "train_rows": POSITIVE_INT,
    "test_rows": POSITIVE_INT,
    "samples_per_row": Limit(int, low=2),
    "min_position": Limit(int, low=0),
    "epochs": POSITIVE_INT,
    "batch_size": POSITIVE_INT,
    "lr": Limit(float, low=0, low_open=True),
    "min_lr": Limit(float, low=0),
    "width": Limit(int, low=2),
    "seed": SEED,
    "threads": Limit(int, low=1, high=1024),
}
"""The allowed range of every numeric argument."""


def check_arguments(args: argparse.Namespace) -> None:
    """Ranges, the checkpoint's training record and the output folder, before any work."""
    check_limits(args, LIMITS)
    if args.width % 2:
        raise ValueError(f"argument --width: width={args.width} is not allowed: expected an even number (e_c is d/2)")
    common.training_record(args.checkpoint)
    common.check_output(args.output)


def run(args: argparse.Namespace) -> dict:
    torch.set_num_threads(args.threads)
    run_record = common.training_record(args.checkpoint)
    model, tokenizer = common.load_checkpoint(args.checkpoint)
    train_rows = common.regbench_rows(run_record, "train", args.train_rows)
    test_rows = common.regbench_rows(run_record, "test", args.test_rows)
    probes = run_probes(model, tokenizer, train_rows, test_rows, args)
    results = {
        "checkpoint": str(args.checkpoint),
        "architecture": common.architecture_name(model.config),
        "layers": "0 = embeddings, ℓ = output of block ℓ (before the final norm)",
        "settings": {k: v for k, v in vars(args).items() if k in LIMITS},
        "rows": {"train": len(train_rows), "test": len(test_rows)},
        "probes": probes,
    }
    common.save_results(common.output_folder(args), "probe", results, {"probe.png": plot_probes(results)})
    for name, entries in probes.items():
        print(name, {n: (e["best_layer"], round(e["best"], 4)) for n, e in entries.items()})
    return results


def plot_probes(results: dict):
    """Fig. 4 style: best-layer scores per n (top, black ticks: the constant predictor), and every layer (bottom)."""
    plt = common.pyplot()
    fig, axes = plt.subplots(2, 4, figsize=(15, 6.5))
    for column, (name, entries) in enumerate(results["probes"].items()):
        keys = list(entries)
        best = [entries[k]["best"] for k in keys]
        constant = [entries[k]["constant_baseline"] for k in keys]
        top, bottom = axes[0, column], axes[1, column]
        top.bar(range(len(keys)), best, color="tab:blue", label="best layer")
        top.scatter(range(len(keys)), constant, color="black", marker="_", s=300, label="constant", zorder=3)
        for x, k in enumerate(keys):
            label = f"{best[x]:.3f} (ℓ={entries[k]['best_layer']})"
            top.text(x, max(best[x], constant[x]) * 1.03, label, ha="center", va="bottom", fontsize=8)
        top.set_xticks(range(len(keys)), [f"n={k}" if k != "-" else "two time steps" for k in keys])
        metric = entries[keys[0]]["metric"].replace("_", " ")
        top.set(title=f"{name.replace('_', ' ')} ({metric})", ylabel=metric)
        top.margins(y=0.2)
        for k in keys:
            bottom.plot(entries[k]["per_layer"], marker="o", label=f"n={k}" if k != "-" else "equivalence")
        bottom.set_xticks(range(len(entries[keys[0]]["per_layer"])))
        bottom.set(xlabel="layer (0 = embeddings)", ylabel=metric)
        bottom.legend(fontsize=8)
    axes[0, 0].legend(fontsize=8, loc="lower left")
    rows = results["rows"]
    fig.suptitle(f"Probes, {results['architecture']} ({rows['train']} train / {rows['test']} test rows)")
    fig.tight_layout()
    return fig
