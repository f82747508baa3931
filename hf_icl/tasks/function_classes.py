"""Function classes for in-context regression (paper 5 §3.2, Table 2; Garg et al., 2022; DESIGN §5.5).

`sample(task, batch_size, n_points, n_dims, seed, **options)` draws one batch of prompts, a fresh function per
prompt, deterministically from `seed` (numpy PCG64, the same bytes on any machine). Every prompt is a dict of
float32 tensors: `xs` (B, N, d_in) and `ys` (B, N) (or (B, N, d_y) for vector outputs), plus, where a task has
them, `loss_mask` (B, N) (the examples that are scored), `ss` (chain-of-thought steps) and `y_tokens` (vectors in
the y slots in place of the zero-padded y). `input_dim` ≥ `n_dims` zero-pads x to the model width, as the
curriculum's truncated dimensions (Garg et al.) are zeros.

Definitions (x ~ N(0, I_d) unless said otherwise):

- `linear_regression`: w ~ N(0, I_d), y = wᵀx.
- `noisy_linear_regression`: y = wᵀx + ε, ε ~ N(0, `noise_std`²) (default 1).
- `sparse_linear_regression`: w ~ N(0, I_d) with all but `sparsity` = 3 random coordinates zeroed.
- `relu_2nn_regression`: W⁽¹⁾ ∈ ℝ^{h×d}, W⁽²⁾ ∈ ℝ^h, entries N(0, 1), y = √(2/h)·W⁽²⁾ᵀ relu(W⁽¹⁾x), h = 100.
- `decision_tree`: a full binary tree of depth 4; each inner node holds a uniform coordinate i, go right iff
  x[i] > 0; leaves hold N(0, 1) values.
- `orthogonal_outlier_regression` (P5 §3.2.2, the paper's definition): with probability p = 0.5 a pair becomes
  ((a_x u + b_x v)/(a_x² + b_x²), (a_y u + b_y v)/(a_y² + b_y²)), u = w₁ − proj_w w₁, v = w₂ − proj_w w₂ of the
  prompt's own w, w₁, w₂ ~ N(0, I_d), coefficients N(0, 1) per pair; the y slot then carries that d-vector
  (`y_tokens`), and outliers are not scored (`loss_mask`).
- `many_outlier_regression`: with probability p = 0.9 a pair becomes (1_d, [1, 0, …, 0]), i.e. y = 1; not scored.
- `sparse_parity`: x uniform in {±1}^d, y = Π_{j∈S} x[j], |S| = k = 2; S is shared by the whole batch when
  `shared_subset` (the reference draws it once per step), else one per prompt.
- `cot_io`: s = relu(Wx), W_ij ~ N(0, 2/k), y = vᵀs, v ~ N(0, I_k), k = `hidden_size` = 8 (`ss` holds s).
- `vector_mqar` (P5 §3.2.5 and Table 3, as the paper defines it): `n_pairs` keys and values uniform on the unit
  sphere S^{d−1}, then `n_queries` queries, each a copy of a distinct key; `xs` is keys then queries, `ys` the
  values then each query's value; only the queries are scored, and only the first `n_pairs` ys are model inputs.

Out-of-distribution options (any task with Gaussian x; Garg et al. §4): `x_scale` multiplies x, `y_noise` adds
N(0, y_noise²) to the in-context labels (not to the scored targets), `covariance="skewed"` draws x ~ N(0, Σ) with
eigenvalues ∝ 1/i² (trace d) in a random basis, `orthant=True` puts every x of a prompt in one random orthant.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
import torch

from .online import OnlineSampler


def task_rng(seed: int | tuple) -> np.random.Generator:
    """The generator of one batch: PCG64 from `SeedSequence(seed)`."""
    entropy = list(seed) if isinstance(seed, (tuple, list)) else [seed]
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))


def gaussian_xs(rng, batch_size, n_points, n_dims, x_scale=1.0, covariance="identity", orthant=False):
    """x ~ N(0, I_d) (B, N, d), with the out-of-distribution transformations of the module docstring."""
    xs = rng.standard_normal((batch_size, n_points, n_dims))
    if covariance == "skewed":
        eigenvalues = 1.0 / np.arange(1, n_dims + 1) ** 2
        eigenvalues *= n_dims / eigenvalues.sum()  # trace d, as the isotropic case
        basis, _ = np.linalg.qr(rng.standard_normal((n_dims, n_dims)))
        xs = xs @ (basis * np.sqrt(eigenvalues)) @ basis.T  # covariance U diag(λ) Uᵀ
    elif covariance != "identity":
        raise ValueError(f"covariance={covariance!r} is not one of: identity, skewed")
    if orthant:
        signs = rng.choice([-1.0, 1.0], size=(batch_size, 1, n_dims))
        xs = np.abs(xs) * signs
    return xs * x_scale


def linear(rng, b, n, d, noise_std=0.0, sparsity=None, **x_options):
    xs = gaussian_xs(rng, b, n, d, **x_options)
    w = rng.standard_normal((b, d))
    if sparsity is not None:
        keep = np.argsort(rng.random((b, d)), axis=1)[:, :sparsity]  # k coordinates per prompt
        mask = np.zeros((b, d), dtype=bool)
        np.put_along_axis(mask, keep, True, axis=1)
        w = np.where(mask, w, 0.0)
    ys = np.einsum("bnd,bd->bn", xs, w)
    if noise_std:
        ys = ys + noise_std * rng.standard_normal(ys.shape)
    return {"xs": xs, "ys": ys, "w": w}


def relu_2nn(rng, b, n, d, hidden_size=100, **x_options):
    xs = gaussian_xs(rng, b, n, d, **x_options)
    w1 = rng.standard_normal((b, hidden_size, d))
    w2 = rng.standard_normal((b, hidden_size))
    hidden = np.maximum(np.einsum("bhd,bnd->bnh", w1, xs), 0.0)  # (B, N, h)
    return {"xs": xs, "ys": math.sqrt(2 / hidden_size) * np.einsum("bnh,bh->bn", hidden, w2), "w1": w1, "w2": w2}


def decision_tree(rng, b, n, d, depth=4, **x_options):
    xs = gaussian_xs(rng, b, n, d, **x_options)
    nodes = 2 ** (depth + 1) - 1  # heap order: children of node j are 2j + 1 and 2j + 2
    coordinates = rng.integers(0, d, size=(b, nodes))
    values = rng.standard_normal((b, nodes))
    node = np.zeros((b, n), dtype=np.int64)
    batch = np.arange(b)[:, None]
    for _ in range(depth):
        chosen = coordinates[batch, node]  # (B, N) coordinate tested at the current node
        right = np.take_along_axis(xs, chosen[..., None], axis=2)[..., 0] > 0
        node = 2 * node + 1 + right
    return {"xs": xs, "ys": values[batch, node], "tree_coordinates": coordinates, "tree_values": values}


def orthogonal_outliers(rng, b, n, d, p=0.5, **x_options):
    clean = linear(rng, b, n, d, **x_options)
    w = clean["w"]  # (B, d): the prompt's own w (the reference code used a freshly sampled task's)

    def orthogonal(vectors):
        return vectors - (np.sum(vectors * w, axis=1, keepdims=True) / np.sum(w * w, axis=1, keepdims=True)) * w

    u, v = orthogonal(rng.standard_normal((b, d))), orthogonal(rng.standard_normal((b, d)))
    a_x, b_x, a_y, b_y = rng.standard_normal((4, b, n, 1))
    dummy_x = (a_x * u[:, None] + b_x * v[:, None]) / (a_x**2 + b_x**2)  # (B, N, d)
    dummy_y = (a_y * u[:, None] + b_y * v[:, None]) / (a_y**2 + b_y**2)
    outlier = rng.random((b, n)) < p
    xs = np.where(outlier[..., None], dummy_x, clean["xs"])
    y_tokens = np.concatenate([clean["ys"][..., None], np.zeros((b, n, d - 1))], axis=2)
    y_tokens = np.where(outlier[..., None], dummy_y, y_tokens)
    return {"xs": xs, "ys": clean["ys"], "y_tokens": y_tokens, "loss_mask": ~outlier, "w": w}


def many_outliers(rng, b, n, d, p=0.9, **x_options):
    clean = linear(rng, b, n, d, **x_options)
    outlier = rng.random((b, n)) < p
    xs = np.where(outlier[..., None], 1.0, clean["xs"])
    return {"xs": xs, "ys": np.where(outlier, 1.0, clean["ys"]), "loss_mask": ~outlier, "w": clean["w"]}


def sparse_parity(rng, b, n, d, k=2, shared_subset=True):
    xs = rng.choice([-1.0, 1.0], size=(b, n, d))
    if shared_subset:
        subsets = np.broadcast_to(rng.permutation(d)[:k], (b, k))
    else:
        subsets = np.argsort(rng.random((b, d)), axis=1)[:, :k]
    ys = np.prod(np.take_along_axis(xs, subsets[:, None, :].repeat(n, axis=1), axis=2), axis=2)
    return {"xs": xs, "ys": ys, "subset": np.sort(subsets, axis=1)}


def cot_io(rng, b, n, d, hidden_size=8, **x_options):
    xs = gaussian_xs(rng, b, n, d, **x_options)
    w = rng.standard_normal((b, hidden_size, d)) * math.sqrt(2 / hidden_size)
    v = rng.standard_normal((b, hidden_size))
    ss = np.maximum(np.einsum("bkd,bnd->bnk", w, xs), 0.0)  # (B, N, k)
    return {"xs": xs, "ss": ss, "ys": np.einsum("bnk,bk->bn", ss, v), "w": w, "v": v}


def unit_vectors(rng, shape):
    vectors = rng.standard_normal(shape)
    return vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)


def vector_mqar(rng, b, n, d, n_pairs=32, n_queries=16):
    if n != n_pairs + n_queries:
        raise ValueError(f"n_points={n} must be n_pairs + n_queries = {n_pairs} + {n_queries} for vector_mqar")
    if n_queries > n_pairs:
        raise ValueError(f"n_queries={n_queries} must be ≤ n_pairs={n_pairs} (each query copies a distinct key)")
    keys, values = unit_vectors(rng, (b, n_pairs, d)), unit_vectors(rng, (b, n_pairs, d))
    picked = np.argsort(rng.random((b, n_pairs)), axis=1)[:, :n_queries]  # distinct keys per prompt
    queries = np.take_along_axis(keys, picked[..., None], axis=1)
    answers = np.take_along_axis(values, picked[..., None], axis=1)
    loss_mask = np.zeros((b, n), dtype=bool)
    loss_mask[:, n_pairs:] = True
    return {
        "xs": np.concatenate([keys, queries], axis=1),
        "ys": np.concatenate([values, answers], axis=1),
        "loss_mask": loss_mask,
        "n_labelled": n_pairs,
        "queried": picked,
    }


@dataclasses.dataclass(frozen=True)
class FunctionClass:
    """One task of the suite: its sampler, paper settings and how it is scored.

    Args:
        draw: `(rng, batch_size, n_points, n_dims, **options) -> dict of arrays`.
        n_dims, n_points: the paper's d and N (P5 Table 2).
        options: default sampler options (the paper's k, p, h, ...).
        normalizer: the error is divided by this (`"n_dims"`, `"sparsity"` or 1), DESIGN §5.5.
        metric: `"squared_error"` or `"accuracy"` (sign agreement, sparse parity).
        curriculum: `(field, start, end, increment, every)` tuples of P5 App. A / Garg et al.
        output_dim: d_y of the read-out (`"n_dims"` for vector outputs).
        gaussian: x is Gaussian, so the out-of-distribution options apply.
    """

    draw: Callable
    n_dims: int
    n_points: int
    options: dict = dataclasses.field(default_factory=dict)
    normalizer: str | int = "n_dims"
    metric: str = "squared_error"
    curriculum: tuple = ()
    output_dim: int | str = 1
    gaussian: bool = True


_LINEAR_CURRICULUM = (("n_dims", 5, 20, 1, 2000), ("n_points", 11, 41, 2, 2000))
_LONG_CURRICULUM = (("n_dims", 5, 20, 1, 2000), ("n_points", 26, 101, 5, 2000))

FUNCTION_CLASSES: dict[str, FunctionClass] = {
    "linear_regression": FunctionClass(linear, 20, 41, curriculum=_LINEAR_CURRICULUM),
    "noisy_linear_regression": FunctionClass(linear, 20, 41, {"noise_std": 1.0}, curriculum=_LINEAR_CURRICULUM),
    "sparse_linear_regression": FunctionClass(
        linear, 20, 101, {"sparsity": 3}, normalizer="sparsity", curriculum=_LONG_CURRICULUM
    ),
    "relu_2nn_regression": FunctionClass(relu_2nn, 20, 101, {"hidden_size": 100}, curriculum=_LONG_CURRICULUM),
    "decision_tree": FunctionClass(decision_tree, 20, 101, {"depth": 4}, normalizer=1, curriculum=_LONG_CURRICULUM),
    "orthogonal_outlier_regression": FunctionClass(
        orthogonal_outliers, 20, 101, {"p": 0.5}, curriculum=_LONG_CURRICULUM
    ),
    "many_outlier_regression": FunctionClass(many_outliers, 20, 512, {"p": 0.9}),
    "sparse_parity": FunctionClass(
        sparse_parity, 10, 140, {"k": 2, "shared_subset": True}, normalizer=1, metric="accuracy", gaussian=False
    ),
    "cot_io": FunctionClass(cot_io, 10, 101, {"hidden_size": 8}),
    "vector_mqar": FunctionClass(
        vector_mqar, 20, 48, {"n_pairs": 32, "n_queries": 16}, normalizer=1, output_dim="n_dims", gaussian=False
    ),
}
"""Task name -> definition; the names are those of `hf_icl.list_tasks()`."""

_X_OPTIONS = ("x_scale", "covariance", "orthant")
_TENSORS = ("xs", "ys", "ss", "y_tokens", "loss_mask", "targets")


def sample(task: str, batch_size: int, n_points: int, n_dims: int, seed, **options) -> dict[str, torch.Tensor]:
    """Draw a batch of prompts of `task`, deterministically from `seed`.

    Args:
        task: one of `FUNCTION_CLASSES`.
        batch_size, n_points, n_dims: B, N and the active dimension d.
        seed: an int or a tuple of ints (`SeedSequence` entropy).
        **options: the task's options (module docstring), `input_dim` (zero-pad x to this width) and the
            out-of-distribution options `x_scale`, `y_noise`, `covariance`, `orthant`.

    Returns:
        float32 tensors `xs` (B, N, input_dim), `ys` (B, N) or (B, N, d_y), and where the task has them
        `loss_mask` (bool), `ss`, `y_tokens`; plus the drawn function as numpy arrays (`w`, `w1`/`w2`,
        `tree_coordinates`/`tree_values`, `subset`, `v`, `queried`) and `n_labelled` for vector MQAR.
    """
    if task not in FUNCTION_CLASSES:
        raise ValueError(f"task={task!r} is not one of: {', '.join(FUNCTION_CLASSES)}")
    spec = FUNCTION_CLASSES[task]
    options = {**spec.options, **options}
    input_dim = options.pop("input_dim", None) or n_dims
    y_noise = options.pop("y_noise", 0.0)
    if input_dim < n_dims:
        raise ValueError(f"input_dim={input_dim} must be ≥ n_dims={n_dims}")
    if not spec.gaussian and any(options.get(key) not in (None, 1.0, "identity", False) for key in _X_OPTIONS):
        raise ValueError(f"task {task!r} has no Gaussian x: the options {', '.join(_X_OPTIONS)} do not apply")
    rng = task_rng(seed)
    drawn = spec.draw(rng, batch_size, n_points, n_dims, **options)
    if y_noise:
        labels = drawn["ys"] + y_noise * rng.standard_normal(drawn["ys"].shape)
        drawn["targets"], drawn["ys"] = drawn["ys"], labels  # inputs are noisy, the scored targets are not
    pad = input_dim - n_dims
    out = {}
    for key, value in drawn.items():
        if not isinstance(value, np.ndarray) or key not in _TENSORS:
            out[key] = value
            continue
        if key in ("xs", "y_tokens") and pad:
            value = np.concatenate([value, np.zeros((*value.shape[:-1], pad))], axis=-1)
        out[key] = torch.from_numpy(np.ascontiguousarray(value, dtype=bool if value.dtype == bool else np.float32))
    return out


def normalizer(task: str, n_dims: int, **options) -> float:
    """What the squared error is divided by: d, the sparsity k, or 1 (DESIGN §5.5)."""
    spec = FUNCTION_CLASSES[task]
    if spec.normalizer == "n_dims":
        return float(n_dims)
    if spec.normalizer == "sparsity":
        return float({**spec.options, **options}["sparsity"])
    return float(spec.normalizer)


def output_dim(task: str, n_dims: int) -> int:
    """d_y of the task's read-out."""
    value = FUNCTION_CLASSES[task].output_dim
    return n_dims if value == "n_dims" else value


def model_inputs(prompts: dict) -> dict:
    """The keyword arguments of `model(**...)` for a sampled batch (vector MQAR: only the pairs' ys are inputs)."""
    batch = {key: prompts[key] for key in ("xs", "ys", "ss", "y_tokens", "loss_mask", "targets") if key in prompts}
    if "n_labelled" in prompts:
        batch["targets"] = batch.get("targets", batch["ys"])
        batch["ys"] = batch["ys"][:, : prompts["n_labelled"]]
    return batch


class FunctionClassSampler(OnlineSampler):
    """Online prompts of one function class: `params` holds `n_dims`, `n_points` and the sampler options.

    Args:
        task: one of `FUNCTION_CLASSES`.
        **params: `n_dims`, `n_points`, `input_dim` and options; curricula change `n_dims` / `n_points` by step.
    """

    def __init__(self, task: str, **params):
        super().__init__(**params)
        self.task = task

    def sample_batch(self, batch_size: int, rng: np.random.Generator) -> dict:
        params = dict(self.params)
        n_points, n_dims = params.pop("n_points"), params.pop("n_dims")
        seed = tuple(int(v) for v in rng.integers(0, 2**32, size=4))
        return model_inputs(sample(self.task, batch_size, n_points, n_dims, seed, **params))
