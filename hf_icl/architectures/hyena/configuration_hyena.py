"""Configuration of `icl_hyena`: the Hyena operator in the shared pre-norm block (paper 1, Appendix A.11)."""

from __future__ import annotations

from typing import ClassVar

from ...modeling.configuration import ICLConfig, size_presets


class ICLHyenaConfig(ICLConfig):
    r"""Hyena of order `hyena_order` (2): (N+1)·d projections with 3-tap short convolutions, N implicit long
    convolutions (filter FFN of width `hyena_filter_size`, exponential-decay window) with gating; then the MLP.

    `max_position_embeddings` only normalises the filters' positional features (no position embedding is added);
    longer inputs extrapolate the filters. Paper 1's reference code used `filter_order=64` at d=64, L=2, which
    puts about a third more parameters in the tiny model than the Transformer's; presets therefore widen the filter
    FFN with the model: `tiny` (d=64, L=2, width 16, the safari `HyenaFilter` default), `small` (d=128, L=4,
    width 32), `base` (d=256, L=8, width 64), with MLPs of 240/496/1000 (not 4d) so that every preset stays within a few
    per cent of the other architectures of its size. Defaults are the `small` preset.

    Args:
        See `ICLConfig`; this class only changes defaults.
    """

    model_type = "icl_hyena"
    PRESETS: ClassVar[dict[str, dict]] = size_presets(
        heads=False, hyena_filter_size=(16, 32, 64), intermediate_size=(240, 496, 1000)
    )

    mixer: str = "hyena"
    hyena_order: int = 2
    hyena_filter_size: int = 32
    position_embedding: str = "nope"
    hidden_act: str = "gelu"
