"""In-context regression baselines (Garg et al., 2022 §3; paper 5; DESIGN §5.5): each predicts example i of every
prompt from the pairs before it, exactly as a model's prediction at x_i may, and returns (B, N) like a model's
`.predictions`, so one evaluator scores both.

- `least_squares`: the minimum-norm least-squares fit w = X⁺y on x₁..x_{i−1} (0 at the first example);
- `averaging`: w = mean_j y_j x_j; `nearest_neighbors`: the mean y of the k = 3 nearest previous x's;
- `lasso` (scikit-learn), `gd_two_layer_nn` (Adam on a 2-layer ReLU net, per prompt, in parallel),
  `decision_tree` (scikit-learn) and `gradient_boosting` (xgboost, else scikit-learn's histogram boosting);
- `gf2_parity`: Gaussian elimination over GF(2), the information-theoretic predictor of a parity: ŷ_i = ±1 exactly
  when x_i's bit vector lies in the span of the previous ones (then the labels fix it), else 0 (a coin flip).

scikit-learn and xgboost are the optional `[baselines]` extra; their baselines raise an `ImportError` naming it.
"""

from __future__ import annotations

import importlib

import numpy as np
import torch


def _as_float64(values) -> torch.Tensor:
    return torch.as_tensor(np.asarray(values) if not torch.is_tensor(values) else values).to(torch.float64)


def _fit_mask(ys, mask):
    return torch.ones(ys.shape[:2], dtype=torch.bool) if mask is None else torch.as_tensor(mask).bool()


def least_squares(xs, ys, mask=None) -> torch.Tensor:
    """Minimum-norm least squares on the pairs before each example.

    Args:
        xs: (B, N, d) inputs.
        ys: (B, N) or (B, N, d_y) labels.
        mask: (B, N) bool, pairs the fit may use (default all); the prediction is made at every position.

    Returns:
        (B, N) (or (B, N, d_y)) float32 predictions; 0 at the first example.
    """
    xs, ys = _as_float64(xs), _as_float64(ys)
    vector = ys.dim() == 3
    ys = ys if vector else ys[..., None]
    use = _fit_mask(ys, mask).to(torch.float64)[..., None]  # (B, N, 1)
    predictions = torch.zeros_like(ys)
    for i in range(1, xs.shape[1]):
        design, labels = xs[:, :i] * use[:, :i], ys[:, :i] * use[:, :i]  # unused pairs become 0 = 0 rows
        weights = torch.linalg.pinv(design) @ labels  # (B, d, d_y): the minimum-norm solution
        predictions[:, i] = (xs[:, i : i + 1] @ weights)[:, 0]
    return (predictions if vector else predictions[..., 0]).float()


def averaging(xs, ys, mask=None) -> torch.Tensor:
    """ŷ_i = x_iᵀ w with w = mean_{j<i} y_j x_j (Garg et al.'s averaging estimator); 0 at the first example."""
    xs, ys = _as_float64(xs), _as_float64(ys)
    use = _fit_mask(ys, mask).to(torch.float64)
    sums = torch.cumsum(xs * (ys * use)[..., None], dim=1)  # (B, N, d): Σ_{j≤i} y_j x_j
    counts = torch.cumsum(use, dim=1).clamp(min=1)
    weights = torch.zeros_like(xs)
    weights[:, 1:] = (sums / counts[..., None])[:, :-1]
    return (xs * weights).sum(-1).float()


def nearest_neighbors(xs, ys, k: int = 3, mask=None) -> torch.Tensor:
    """Mean label of the k nearest previous x's (Euclidean; fewer while fewer exist); 0 at the first example."""
    xs, ys = _as_float64(xs), _as_float64(ys)
    use = _fit_mask(ys, mask)
    distances = torch.cdist(xs, xs)  # (B, N, N)
    allowed = torch.tril(torch.ones_like(distances, dtype=torch.bool), diagonal=-1) & use[:, None, :]
    distances = distances.masked_fill(~allowed, float("inf"))
    nearest = distances.topk(min(k, xs.shape[1]), dim=-1, largest=False)
    valid = torch.isfinite(nearest.values)
    labels = torch.gather(ys[:, None, :].expand(-1, xs.shape[1], -1), 2, nearest.indices) * valid
    return (labels.sum(-1) / valid.sum(-1).clamp(min=1)).float()


