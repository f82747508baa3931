"""The samplers of the in-context regression suite (paper 5 §3.2, Table 2; Garg et al., 2022; DESIGN §5.5).

Each draws one batch of prompts, a fresh function per prompt: ``draw(rng, batch_size, n_points, n_dims, **options)
-> dict of arrays``. :func:`hf_icl.tasks.function_classes.sample` wraps them with seeding, padding and the
out-of-distribution options.

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

Out-of-distribution x (any task with Gaussian x; Garg et al. §4): `x_scale` multiplies x, `covariance="skewed"` draws
x ~ N(0, Σ) with eigenvalues ∝ 1/i² (trace d) in a random basis, `orthant=True` puts every x of a prompt in one random
orthant (:func:`gaussian_xs`).
"""

from __future__ import annotations

import math

import numpy as np


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
