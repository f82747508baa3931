"""Configuration of `icl_regular_gpt` (paper 2, §3): sliding-dilated attention, adaptive depth, shared weights."""

from __future__ import annotations

from typing import ClassVar

from ...modeling.configuration import ICLConfig, size_presets


class ICLRegularGPTConfig(ICLConfig):
    r"""RegularGPT: a GPT-2 block whose attention is sliding-dilated with chunk size C.

    C is `dilated_attention_chunk_size` (saved configs that name it `chunk_size`, its former name, still load).

    `num_hidden_layers` is the thickness K: K distinct blocks, applied as a group at every depth
    l = 0 … ⌈log_C T⌉ − 1 with dilation C^l (weights shared across depth, P2 §3.2), where T is the input length
    at run time, unless `fixed_depth` fixes the number of levels (then an output never depends on later inputs,
    which in-context regression's prefix property needs; ⌈log_C T_max⌉ levels cover inputs up to T_max).
    Positions enter only through the learned offset biases r (no position embedding).
    Presets `tiny`/`small`/`base` match the Transformer presets' widths and parameter counts (K = 2/4/8);
    `paper` is P2 Table 4 (d=256, 8 heads, K=1). Every preset sets `dilated_attention_missing_keys="zero"`: keys
    before the sequence start are zero vectors kept in the softmax, as P2 pads its inputs; with them masked (the
    value a saved config without the field loads with) parity cannot be represented (see the mixer's docstring).

    Args:
        fixed_depth (`int`, *optional*): the number of levels l, whatever the input length (`None`: ⌈log_C T⌉ at
            run time).
        See `ICLConfig` for the other fields; this class changes their defaults.
    """

    model_type = "icl_regular_gpt"
    PRESETS: ClassVar[dict[str, dict]] = {
        **size_presets(dilated_attention_missing_keys="zero"),
        "paper": dict(
            hidden_size=256, num_hidden_layers=1, num_attention_heads=8, dilated_attention_missing_keys="zero"
        ),
    }
    plain_layer_stack: ClassVar[bool] = False  # blocks are reapplied at a depth set by the input length

    mixer: str = "dilated_attention"
    dilated_attention_chunk_size: int = 2
    position_embedding: str = "nope"
    num_hidden_layers: int = 1
    fixed_depth: int | None = None

    def check(self) -> None:
        super().check()
        if self.fixed_depth is not None and self.fixed_depth < 1:
            raise ValueError(f"fixed_depth={self.fixed_depth} must be a positive integer or None")