def require(module: str, extra: str = "baselines"):
    """Import an optional dependency, or raise an `ImportError` that names the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(f"this baseline needs {module}: pip install 'hf-icl[{extra}]'") from error


def _per_example(xs, ys, fit_predict, mask=None, min_examples: int = 1) -> torch.Tensor:
    """Predictions from `fit_predict(train_x, train_y, query_x) -> float`, refitted for every prompt and position."""
    xs, ys = np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64)
    use = np.ones(ys.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    predictions = np.zeros(ys.shape)
    for b in range(xs.shape[0]):
        for i in range(1, xs.shape[1]):
            keep = use[b, :i]
            if keep.sum() >= min_examples:
                predictions[b, i] = fit_predict(xs[b, :i][keep], ys[b, :i][keep], xs[b, i : i + 1])
    return torch.from_numpy(predictions).float()


def lasso(xs, ys, alpha: float = 0.01, mask=None) -> torch.Tensor:
    """scikit-learn `Lasso(alpha)` (no intercept) refitted on the pairs before each example."""
    linear_model = require("sklearn.linear_model")

    def fit_predict(train_x, train_y, query):
        model = linear_model.Lasso(alpha=alpha, fit_intercept=False, max_iter=10_000)
        return model.fit(train_x, train_y).predict(query)[0]

    return _per_example(xs, ys, fit_predict, mask)


def decision_tree(xs, ys, max_depth: int | None = 4, mask=None) -> torch.Tensor:
    """scikit-learn `DecisionTreeRegressor(max_depth)` refitted on the pairs before each example."""
    tree = require("sklearn.tree")

    def fit_predict(train_x, train_y, query):
        return tree.DecisionTreeRegressor(max_depth=max_depth, random_state=0).fit(train_x, train_y).predict(query)[0]

    return _per_example(xs, ys, fit_predict, mask)


def gradient_boosting(xs, ys, mask=None) -> torch.Tensor:
    """Gradient-boosted trees refitted before each example: xgboost's `XGBRegressor` (default settings, as Garg et
    al.), else scikit-learn's `HistGradientBoostingRegressor`."""
    try:
        import xgboost
    except ImportError:
        xgboost = None

    def fit_predict(train_x, train_y, query):
        if xgboost is not None:
            model = xgboost.XGBRegressor(n_jobs=1, random_state=0)
        else:
            model = require("sklearn.ensemble").HistGradientBoostingRegressor(random_state=0)
        return float(model.fit(train_x, train_y).predict(query)[0])

    return _per_example(xs, ys, fit_predict, mask)


def gd_two_layer_nn(xs, ys, hidden_size=100, steps=100, lr=5e-3, mask=None, seed=0) -> torch.Tensor:
    """A 2-layer ReLU net per prompt trained by Adam on the pairs before each example (Garg et al.'s GD baseline:
    hidden 100, lr 5e-3, 100 full-batch steps), all prompts of the batch in parallel."""
    xs, ys = _as_float64(xs).float(), _as_float64(ys).float()
    use = _fit_mask(ys, mask).float()
    batch, length, dims = xs.shape
    generator = torch.Generator().manual_seed(seed)
    predictions = torch.zeros(batch, length)
    for i in range(1, length):
        w1 = (torch.randn(batch, dims, hidden_size, generator=generator) / dims**0.5).requires_grad_()
        w2 = (torch.randn(batch, hidden_size, 1, generator=generator) / hidden_size**0.5).requires_grad_()
        optimizer = torch.optim.Adam([w1, w2], lr=lr)
        weight = use[:, :i] / use[:, :i].sum(1, keepdim=True).clamp(min=1)
        with torch.enable_grad():
            for _ in range(steps):
                fitted = (torch.relu(xs[:, :i] @ w1) @ w2)[..., 0]  # (B, i)
                loss = (((fitted - ys[:, :i]) ** 2) * weight).sum()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        with torch.no_grad():
            predictions[:, i] = (torch.relu(xs[:, i : i + 1] @ w1) @ w2)[:, 0, 0]
    return predictions


def gf2_parity(xs, ys) -> torch.Tensor:
    """The exact parity predictor: Gaussian elimination over GF(2) on the pairs before each example.

    x ∈ {±1}^d maps to bits (1 − x)/2 and y to (1 − y)/2, so y = Π_{j∈S} x[j] is the linear equation
    ⟨bits(x), 1_S⟩ = bit(y) over GF(2). ŷ_i is determined exactly when bits(x_i) lies in the span of the previous
    bit vectors, and is then the same combination of their labels; otherwise both labels stay possible.

    Args:
        xs: (B, N, d) with entries ±1. ys: (B, N) with entries ±1.

    Returns:
        (B, N) float32: ±1 where determined, 0 where not (an unbiased guess scores 1/2).
    """
    xs, ys = np.asarray(xs), np.asarray(ys)
    weights = 1 << np.arange(xs.shape[2])
    vectors = ((xs < 0).astype(np.int64) * weights).sum(-1)  # (B, N) bit masks
    labels = (ys < 0).astype(np.int64)
    predictions = np.zeros(ys.shape, dtype=np.float32)
    for b in range(xs.shape[0]):
        pivots: dict[int, tuple[int, int]] = {}  # leading bit -> (row, label), rows reduced against each other

        def reduce(row, label, pivots=pivots):
            for bit in sorted(pivots, reverse=True):
                if row >> bit & 1:
                    pivot_row, pivot_label = pivots[bit]
                    row, label = row ^ pivot_row, label ^ pivot_label
            return row, label

        for i in range(xs.shape[1]):
            row, label = reduce(int(vectors[b, i]), 0)
            if row == 0:  # in the span: the label is determined
                predictions[b, i] = 1.0 - 2.0 * label
            row, label = reduce(int(vectors[b, i]), int(labels[b, i]))
            if row:
                pivots[row.bit_length() - 1] = (row, label)
    return torch.from_numpy(predictions)


BASELINES = {
    "least_squares": least_squares,
    "averaging": averaging,
    "3_nearest_neighbors": nearest_neighbors,
    "lasso": lasso,
    "gd_two_layer_nn": gd_two_layer_nn,
    "decision_tree": decision_tree,
    "gradient_boosting": gradient_boosting,
    "gf2_parity": gf2_parity,
}
"""Name -> baseline, as the evaluator reports them."""
