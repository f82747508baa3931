"""The mixer registry: every token mixer declares itself, in its own file, with `@register_mixer`.

A mixer file holds everything about its mixer: the class, the config fields it reads (defaults, docstrings, range
checks), its capabilities (class attributes) and its FLOPs rule. The shared config (`modeling.configuration`) keeps
only the fields every architecture shares and fills in, from here, the fields of the mixers a config uses; the
skeleton builds a layer's mixer with `MIXERS[name](config, layer_idx)`. Nothing else lists mixers.

    @register_mixer("my_mixer", config_fields=(ConfigField("my_rank", 8, "rank of ...", check=positive_int),))
    class MyMixer(nn.Module):
        recurrent = True                 # cached decoding keeps a fixed-size state: O(1) per token
        returns_attention_maps = False   # softmax maps for `output_attentions` / the analysis tools
        mixing_maps = False              # exact linear maps: `mixing_map(hidden_states, mask) -> ops.MixingMap`
        map_axis = "heads"               # with either kind of map: what its H indexes (:data:`MAP_AXES`)
        map_rows_sum_to_one = False      # with either kind of map: every row of the map sums to 1
        continuous_inputs = True         # works on `inputs_embeds` alone (False if it reads `input_ids`)
        reads_shared_fields = ("num_attention_heads",)  # mixer-only shared fields it reads (`ICLConfig`)
        position_schemes = ("rope",)     # relative `position_embedding` values it applies

        def __init__(self, config, layer_idx): ...
        def forward(self, hidden_states, attention_mask=None, cache=None, input_ids=None, position_ids=None,
                    **context): ...
        def state_size(self) -> int | None: ...   # bytes of recurrent state per sequence; None for attention
        def multiplications(self, length) -> int: ...   # optional FLOPs rule (P5 App. C); default: weight matrices

This module imports nothing of hf_icl, so it ships with exported checkpoints (`modeling.remote_code`) and a plug-in
can import it where hf_icl is not installed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

MAP_AXES: dict[str, str] = {
    "heads": "one map per head of the mixer (`num_attention_heads`, or the mixer's own heads: Mamba-2's d_inner / "
    "head_dim)",
    "channels": "one map per channel of the hidden size d: each channel mixes alone",
    "inner channels": "one map per channel of the mixer's inner width: each mixes alone (Mamba: expand · d, 128 at "
    "the tiny preset)",
}
"""What the H of a mixer's (B, H, T, T) map indexes: a mixer with maps declares one (`map_axis`)."""


