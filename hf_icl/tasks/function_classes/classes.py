"""Function classes for in-context regression (paper 5 §3.2, Table 2; Garg et al., 2022; DESIGN §5.5).

`sample(task, batch_size, n_points, n_dims, seed, **options)` draws one batch of prompts, a fresh function per
prompt, deterministically from `seed` (numpy PCG64, the same bytes on any machine). Every prompt is a dict of
float32 tensors: `xs` (B, N, d_in) and `ys` (B, N) (or (B, N, d_y) for vector outputs), plus, where a task has
them, `loss_mask` (B, N) (the examples that are scored), `ss` (chain-of-thought steps) and `y_tokens` (vectors in
the y slots in place of the zero-padded y). `input_dim` ≥ `n_dims` zero-pads x to the model width, as the
curriculum's truncated dimensions (Garg et al.) are zeros. The samplers and the definitions of the classes are in
:mod:`.samplers`; :data:`FUNCTION_CLASSES` declares each class: its sampler, the paper's settings, how it is scored
and trained, and its baselines.

Out-of-distribution options (any task with Gaussian x; Garg et al. §4): `x_scale` multiplies x, `y_noise` adds
N(0, y_noise²) to the in-context labels (not to the scored targets), `covariance="skewed"` draws x ~ N(0, Σ) with
eigenvalues ∝ 1/i² (trace d) in a random basis, `orthant=True` puts every x of a prompt in one random orthant.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Callable

import numpy as np
import torch

from ..online import OnlineSampler
from .samplers import (
    cot_io,
    decision_tree,
    linear,
    many_outliers,
    orthogonal_outliers,
    relu_2nn,
    sparse_parity,
    task_rng,
)
from .samplers import vector_mqar as vector_mqar_draw


@dataclasses.dataclass(frozen=True)
class FunctionClass:
    """One task of the suite: its sampler, the paper's settings, how it is scored and trained, and its baselines.

    Args:
        draw: `(rng, batch_size, n_points, n_dims, **options) -> dict of arrays` (:mod:`.samplers`).
        n_dims, n_points: the paper's d and N (P5 Table 2).
        baselines: the baselines scored beside the model (names of :func:`.evaluation.baseline_predictions`; Garg et
            al. Fig. 2 and the P5 reference's `get_relevant_baselines`).
        options: default sampler options (the paper's k, p, h, ...).
        normalizer: the error is divided by this (`"n_dims"`, `"sparsity"` or 1), DESIGN §5.5.
        metric: `"squared_error"` or `"accuracy"` (sign agreement, sparse parity).
        curriculum: `(field, start, end, increment, every)` tuples of P5 App. A / Garg et al.
        output_dim: d_y of the read-out (`"n_dims"` for vector outputs).
        gaussian: x is Gaussian, so the out-of-distribution options apply.
        labelled_pairs: the option counting the leading pairs whose ys are model inputs, the rest being queries
            (vector MQAR's `n_pairs`); `None`: every y is an input.
        steps_option: the option sizing the chain-of-thought step s between x and y (`cot_dim`; `None`: no step).
        fixed_training_set: train for epochs on the builder's `train` split (P5 App. B.2) instead of fresh prompts.
        builder_fields: the prompt-set builder config's sizes where they differ from the defaults.
        prompt_set_options: sampler options of the builder's fixed prompt sets (the evaluation splits) where they
            differ from training's defaults; an option the user sets wins.
        paper_settings: run settings of the `paper` preset on top of P5 App. A's (learning rate, epochs, ...).
        cpu_settings: run settings of the `cpu` preset (the scaled runs of `experiments/`).
        description: the builder config's description.
    """

    draw: Callable
    n_dims: int
    n_points: int
    baselines: tuple[str, ...]
    options: dict = dataclasses.field(default_factory=dict)
    normalizer: str | int = "n_dims"
    metric: str = "squared_error"
    curriculum: tuple = ()
    output_dim: int | str = 1
    gaussian: bool = True
    labelled_pairs: str | None = None
    steps_option: str | None = None
    fixed_training_set: bool = False
    builder_fields: dict = dataclasses.field(default_factory=dict)
    prompt_set_options: dict = dataclasses.field(default_factory=dict)
    paper_settings: dict = dataclasses.field(default_factory=dict)
    cpu_settings: dict = dataclasses.field(default_factory=dict)
    description: str = ""

    def n_labelled(self, options: dict) -> int | None:
        """Pairs whose ys are model inputs (`None`: all of them)."""
        return None if self.labelled_pairs is None else {**self.options, **options}[self.labelled_pairs]

    def sequence_length(self, n_points: int, options: dict) -> int:
        """Tokens of one prompt: x and y per example (the labelled pairs' y only), plus the step s with CoT."""
        labelled = self.n_labelled(options)
        return n_points * (2 if self.steps_option else 1) + (n_points if labelled is None else labelled)


_LINEAR_CURRICULUM = (("n_dims", 5, 20, 1, 2000), ("n_points", 11, 41, 2, 2000))
_LONG_CURRICULUM = (("n_dims", 5, 20, 1, 2000), ("n_points", 26, 101, 5, 2000))
_LINEAR_BASELINES = ("least_squares", "averaging", "3_nearest_neighbors")
_OUTLIER_BASELINES = ("least_squares", "least_squares_clean_pairs")

FUNCTION_CLASSES: dict[str, FunctionClass] = {
    "linear_regression": FunctionClass(
        linear, 20, 41, _LINEAR_BASELINES, curriculum=_LINEAR_CURRICULUM,
        cpu_settings={"task_options": {"n_dims": 5, "n_points": 11}, "max_steps": 10_000, "lr": 3e-4, "curriculum": []},
    ),
    "noisy_linear_regression": FunctionClass(
        linear, 20, 41, _LINEAR_BASELINES, {"noise_std": 1.0}, curriculum=_LINEAR_CURRICULUM
    ),
    "sparse_linear_regression": FunctionClass(
        linear, 20, 101, (*_LINEAR_BASELINES, "lasso"), {"sparsity": 3}, normalizer="sparsity",
        curriculum=_LONG_CURRICULUM,
    ),
    "relu_2nn_regression": FunctionClass(
        relu_2nn, 20, 101, (*_LINEAR_BASELINES, "gd_two_layer_nn"), {"hidden_size": 100}, curriculum=_LONG_CURRICULUM
    ),
    "decision_tree": FunctionClass(
        decision_tree, 20, 101, (*_LINEAR_BASELINES, "decision_tree", "gradient_boosting"), {"depth": 4},
        normalizer=1, curriculum=_LONG_CURRICULUM,
    ),
    "orthogonal_outlier_regression": FunctionClass(
        orthogonal_outliers, 20, 101, _OUTLIER_BASELINES, {"p": 0.5}, curriculum=_LONG_CURRICULUM
    ),
    "many_outlier_regression": FunctionClass(many_outliers, 20, 512, _OUTLIER_BASELINES, {"p": 0.9}),
    "sparse_parity": FunctionClass(
        sparse_parity, 10, 140, ("gf2_parity",), {"k": 2, "shared_subset": True}, normalizer=1, metric="accuracy",
        gaussian=False, paper_settings={"lr": 4e-4},  # the reference parity config
        # the reference shares S within a training step; an evaluation set shared per 256-prompt block would hold
        # only a handful of functions, so it draws S per prompt
        prompt_set_options={"shared_subset": False},
        cpu_settings={"task_options": {"n_points": 40}, "max_steps": 1500},
    ),
    "cot_io": FunctionClass(
        cot_io, 10, 101, ("least_squares", "3_nearest_neighbors", "gd_two_layer_nn"), {"hidden_size": 8},
        steps_option="hidden_size",
    ),
    "vector_mqar": FunctionClass(
        vector_mqar_draw, 20, 48, ("nearest_key",), {"n_pairs": 32, "n_queries": 16}, normalizer=1,
        output_dim="n_dims", gaussian=False, labelled_pairs="n_pairs", fixed_training_set=True,
        builder_fields={"n_train": 20_000, "n_test": 3000}, description="P5 Table 3a: 32 pairs, 16 queries",
        # 300k sequences, 64 epochs; lr: best of logspace(-4, -2, 4), P5 App. B.2
        paper_settings={"max_steps": None, "epochs": 64, "n_train": 300_000, "lr": 4.64e-4},
        cpu_settings={"task_options": {"n_pairs": 8, "n_queries": 8}, "n_train": 32_000, "max_steps": 3000},
    ),
}  # fmt: skip
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
    check_sample_arguments(batch_size=batch_size, n_points=n_points, n_dims=n_dims, seed=seed)
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


def check_sample_arguments(seed, **sizes) -> None:
    """Refuse what numpy would fail on deep inside (or, for `batch_size=0`, silently return empty for).

    Args:
        seed: an integer >= 0 or a tuple of them.
        **sizes: `batch_size`, `n_points`, `n_dims`: integers >= 1.

    Raises:
        TypeError: a value of the wrong type, naming the argument.
        ValueError: a value out of range, naming the argument.
    """
    for name, value in sizes.items():
        if not isinstance(value, numbers.Integral) or isinstance(value, bool):
            raise TypeError(f"{name}={value!r} is not allowed: expected an integer >= 1, not {type(value).__name__}")
        if value < 1:
            raise ValueError(f"{name}={value!r} is not allowed: expected an integer >= 1")
    entropy = list(seed) if isinstance(seed, (tuple, list)) else [seed]
    for value in entropy:
        if not isinstance(value, numbers.Integral) or isinstance(value, bool):
            raise TypeError(f"seed={seed!r} is not allowed: expected an integer >= 0 or a tuple of them")
        if value < 0:
            raise ValueError(f"seed={seed!r} is not allowed: expected an integer >= 0 or a tuple of them")


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
