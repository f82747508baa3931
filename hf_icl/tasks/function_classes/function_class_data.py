"""Fixed prompt sets of the in-context regression suite: one `datasets` builder config per function class (P5 §3.2,
Table 2), plus the out-of-distribution variants of linear regression (Garg et al. §4).

Each row is one prompt drawn by `hf_icl.tasks.function_classes.sample`: `xs` (N, d_in), `ys` (N) or (N, d_y), and
where the task has them `loss_mask`, `ss`, `y_tokens`. The test split is the paper's 1,280 prompts; `train` is the
fixed training set where the task has one (vector MQAR, P5 App. B.2) and otherwise a small reference sample (the
other tasks train on fresh prompts every step). Rows of a split come in blocks of 256 prompts, block j drawn with
the seed (seed, crc32(config name) … split stream, j), so every split's bytes depend on the seed alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import datasets
import numpy as np
import torch

from ..builder import RowBuilder, check_counts, split_stream
from .classes import FUNCTION_CLASSES, output_dim, sample

_VERSION = datasets.Version("1.1.0")  # bump whenever sampling changes
_BLOCK = 256
ARRAY_KEYS = ("xs", "ys", "ss", "y_tokens", "loss_mask", "targets")
CITATION = """@inproceedings{park2024mamba,
  title={Can Mamba Learn How to Learn? A Comparative Study on In-Context Learning Tasks},
  author={Park, Jongho and Park, Jaeseung and Xiong, Zheyang and Lee, Nayoung and Cho, Jaewoong and Oymak, Samet
  and Lee, Kangwook and Papailiopoulos, Dimitris}, booktitle={ICML}, year={2024}}"""
SAMPLER_OPTIONS: tuple[str, ...] = (
    "noise_std", "sparsity", "hidden_size", "depth", "p", "k", "n_pairs", "n_queries", "x_scale", "y_noise",
    "covariance", "orthant", "shared_subset",
)  # fmt: skip
OPTION_FIELDS: tuple[str, ...] = ("n_train", "n_validation", "n_test", "seed", "n_dims", "n_points", "input_dim")
OPTION_FIELDS += SAMPLER_OPTIONS
"""Keyword overrides `load_task(<function class>, ...)` accepts (those a task does not use are ignored)."""


@dataclasses.dataclass
class FunctionClassConfig(datasets.BuilderConfig):
    """One prompt set.

    Args:
        task: the function class (a key of `FUNCTION_CLASSES`).
        n_train, n_validation, n_test: prompts per split.
        seed: the only source of randomness.
        n_dims, n_points: d and N (default: the paper's, P5 Table 2).
        input_dim: x width, zero-padded beyond `n_dims` (default `n_dims`).
        noise_std, sparsity, hidden_size, depth, p, k, n_pairs, n_queries, shared_subset: the task's options
            (default: the paper's; fields a task does not use stay `None`).
        x_scale, y_noise, covariance, orthant: out-of-distribution prompts (see `function_classes`).
    """

    task: str = "linear_regression"
    n_train: int = 256
    n_validation: int = 256
    n_test: int = 1280
    seed: int = 0
    n_dims: int | None = None
    n_points: int | None = None
    input_dim: int | None = None
    noise_std: float | None = None
    sparsity: int | None = None
    hidden_size: int | None = None
    depth: int | None = None
    p: float | None = None
    k: int | None = None
    n_pairs: int | None = None
    n_queries: int | None = None
    x_scale: float | None = None
    y_noise: float | None = None
    covariance: str | None = None
    orthant: bool | None = None
    shared_subset: bool | None = None

    def resolved(self) -> dict:
        """`{"n_dims", "n_points", "options"}` with the paper's defaults filled in."""
        spec = FUNCTION_CLASSES[self.task]
        options = {key: getattr(self, key) for key in SAMPLER_OPTIONS if getattr(self, key) is not None}
        unused = sorted(set(options) - set(spec.options) - {"x_scale", "y_noise", "covariance", "orthant"})
        if unused:
            raise ValueError(f"{', '.join(unused)} do not apply to task {self.task!r}; its options: {spec.options}")
        n_points = self.n_points
        if n_points is None:
            queries = options.get("n_queries", spec.options.get("n_queries", 0))
            n_points = options.get("n_pairs", spec.options.get("n_pairs", 0)) + queries if queries else spec.n_points
        return {"n_dims": self.n_dims or spec.n_dims, "n_points": n_points, "options": options}


def validate_config(config: FunctionClassConfig) -> None:
    """Raises `ValueError` naming the field, the value and what is allowed."""
    if config.task not in FUNCTION_CLASSES:
        raise ValueError(f"task={config.task!r} is not one of: {', '.join(FUNCTION_CLASSES)}")
    check_counts(config, ("n_train", "n_validation", "n_test", "seed"))
    resolved = config.resolved()
    if config.input_dim is not None and config.input_dim < resolved["n_dims"]:
        raise ValueError(f"input_dim={config.input_dim} is not allowed: must be ≥ n_dims={resolved['n_dims']}")
    sample(config.task, 1, resolved["n_points"], resolved["n_dims"], 0, **_sampler_options(config))  # raises


def _sampler_options(config: FunctionClassConfig) -> dict:
    options = {**FUNCTION_CLASSES[config.task].prompt_set_options, **config.resolved()["options"]}
    if config.input_dim is not None:
        options["input_dim"] = config.input_dim
    return options


def iter_rows(config: FunctionClassConfig, split: str) -> Iterator[dict]:
    """The prompts of one split, in blocks of 256 drawn from (seed, crc32(name), split stream, block)."""
    resolved = config.resolved()
    count = {"train": config.n_train, "validation": config.n_validation, "test": config.n_test}[split]
    stream = split_stream(config.seed, split, config.name)
    for block, start in enumerate(range(0, count, _BLOCK)):
        size = min(_BLOCK, count - start)
        prompts = sample(
            config.task, size, resolved["n_points"], resolved["n_dims"], (*stream, block), **_sampler_options(config)
        )
        arrays = {key: prompts[key].numpy() for key in ARRAY_KEYS if key in prompts}
        for i in range(size):
            yield {key: value[i] for key, value in arrays.items()}


def features(config: FunctionClassConfig) -> datasets.Features:
    """Fixed-shape arrays per config (`Array2D` for matrices), so a split converts to tensors in one step."""
    resolved = config.resolved()
    n = resolved["n_points"]
    probe = sample(config.task, 1, n, resolved["n_dims"], 0, **_sampler_options(config))
    out = {}
    for key in ARRAY_KEYS:
        if key not in probe:
            continue
        shape, dtype = tuple(probe[key].shape[1:]), "bool" if probe[key].dtype == torch.bool else "float32"
        out[key] = datasets.Array2D(shape, dtype) if len(shape) == 2 else datasets.Sequence(datasets.Value(dtype), n)
    return datasets.Features(out)


def prompts_from_rows(rows) -> dict[str, torch.Tensor]:
    """A split (or a slice of one) as the batch dict `sample` returns: stacked tensors."""
    table = rows.with_format("numpy")
    out = {}
    for key in ARRAY_KEYS:
        if key in rows.column_names:
            values = np.asarray(table[key])
            out[key] = torch.from_numpy(values.astype(bool) if values.dtype == bool else values.astype(np.float32))
    return out


def _config(name: str, task: str, description: str, **fields) -> FunctionClassConfig:
    return FunctionClassConfig(name=name, version=_VERSION, task=task, description=description, **fields)


OOD_VARIANTS: dict[str, dict] = {
    "scaled_x": {"x_scale": 2.0},
    "noisy_y": {"y_noise": 1.0},
    "skewed_covariance": {"covariance": "skewed"},
    "orthant": {"orthant": True},
}
"""Out-of-distribution prompt options, as the evaluator and the exported `linear_regression_<variant>` configs use
them (Garg et al. §4: scaled inputs, noisy labels, a skewed covariance, one orthant)."""


class FunctionClassBuilder(RowBuilder):
    """`datasets` builder of the suite's prompt sets. Instantiate it from the package (`hf_icl.load_task`).

    Args:
        config_name: a task name, `vector_mqar_4_queries`, or `linear_regression_<ood variant>`.
        cache_dir: where `datasets` caches the prepared arrow files.
        **config_kwargs: overrides of `FunctionClassConfig` fields.
    """

    VERSION = _VERSION
    BUILDER_CONFIG_CLASS = FunctionClassConfig
    BUILDER_CONFIGS = [
        *[
            _config(task, task, spec.description or f"P5 {task}, the paper's settings", **spec.builder_fields)
            for task, spec in FUNCTION_CLASSES.items()
        ],
        _config(
            "vector_mqar_4_queries", "vector_mqar", "P5 Table 3b: 32 pairs, 4 queries", n_queries=4, n_train=20_000,
            n_test=3000,
        ),
        *[
            _config(f"linear_regression_{name}", "linear_regression", f"linear regression, {name} prompts", **options)
            for name, options in OOD_VARIANTS.items()
        ],
    ]  # fmt: skip
    DEFAULT_CONFIG_NAME = "linear_regression"
    CITATION = CITATION
    validate_config = staticmethod(validate_config)
    SPLIT_SIZE_FIELDS = ("n_train", "n_validation", "n_test")
    iter_rows = staticmethod(iter_rows)

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=self.config.description, features=features(self.config), citation=self.CITATION
        )


def model_fields(task: str, n_dims: int, input_dim: int | None = None, **options) -> dict:
    """Config fields the task fixes: `input_dim`, `output_dim` and, for chain-of-thought, `cot_dim`."""
    spec = FUNCTION_CLASSES[task]
    fields = {"input_dim": input_dim or n_dims, "output_dim": output_dim(task, n_dims)}
    if spec.steps_option is not None:
        fields["cot_dim"] = {**spec.options, **options}[spec.steps_option]
    return fields
