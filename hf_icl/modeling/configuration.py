"""`ICLConfig`: the configuration every hf_icl architecture shares (paper 1, Appendix A.2).

An architecture subclasses it to set `model_type`, its defaults and its `PRESETS`; per-layer mixer choice is data
(`mixer_types`), so hybrids are configurations rather than new code paths. The config keeps only the fields every
architecture shares; each mixer declares the fields it reads in its own file (`hf_icl.mixers.registry.ConfigField`),
and a config gets, as flat attributes, those of the mixers its layers use, and those of every registered block
feature (`hf_icl.block_features.feature_registry`), whose hooks it runs. `config.json` stays one flat file.
"""

from __future__ import annotations

from typing import ClassVar

from transformers import PreTrainedConfig

from ..block_features.feature_registry import BLOCK_FEATURES, feature_fields, used_block_features
from ..mixers.registry import all_fields, fields_of, list_mixers, mixer_spec
from .remote_code import save_pretrained_with_code

FFN_TYPES = ("mlp", "glu", "none")
NORM_TYPES = ("layernorm", "rmsnorm")
POSITION_EMBEDDINGS = ("learned", "rope", "alibi", "hard_alibi", "nope")
SKELETON_POSITIONS = ("learned", "nope")
"""The `position_embedding` values the skeleton applies itself (absolute learned positions, or none); the relative
ones are applied by the mixers that declare them (`position_schemes`)."""
MIXER_ONLY_FIELDS = ("num_attention_heads", "attention_dropout", "rope_theta")
"""Shared fields the skeleton never reads: only the mixers that list them in `reads_shared_fields` do. Every other
shared field is read by the skeleton of every architecture; an override of one of these that no mixer of the
config reads is refused (:func:`unread_override`)."""


def check_choice(field: str, value, allowed) -> None:
    """Raise `ValueError` naming `field`, its `value` and the allowed values unless `value in allowed`."""
    if value not in allowed:
        raise ValueError(f"{field}={value!r} is not one of: {', '.join(map(str, allowed))}")


# The size presets every architecture offers: one width and depth per size name, with the Transformer's heads.
# Architectures reach the same non-embedding parameter count as the Transformer of that size through the deltas
# they pass to `size_presets` (more layers, a narrower FFN, ...), never by retyping these numbers.
SIZES: dict[str, dict] = {
    "tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2),
    "small": dict(hidden_size=128, num_hidden_layers=4, num_attention_heads=2),
    "base": dict(hidden_size=256, num_hidden_layers=8, num_attention_heads=4),
}


def size_presets(*, heads: bool = True, **deltas) -> dict[str, dict]:
    """One preset per entry of `SIZES`, with an architecture's deltas merged on top.

    Args:
        heads (`bool`): keep the shared `num_attention_heads`; `False` for mixers without heads (the config class
            default then stays, as it is not a size).
        **deltas: config fields; a tuple gives one value per size in `SIZES` order (tiny, small, base), any other
            value applies to every size.

    Returns:
        `{size: {field: value}}`, ready to be an `ICLConfig.PRESETS` (add named non-size presets to it).
    """
    presets = {}
    for i, (size, shared) in enumerate(SIZES.items()):
        values = dict(shared) if heads else {k: v for k, v in shared.items() if k != "num_attention_heads"}
        for field, value in deltas.items():
            if isinstance(value, tuple):
                if len(value) != len(SIZES):
                    raise ValueError(f"{field}={value!r} must give one value per size: {', '.join(SIZES)}")
                value = value[i]
            values[field] = value
        presets[size] = values
    return presets


