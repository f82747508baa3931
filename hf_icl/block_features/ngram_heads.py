"""N-gram heads placed into any architecture by configuration (paper 1, §6, Appendix F Figure 8): a block feature.

`config.ngram_heads` lists where the blocks go: `{"layer": m, "orders": [1, 2, 3], "replace": False}` inserts
NgramBlock(1), NgramBlock(2), NgramBlock(3) after layer m (0-based; negative m counts from the output, so −1 is
the last layer); with `"replace": True` they take layer m's place. P1 writes these bundles NGH_m^(1,2,3): Table 1
inserts after layer 1, the language models of Table 2 replace layers 1 and −2. Inserted blocks get cache slots
after the L regular layers, so every layer keeps its own state. `train.py --ngram-heads 1:1,2,3` sets the field, and
run folders name the bundles (`transformer+ngh1.123`).
"""

from __future__ import annotations

from collections.abc import Mapping

from torch import nn

from ..mixers.ngram import NgramHead
from ..modeling.rms_norm import RMSNorm
from .feature_registry import BlockFeature, ConfigField, FeatureOption, register_block_feature

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
        self.mixer_norm = RMSNorm(width, eps=config.layer_norm_epsilon)
        self.mixer = NgramHead(config, layer_idx, order)
        self.ffn_norm = RMSNorm(width, eps=config.layer_norm_epsilon)
        self.ffn = nn.Sequential(nn.Linear(width, width, bias=False), nn.SiLU(), nn.Linear(width, width, bias=False))
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, hidden_states, attention_mask=None, cache=None, input_ids=None, position_ids=None, **context):
        # The block context reaches the head (which ignores it); the fixed MLP of Figure 8 takes none.
        mixed = self.mixer(
            self.mixer_norm(hidden_states), attention_mask=attention_mask, cache=cache, input_ids=input_ids, **context
        )  # (B, T, d)
        hidden_states = hidden_states + self.dropout(mixed)
        return hidden_states + self.dropout(self.ffn(self.ffn_norm(hidden_states)))  # (B, T, d)


def ngram_heads_label(specs) -> str:
    """A short name for `config.ngram_heads` to append to an architecture's: `+ngh1.123` for NGH^1,2,3 after layer 1,
    `+nghr-2.123` where the bundle replaces layer -2; "" without n-gram heads."""
    return "".join(
        f"+ngh{'r' if spec.get('replace') else ''}{spec['layer']}.{''.join(map(str, spec['orders']))}"
        for spec in specs or []
    )


def parse_ngram_heads(text: str) -> list[dict]:
    """`"1:1,2,3"` -> `[{"layer": 1, "orders": [1, 2, 3], "replace": False}]` (the `ngram_heads` config field).

    Entries are `LAYER:ORDERS[:replace]`, separated by `;` (e.g. `"1:1,2,3:replace;-2:1,2,3:replace"`).

    Raises:
        ValueError: `entry '...' must look like ...`, naming the entry.
    """
    specs = []
    for entry in filter(None, (part.strip() for part in text.split(";"))):
        parts = entry.split(":")
        try:
            if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] != "replace"):
                raise ValueError
            specs.append(
                {"layer": int(parts[0]), "orders": [int(o) for o in parts[1].split(",")], "replace": len(parts) == 3}
            )
        except ValueError:
            raise ValueError(
                f"entry {entry!r} must look like LAYER:ORDERS[:replace], e.g. 1:1,2,3 or -2:1,2,3:replace"
            ) from None
    return specs


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


@register_block_feature(
    "ngram_heads",
    config_fields=(
        ConfigField(
            "ngram_heads",
            None,
            "n-gram blocks to place (P1 §6), each {layer: m, orders: [1, 2, 3], replace: false}: one NgramBlock per "
            "order after layer m (0-based; negative m counts from the output), or instead of layer m with replace",
            type=list,
        ),
        ConfigField(
            "ngram_shift",
            1,
            "shift_step of the n-gram heads (P1 Figure 7): read the token this far after a match",
            check=lambda name, value: _check_shift(name, value),
        ),
    ),
)
class NgramHeads(BlockFeature):
    """P1 §6's n-gram heads: `config.ngram_heads` places bundles of `NgramBlock`s into the layer stack."""

    selector = "ngram_heads"
    continuous_inputs = False
    needs_token_ids = "n-gram heads match token ids"
    edits_layer_stack = True
    option = FeatureOption(
        flag="--ngram-heads",
        parse=parse_ngram_heads,
        metavar="LAYER:ORDERS[:replace]",
        help="insert n-gram blocks (P1 §6) after layer LAYER (0-based, negative from the output), one per order, or "
        "replace that layer; ';'-separated or repeated, e.g. --ngram-heads 1:1,2,3 or "
        "--ngram-heads=1:1,2,3:replace;-2:1,2,3:replace (write '=' when LAYER is negative); sets config ngram_heads",
    )

    @classmethod
    def check_config(cls, config) -> None:
        check_ngram_heads(config.ngram_heads, config.num_hidden_layers)

    @classmethod
    def place_layers(cls, config, plan):
        """Each bundle's blocks after layer m's builder (or instead of it), one per order, in the given order."""
        num_layers = config.num_hidden_layers
        specs = {spec["layer"] % num_layers: spec for spec in config.ngram_heads or []}
        placed = []
        for i, builder in enumerate(plan[:num_layers]):
            spec = specs.get(i)
            if spec is None or not spec.get("replace", False):
                placed.append(builder)
            for order in spec["orders"] if spec is not None else ():
                placed.append(lambda slot, order=order: NgramBlock(config, slot, order))
        return placed + plan[num_layers:]

    @classmethod
    def label(cls, value) -> str:
        return ngram_heads_label(value)


def _check_shift(name: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name}={value!r} must be ≥ 0")
