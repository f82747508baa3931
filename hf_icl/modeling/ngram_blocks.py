"""N-gram blocks and their insertion into any architecture by configuration (paper 1, §6, Appendix F Figure 8).

`config.ngram_heads` lists where the blocks go: `{"layer": m, "orders": [1, 2, 3], "replace": False}` inserts
NgramBlock(1), NgramBlock(2), NgramBlock(3) after layer m (0-based; negative m counts from the output, so −1 is
the last layer); with `"replace": True` they take layer m's place. P1 writes these bundles NGH_m^(1,2,3): Table 1
inserts after layer 1, the language models of Table 2 replace layers 1 and −2. Inserted blocks get cache slots
after the L regular layers, so every layer keeps its own state.
"""

from __future__ import annotations

from collections.abc import Mapping

from torch import nn

from ..mixers.ngram import NgramHead
from .layers import DecoderBlock

SPEC_KEYS = ("layer", "orders", "replace")


class NgramBlock(nn.Module):
    """RMSNorm → NGH^n → residual → RMSNorm → MLP (hidden d, SiLU) → residual (P1 Figure 8).

    4d² weights: W1, W2 of the head and the two d×d MLP matrices (no biases), plus the two norms' gains.

    Args:
        config: an `ICLConfig` (uses hidden_size, layer_norm_epsilon, ngram_shift, dropout).
        layer_idx (`int`): the block's cache slot.
        order (`int`): n-gram order of the head.
    """

    def __init__(self, config, layer_idx: int, order: int):
        super().__init__()
        width = config.hidden_size
        self.mixer_norm = nn.RMSNorm(width, eps=config.layer_norm_epsilon)
        self.mixer = NgramHead(config, layer_idx, order)
        self.ffn_norm = nn.RMSNorm(width, eps=config.layer_norm_epsilon)
        self.ffn = nn.Sequential(nn.Linear(width, width, bias=False), nn.SiLU(), nn.Linear(width, width, bias=False))
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, hidden_states, attention_mask=None, cache=None, input_ids=None, position_ids=None, **context):
        # The block context reaches the head (which ignores it); the fixed MLP of Figure 8 takes none.
        mixed = self.mixer(
            self.mixer_norm(hidden_states), attention_mask=attention_mask, cache=cache, input_ids=input_ids, **context
        )
        hidden_states = hidden_states + self.dropout(mixed)
        return hidden_states + self.dropout(self.ffn(self.ffn_norm(hidden_states)))  # (B, T, d)


def ngram_heads_label(specs) -> str:
    """A short name for `config.ngram_heads` to append to an architecture's: `+ngh1.123` for NGH^1,2,3 after layer 1,
    `+nghr-2.123` where the bundle replaces layer -2; "" without n-gram heads."""
    return "".join(
        f"+ngh{'r' if spec.get('replace') else ''}{spec['layer']}.{''.join(map(str, spec['orders']))}"
        for spec in specs or []
    )


def check_ngram_heads(specs, num_layers: int) -> None:
    """Validate `config.ngram_heads`; errors name the entry, the value and what is allowed."""
    if specs is None:
        return
    if not isinstance(specs, list | tuple):
        raise ValueError(f"ngram_heads={specs!r} must be a list of {{layer, orders, replace}} entries or None")
    seen = {}
    for i, spec in enumerate(specs):
        field = f"ngram_heads[{i}]"
        if not isinstance(spec, Mapping):
            raise ValueError(f"{field}={spec!r} must be a mapping with keys: {', '.join(SPEC_KEYS)}")
        for key in spec:
            if key not in SPEC_KEYS:
                raise ValueError(f"{field} has key {key!r}, which is not one of: {', '.join(SPEC_KEYS)}")
        layer, orders = spec.get("layer"), spec.get("orders")
        if not isinstance(layer, int) or isinstance(layer, bool) or not -num_layers <= layer < num_layers:
            raise ValueError(
                f"{field}.layer={layer!r} must be an integer in [{-num_layers}, {num_layers - 1}] "
                f"(num_hidden_layers={num_layers}; negative counts from the output)"
            )
        valid = isinstance(orders, list | tuple) and len(orders) > 0
        if not valid or not all(isinstance(o, int) and not isinstance(o, bool) and o >= 1 for o in orders):
            raise ValueError(f"{field}.orders={orders!r} must be a non-empty list of n-gram orders ≥ 1, e.g. [1, 2, 3]")
        if not isinstance(spec.get("replace", False), bool):
            raise ValueError(f"{field}.replace={spec['replace']!r} must be true or false")
        resolved = layer % num_layers
        if resolved in seen:
            raise ValueError(
                f"{field}.layer={layer} names layer {resolved} again (ngram_heads[{seen[resolved]}]); "
                "give each layer at most one entry"
            )
        seen[resolved] = i


def build_layers(config, block_class=DecoderBlock) -> nn.ModuleList:
    """The decoder's layers in order: `block_class(config, i)` for i < L, with the n-gram blocks placed."""
    num_layers = config.num_hidden_layers
    specs = {spec["layer"] % num_layers: spec for spec in config.ngram_heads or []}
    layers, slot = [], num_layers
    for i in range(num_layers):
        spec = specs.get(i)
        if spec is None or not spec.get("replace", False):
            layers.append(block_class(config, i))
        for order in spec["orders"] if spec is not None else ():
            layers.append(NgramBlock(config, slot, order))
            slot += 1
    return nn.ModuleList(layers)