def unread_override(config, overrides, architecture: str) -> str | None:
    """Why an override changes nothing in `config`, in one line, or `None` when every override is read.

    An override is unread when it is a field of :data:`MIXER_ONLY_FIELDS` that no mixer of the config lists in its
    `reads_shared_fields`, or a `position_embedding` that neither the skeleton (:data:`SKELETON_POSITIONS`) nor one
    of its mixers (`position_schemes`) applies. Fields of mixers the config does not use are refused by `config_for`.

    Args:
        config: the config built with the overrides.
        overrides: field -> value, as given.
        architecture: the architecture's name, for the message.
    """
    used = [mixer_spec(name) for name in dict.fromkeys(config.mixer_types)]
    mixers = ", ".join(spec.name for spec in used)
    for key in overrides:
        if key in MIXER_ONLY_FIELDS and not any(key in spec.reads_shared_fields for spec in used):
            readers = [name for name in list_mixers() if key in mixer_spec(name).reads_shared_fields]
            return (
                f"{key}={overrides[key]!r} is read by no mixer of architecture {architecture!r} (mixers: "
                f"{mixers}), so it would change nothing; mixers that read it: {', '.join(readers) or 'none'}"
            )
    if "position_embedding" in overrides:
        applied = dict.fromkeys([*SKELETON_POSITIONS, *(scheme for spec in used for scheme in spec.position_schemes)])
        if config.position_embedding not in applied:
            return (
                f"position_embedding={config.position_embedding!r} is applied by no mixer of architecture "
                f"{architecture!r} (mixers: {mixers}), so it would change nothing; allowed: {', '.join(applied)}"
            )
    return None


def accepts_block_feature(config_class, feature) -> bool:
    """Whether configs of `config_class` may turn on block feature `feature` (a registered `BlockFeature` class), as
    the feature says (`BlockFeature.accepts`; by default: one that adds or removes layers needs a
    `plain_layer_stack`)."""
    return feature.accepts(config_class)


