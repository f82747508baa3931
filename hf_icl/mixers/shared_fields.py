"""Config fields that several mixers read, declared once here and listed by each mixer that uses them."""

from __future__ import annotations

from .registry import ConfigField, positive_int

SCAN_CHUNK_SIZE = ConfigField(
    "scan_chunk_size", 64, "chunk length of the chunked training forms (linear-attention family, Mamba scan)",
    check=positive_int,
)  # fmt: skip
SSM_STATE_SIZE = ConfigField("ssm_state_size", 16, "state size N of the state-space mixers", check=positive_int)
CONV_KERNEL = ConfigField(
    "conv_kernel", 4, "width of the short causal depthwise convolution (Mamba, H3's shift SSM)", check=positive_int
)