def positive_int(field: str, value) -> None:
    """Check for a `ConfigField`: an integer ≥ 1."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{field}={value!r} is not allowed: expected an integer >= 1")


def int_at_least(minimum: int) -> Callable[[str, Any], None]:
    """Check for a `ConfigField`: an integer ≥ `minimum`."""

    def check(field: str, value) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise ValueError(f"{field}={value!r} is not allowed: expected an integer >= {minimum}")

    return check


def one_of(*allowed) -> Callable[[str, Any], None]:
    """Check for a `ConfigField`: one of `allowed`."""

    def check(field: str, value) -> None:
        if value not in allowed:
            raise ValueError(f"{field}={value!r} is not allowed: expected one of {', '.join(map(repr, allowed))}")

    return check


def non_negative_int(field: str, value) -> None:
    """Check for a `ConfigField`: an integer ≥ 0."""
    int_at_least(0)(field, value)


@dataclasses.dataclass(frozen=True)
class ConfigField:
    """A config field a mixer reads, declared next to the mixer.

    Args:
        name: the config attribute (flat in `config.json`, like every other field).
        default: its value when a config does not give one (`None` with `derive`: computed from the config).
        doc: one line for docstrings, `--help` texts and the docs.
        type: the accepted type (`int`, `float`, `str`, ...); defaults to the type of `default`.
        check: `(name, value) -> None`, raising `ValueError` naming the field, the value and what is allowed.
        derive: `config -> value`, used when the value is `None` (e.g. Mamba's Δ rank ⌈d/16⌉).
        former_names: names the field had in older releases; a saved config using one still loads.
    """

    name: str
    default: Any
    doc: str
    type: type | None = None
    check: Callable[[str, Any], None] | None = None
    derive: Callable[[Any], Any] | None = None
    former_names: tuple[str, ...] = ()

    @property
    def value_type(self) -> type | None:
        return self.type if self.type is not None else (type(self.default) if self.default is not None else None)

    def resolve(self, config) -> Any:
        """The field's value on `config` (set if absent, derived if `None`), checked."""
        value = getattr(config, self.name, self.default)
        if value is None and self.derive is not None:
            value = self.derive(config)
        if self.check is not None and value is not None:
            self.check(self.name, value)
        return value


@dataclasses.dataclass(frozen=True)
class MixerSpec:
    """What the registry knows about one mixer (read from the class when it registers).

    Args:
        name: the name used in `config.mixer_types`.
        mixer_class: the `nn.Module` class.
        config_fields: the fields it reads beyond the shared config, by name.
        recurrent: cached decoding keeps a fixed-size state (O(1) per token; `state_size()` is not `None`).
        attention_maps: it returns softmax attention probabilities for `output_attentions`.
        mixing_maps: its output is linear in its values and `output_attentions` returns the exact (B, H, T, T) map
            (`mixing_map(hidden_states, mask)`, see `ops.mixing_maps`); defaults to False when not declared.
        continuous_inputs: it works on `inputs_embeds` alone (no `input_ids`).
        check_config: `config -> None`, the mixer's checks across fields (its class's `check_config`), or `None`.
        reads_shared_fields: the shared config fields only some mixers read (`ICLConfig.MIXER_ONLY_FIELDS`, e.g.
            `num_attention_heads`) that this one reads (its class's `reads_shared_fields`).
        position_schemes: the relative `position_embedding` values it applies (`rope`, `alibi`, ...; its class's
            `position_schemes`); the skeleton itself applies `learned` and `nope`.
        map_axis: for a mixer with maps (softmax or exact linear), what the H of its (B, H, T, T) map indexes, one
            of :data:`MAP_AXES`; `None` without maps.
        map_rows_sum_to_one: every row of its map sums to 1 (softmax attention, Based's normalised feature map,
            RWKV-4's per-channel softmax); a linear map's rows need not (a decay or a gate scales them).
    """

    name: str
    mixer_class: type
    config_fields: Mapping[str, ConfigField]
    recurrent: bool
    attention_maps: bool
    continuous_inputs: bool
    mixing_maps: bool = False
    check_config: Callable[[Any], None] | None = None
    reads_shared_fields: frozenset[str] = frozenset()
    position_schemes: tuple[str, ...] = ()
    map_axis: str | None = None
    map_rows_sum_to_one: bool = False


MIXERS: dict[str, type] = {}
"""Mixer name -> class, for every registered mixer."""
_SPECS: dict[str, MixerSpec] = {}


def register_mixer(name: str, mixer_class: type | None = None, *, config_fields: tuple[ConfigField, ...] = ()):
    """Register a token mixer under `name`; usable as a class decorator.

    Args:
        name: the name configs use in `mixer_types` (and `mixer`).
        mixer_class: the class (omit it to decorate).
        config_fields: the config fields the mixer reads beyond the shared ones.

    Raises:
        ValueError: the name is taken, the class lacks part of the mixer interface, or a field is already declared by
            another mixer with another default or type.
    """

    def register(cls: type) -> type:
        if name in MIXERS:
            raise ValueError(f"mixer {name!r} is already registered (by {MIXERS[name].__qualname__})")
        missing = [attr for attr in ("forward", "state_size", "recurrent", "returns_attention_maps")
                   if not hasattr(cls, attr)]  # fmt: skip
        if missing:
            raise ValueError(f"mixer {name!r} ({cls.__qualname__}) lacks {', '.join(missing)} of the mixer interface")
        fields = {}
        for field in config_fields:
            other = declared_field(field.name)
            if other is not None and (other.default, other.value_type) != (field.default, field.value_type):
                raise ValueError(
                    f"mixer {name!r} declares config field {field.name!r} with default {field.default!r}, but another "
                    f"mixer declares it with default {other.default!r}; share one declaration"
                )
            fields[field.name] = field
        MIXERS[name] = cls
        _SPECS[name] = MixerSpec(
            name=name,
            mixer_class=cls,
            config_fields=MappingProxyType(fields),
            recurrent=bool(cls.recurrent),
            attention_maps=bool(cls.returns_attention_maps),
            continuous_inputs=bool(getattr(cls, "continuous_inputs", True)),
            check_config=getattr(cls, "check_config", None),
            mixing_maps=bool(getattr(cls, "mixing_maps", False)),
            reads_shared_fields=frozenset(getattr(cls, "reads_shared_fields", ())),
            position_schemes=tuple(getattr(cls, "position_schemes", ())),
            map_axis=getattr(cls, "map_axis", None),
            map_rows_sum_to_one=bool(getattr(cls, "map_rows_sum_to_one", False)),
        )
        spec = _SPECS[name]
        if spec.mixing_maps and not hasattr(cls, "mixing_map"):
            del MIXERS[name], _SPECS[name]
            raise ValueError(f"mixer {name!r} ({cls.__qualname__}) declares mixing_maps but has no mixing_map method")
        if (spec.mixing_maps or spec.attention_maps) and spec.map_axis not in MAP_AXES:
            del MIXERS[name], _SPECS[name]
            raise ValueError(
                f"mixer {name!r} ({cls.__qualname__}) reports maps, so map_axis (what H of its maps indexes) must be "
                f"one of: {', '.join(MAP_AXES)}; it is {spec.map_axis!r}"
            )
        return cls

    return register(mixer_class) if mixer_class is not None else register


def unregister_mixer(name: str) -> None:
    """Remove a mixer registered with :func:`register_mixer` (tests, plug-ins)."""
    MIXERS.pop(name)
    _SPECS.pop(name)


def mixer_spec(name: str) -> MixerSpec:
    """The registry entry of mixer `name`.

    Raises:
        ValueError: naming the mixer and the registered ones.
    """
    if name not in _SPECS:
        raise ValueError(f"mixer={name!r} is not one of: {', '.join(sorted(_SPECS))}")
    return _SPECS[name]


def list_mixers() -> list[str]:
    """The registered mixer names."""
    return sorted(_SPECS)


def declared_field(name: str) -> ConfigField | None:
    """The declaration of config field `name` by any registered mixer, or `None`."""
    for spec in _SPECS.values():
        if name in spec.config_fields:
            return spec.config_fields[name]
    return None


def fields_of(mixer_names) -> dict[str, ConfigField]:
    """The config fields the mixers `mixer_names` read, by field name (unknown names raise like `mixer_spec`)."""
    fields = {}
    for name in dict.fromkeys(mixer_names):
        fields.update(mixer_spec(name).config_fields)
    return fields


def all_fields() -> dict[str, ConfigField]:
    """Every config field any registered mixer declares."""
    return fields_of(_SPECS)