def block_feature_architectures(feature) -> list[str]:
    """Architectures (model types without the `icl_` prefix) whose config accepts block feature `feature`.

    Found by walking the imported `ICLConfig` subclasses, so the skeleton never imports the zoo (`import hf_icl`
    imports every architecture).
    """
    found, pending = set(), list(ICLConfig.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if accepts_block_feature(cls, feature) and cls.model_type.startswith("icl_"):
            found.add(cls.model_type.removeprefix("icl_"))
    return sorted(found)


class ICLConfig(PreTrainedConfig):
    r"""Shared configuration of the hf_icl decoder skeleton.

    Args:
        vocab_size (`int`): number of token ids.
        input_dim (`int`, *optional*): width d_x of continuous inputs; when set the backbone has no token
            embedding and reads `inputs_embeds` (e.g. `ICLForRegression`'s read-in `Linear(d_x, d)`).
        output_dim (`int`, *optional*): width d_y of `ICLForRegression`'s read-out `Linear(d, d_y)`.
        cot_dim (`int`, *optional*): width k of chain-of-thought steps s_i in in-context regression (P5 §3.2.4): x,
            s and y then get their own read-ins and ŝ its own read-out `Linear(d, k)` (needs `input_dim`).
        hidden_size (`int`): model width d.
        num_hidden_layers (`int`): number of blocks L.
        num_attention_heads (`int`): heads of attention-like mixers.
        intermediate_size (`int`, *optional*): FFN hidden width; defaults to `4 * hidden_size`.
        max_position_embeddings (`int`): longest input the learned positions cover.
        position_embedding (`str`): one of `POSITION_EMBEDDINGS` (learned is absolute; the others extrapolate).
        rope_theta (`float`): RoPE base.
        mixer (`str`): token mixer used by every layer unless `mixer_types` is given.
        mixer_types (`list[str]`, *optional*): per-layer token mixers (length `num_hidden_layers`).
        ffn (`str`): feed-forward net after each mixer: `mlp`, `glu` or `none`.
        ffn_types (`list[str]`, *optional*): per-layer feed-forward nets (length `num_hidden_layers`); hybrids such
            as "TF with initial Mamba" use `none` after the Mamba layer and `mlp` elsewhere.
        norm (`str`): `layernorm` or `rmsnorm`.
        hidden_act (`str`): activation of the MLP; `gelu_pytorch_tanh` is GPT-2's tanh GELU as one fused kernel
            (`gelu_new`, the same function in Python ops, is 7× slower on CPU).
        layer_norm_epsilon (`float`): epsilon of the norms.
        dropout (`float`): dropout on embeddings and residual branches.
        attention_dropout (`float`): dropout on attention probabilities.
        initializer_range (`float`): std of the normal initialisation.
        use_bias (`bool`): biases in linear layers.
        preset (`str`, *optional*): the size preset these values came from (informational).
        **mixer fields: the fields of the mixers in `mixer_types` (e.g. `gate_low_rank` for GLA, `ssm_state_size`
            for Mamba), declared in each mixer's file; `hf_icl.mixers.fields_of(config.mixer_types)` lists them.
            Fields of other mixers found in a saved config (every field was shared before) are kept as they are.
        **block feature fields: the fields every registered block feature declares in its own file (e.g. the
            layer placements that turn one on); `hf_icl.block_features.feature_fields()` lists them.
    """

    model_type = "icl"
    PRESETS: ClassVar[dict[str, dict]] = {}
    plain_layer_stack: ClassVar[bool] = True
    """False where `run_layers` does not apply `self.layers` once each, in order (blocks reapplied, two streams):
    block features that add or remove layers (`edits_layer_stack`) are then refused."""
    block_features: ClassVar[tuple[str, ...]] = ()
    """Block features this config class turns on whatever its field values (an architecture built on one)."""

    vocab_size: int = 20
    input_dim: int | None = None
    output_dim: int | None = None
    cot_dim: int | None = None
    hidden_size: int = 128
    num_hidden_layers: int = 4
    num_attention_heads: int = 2
    intermediate_size: int | None = None
    max_position_embeddings: int = 1024
    position_embedding: str = "learned"
    rope_theta: float = 10000.0
    mixer: str = "attention"
    mixer_types: list[str] | None = None
    ffn: str = "mlp"
    ffn_types: list[str] | None = None
    norm: str = "layernorm"
    hidden_act: str = "gelu_pytorch_tanh"
    layer_norm_epsilon: float = 1e-5
    dropout: float = 0.0
    attention_dropout: float = 0.0
    initializer_range: float = 0.02
    use_bias: bool = True
    use_cache: bool = True
    tie_word_embeddings: bool = True
    pad_token_id: int | None = 0
    eos_token_id: int | None = 0
    bos_token_id: int | None = None
    preset: str | None = None

    def __post_init__(self, **kwargs):
        for field in all_fields().values():  # configs saved before a mixer field was renamed still load
            for former in field.former_names:
                if former not in kwargs:
                    continue
                legacy = kwargs.pop(former)
                current = kwargs.get(field.name, getattr(self, field.name, field.default))
                if current not in (field.default, legacy):
                    raise ValueError(
                        f"{former}={legacy} (former name) disagrees with {field.name}={current}; give only the latter"
                    )
                kwargs[field.name] = legacy
        super().__post_init__(**kwargs)  # names that are not dataclass fields (mixer fields) become attributes
        if self.intermediate_size is None:
            self.intermediate_size = 4 * self.hidden_size
        if self.mixer_types is None:
            self.mixer_types = [self.mixer] * self.num_hidden_layers
        self.mixer_types = list(self.mixer_types)
        if self.ffn_types is None:
            self.ffn_types = [self.ffn] * self.num_hidden_layers
        self.ffn_types = list(self.ffn_types)
        for i, name in enumerate(self.mixer_types):
            check_choice(f"mixer_types[{i}]", name, list_mixers())
        self.check_sizes()  # mixer fields derive from them (head_dim = hidden_size // num_attention_heads)
        for field in fields_of(self.mixer_types).values():  # the used mixers' fields: default, derived, checked
            setattr(self, field.name, field.resolve(self))
        for field in feature_fields().values():  # every block feature's fields: any config may turn one on
            setattr(self, field.name, field.resolve(self))
        self.check()

    def mixer_fields(self) -> dict:
        """`{name: value}` of the fields the mixers of this config read (beyond the shared ones)."""
        return {name: getattr(self, name) for name in fields_of(self.mixer_types)}

    def check(self) -> None:
        """Validate field values; every error names the field, the value and what is allowed."""
        check_choice("position_embedding", self.position_embedding, POSITION_EMBEDDINGS)
        check_choice("ffn", self.ffn, FFN_TYPES)
        check_choice("norm", self.norm, NORM_TYPES)
        for field, allowed in (("mixer_types", list_mixers()), ("ffn_types", FFN_TYPES)):
            values = getattr(self, field)
            for i, name in enumerate(values):
                check_choice(f"{field}[{i}]", name, allowed)
            if len(values) != self.num_hidden_layers:
                raise ValueError(f"{field} has {len(values)} entries but num_hidden_layers={self.num_hidden_layers}")
        self.check_sizes()
        for field in fields_of(self.mixer_types).values():
            field.resolve(self)
        for name in dict.fromkeys(self.mixer_types):
            spec = mixer_spec(name)
            if spec.check_config is not None:
                spec.check_config(self)
        if self.cot_dim is not None and self.input_dim is None:
            raise ValueError(f"cot_dim={self.cot_dim} needs continuous inputs: set input_dim (and output_dim)")
        for field in ("input_dim", "output_dim", "cot_dim"):
            value = getattr(self, field)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ValueError(f"{field}={value!r} must be a positive integer or None")
        for field in feature_fields().values():
            field.resolve(self)
        for name in self.block_features:
            if name not in BLOCK_FEATURES:
                raise ValueError(
                    f"block feature {name!r} of {self.model_type} is not one of: {', '.join(BLOCK_FEATURES)}"
                )
        for feature in used_block_features(self):
            if not accepts_block_feature(type(self), feature):
                value = f"{feature.selector}={getattr(self, feature.selector)!r}" if feature.selector else feature.name
                off = feature.config_fields[feature.selector].default if feature.selector else None
                raise ValueError(
                    f"{value} is not supported by {self.model_type} ({feature.name} needs {feature.requirement}); "
                    f"allowed: {off!r}. Architectures that accept {feature.name}: "
                    f"{', '.join(block_feature_architectures(feature))}"
                )
            feature.check_config(self)
        for field in ("vocab_size", "num_hidden_layers", "max_position_embeddings"):
            if getattr(self, field) < 1:
                raise ValueError(f"{field}={getattr(self, field)} must be a positive integer")

    def check_sizes(self) -> None:
        """The sizes every other field is derived from: positive integers, the width divisible by the heads."""
        for field in ("num_attention_heads", "hidden_size"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{field}={value!r} is not allowed: expected an integer >= 1")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size={self.hidden_size} must be divisible by num_attention_heads={self.num_attention_heads}"
            )

    @classmethod
    def from_preset(cls, preset: str = "small", **overrides) -> ICLConfig:
        """Build a config from a size preset (`tiny`, `small`, `base`, ...) and keyword overrides.

        Args:
            preset (`str`): a key of `cls.PRESETS`.
            **overrides: any config field.
        """
        check_choice("preset", preset, sorted(cls.PRESETS))
        values = {**cls.PRESETS[preset], **overrides}
        if "num_hidden_layers" in overrides:
            for per_layer in ("mixer_types", "ffn_types"):
                if per_layer not in overrides:
                    values.pop(per_layer, None)
        return cls(preset=preset, **values)

    def save_pretrained(self, save_directory, push_to_hub: bool = False, **kwargs):
        """`PreTrainedConfig.save_pretrained`; once the class is registered with `register_for_auto_class`, its code
        ships too, as flat modules (transformers' own copy cannot follow hf_icl's imports; see `remote_code`)."""
        return save_pretrained_with_code(self, super().save_pretrained, save_directory, push_to_hub, **kwargs)
