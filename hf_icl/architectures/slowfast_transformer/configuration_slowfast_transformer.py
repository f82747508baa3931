"""Configuration of `icl_slowfast_transformer`: the slow/fast Transformer of P3 (Learning Fast and Slow, §3, App. C).

The shared fields describe the fast stream x: `hidden_size` is d_x, `num_attention_heads` is h_x and
`intermediate_size` is i_x, so the fast stream alone is exactly an `icl_transformer` of width d_x (that is what
`specialize` returns). The slow stream y adds `slow_dim` (d_y), `slow_heads` (h_y) and `slow_intermediate_size` (i_y).
DESIGN §5.7 fixes the readings of the points the paper leaves open; where the paper allows two, the other is a field.
"""

from __future__ import annotations

from typing import ClassVar

from ...modeling.configuration import ICLConfig, check_choice, size_presets

GENERATOR_ACTIVATIONS = ("tanh", "softmax")
SLOW_REGULARIZERS = ("elementwise", "vae", "none")
SLOW_DIVERSITY = ("orthogonal", "statistics")
SLOW_AUGMENT = ("auxiliary", "forward", "both")
TRUNCATED_HOLD = ("none", "truncation", "context")


class ICLSlowFastTransformerConfig(ICLConfig):
    r"""Slow/fast Transformer (P3): x/y streams, y^ℓ-generated low-rank modulation, slow-feature regularisers.

    Defaults are the `small` preset. Presets `tiny`/`small`/`base` narrow d_x so the non-embedding parameter count
    matches the Transformer of the same size (the slow stream and the generators cost parameters); `paper` is the
    ICL-arithmetic model of P3 App. C (6 layers, d_x = 112 with 7 heads, d_y = 64 with 4 heads, ℓ = 5 1-based, rank 4,
    M = 16; DESIGN §5.7.5).

    Args:
        slow_dim (`int`): d_y, width of the slow stream y.
        slow_heads (`int`): h_y, attention heads of the slow stream (d_y / h_y wide); their queries, keys and values
            read [x, y] (P3 App. C).
        slow_intermediate_size (`int`, *optional*): i_y, hidden width of the slow MLP (which reads [x, y]);
            defaults to `4 * slow_dim`.
        slow_layer (`int`): ℓ, 0-based. Blocks ν < ℓ run both streams and never let y into x; y^ℓ (the slow stream's
            output of block ℓ − 1, or its read-in when ℓ = 0) modulates every block ν ≥ ℓ, which run x alone.
        modulation_rank (`int`): r, rank of δW(y) = L̂(y) R̂(y)ᵀ.
        num_generators (`int`): M, number of generator pairs (L̂^(m), R̂^(m)) per modulated sub-layer.
        generator_activation (`str`): σ of the generator weights σ(S y^ℓ): `tanh` or `softmax`.
        generator_init_std (`float`): std of the R̂^(m) initialisation; L̂^(m) start at zero, so T starts as the
            identity (DESIGN §5.7.3).
        slow_regularizer (`str`): `elementwise` (R_C and R_D, P3 §3.2), `vae` (y ~ N(μ, diag σ²) with the
            Gaussian-process-prior KL, §3.3) or `none`.
        slow_diversity (`str`): `orthogonal` (R_D, the orthogonal projection loss of §3.2) or `statistics` (R'_D,
            the sample-statistics form of App. B).
        slow_change_weight (`float`): w_C; the model reports w_C·R_C as the auxiliary loss `slow_change`.
        slow_diversity_weight (`float`): w_D; reported as `slow_diversity` (w_D·R_D or w_D·R'_D).
        slow_kl_weight (`float`): β; reported as `slow_kl` (β·KL per position and channel).
        gp_noise (`float`): ν of the prior kernel K²(ν δ + (1 − ν) RBF).
        gp_length (`float`): σ_len of the RBF, as a fraction of the sequence length.
        gp_scale (`float`): K of the prior kernel.
        truncated_loss_weight (`float`): weight of the auxiliary truncated loss (P3 §3.5), reported as `truncated_lm`
            in training whenever labels are given; 0 turns it off.
        truncated_context (`int`): l_Δ, tokens of local context before the truncated loss starts.
        truncated_max_fraction (`float`): l_trunc ~ U{0, …, ⌊fraction · n⌋ − l_Δ} (P3 App. C: 3/4).
        truncated_window (`int`, *optional*): l_ω; keep only [l_trunc, l_trunc + l_Δ + l_ω) (P3 App. C's shorter
            auxiliary context); `None` keeps the rest of the sequence.
        truncated_hold (`str`): ȳ in the truncated pass: `none` (y^ℓ shifted to the truncation), `truncation` (y^ℓ
            at l_trunc held for the whole truncated sequence, P3 §3.5) or `context` (held from the l_Δ-th token on,
            P3 §4.2's first specialisation setup).
        truncated_detach_slow (`bool`): stop gradients into ȳ (default: they flow, DESIGN §5.7.8).
        slow_smoothing (`int`): y augmentation: causal box smoothing over a random window of 1 … this many positions
            (training only; ≤ 1 is off).
        slow_shift (`int`): y augmentation: delay y by a random 0 … this many positions (training only).
        slow_augment (`str`): where the smoothing and shifting apply: `auxiliary` (only to ȳ), `forward` (the main
            pass) or `both`.
        See `ICLConfig` for the fast stream's fields.
    """

    model_type = "icl_slowfast_transformer"
    plain_layer_stack: ClassVar[bool] = False  # blocks ν < ℓ run two streams: a placed layer would need a rule
    block_features: ClassVar[tuple[str, ...]] = ("slowfast",)  # every layer is a two-stream `SlowFastBlock`
    PRESETS: ClassVar[dict[str, dict]] = {
        **size_presets(
            hidden_size=(60, 120, 232),
            num_attention_heads=(2, 2, 4),
            slow_dim=(16, 32, 64),
            slow_heads=(1, 2, 4),
            num_hidden_layers=(2, 4, 8),
            slow_layer=(1, 2, 6),
            num_generators=(4, 8, 16),
        ),
        "paper": dict(
            hidden_size=112,
            num_attention_heads=7,
            num_hidden_layers=6,
            slow_dim=64,
            slow_heads=4,
            slow_layer=4,
            modulation_rank=4,
            num_generators=16,
            max_position_embeddings=256,
        ),
    }

    mixer: str = "attention"
    position_embedding: str = "learned"
    ffn: str = "mlp"
    norm: str = "layernorm"
    hidden_act: str = "gelu_pytorch_tanh"  # GPT-2's tanh GELU, fused (gelu_new is the same function, slower on CPU)
    hidden_size: int = 120
    slow_dim: int = 32
    slow_heads: int = 2
    slow_intermediate_size: int | None = None
    slow_layer: int = 2
    modulation_rank: int = 4
    num_generators: int = 8
    generator_activation: str = "tanh"
    generator_init_std: float = 0.02
    slow_regularizer: str = "elementwise"
    slow_diversity: str = "orthogonal"
    slow_change_weight: float = 0.08
    slow_diversity_weight: float = 0.04
    slow_kl_weight: float = 0.1
    gp_noise: float = 0.03
    gp_length: float = 0.1
    gp_scale: float = 1.0
    truncated_loss_weight: float = 1.0
    truncated_context: int = 30
    truncated_max_fraction: float = 0.75
    truncated_window: int | None = None
    truncated_hold: str = "none"
    truncated_detach_slow: bool = False
    slow_smoothing: int = 0
    slow_shift: int = 0
    slow_augment: str = "auxiliary"

    def __post_init__(self, **kwargs):
        super().__post_init__(**kwargs)
        if self.slow_intermediate_size is None:
            self.slow_intermediate_size = 4 * self.slow_dim

    def check(self) -> None:
        """`ICLConfig.check` plus the slow stream's fields; errors name the field, the value and what is allowed."""
        super().check()
        check_choice("generator_activation", self.generator_activation, GENERATOR_ACTIVATIONS)
        check_choice("slow_regularizer", self.slow_regularizer, SLOW_REGULARIZERS)
        check_choice("slow_diversity", self.slow_diversity, SLOW_DIVERSITY)
        check_choice("slow_augment", self.slow_augment, SLOW_AUGMENT)
        check_choice("truncated_hold", self.truncated_hold, TRUNCATED_HOLD)
        check_choice("mixer_types", sorted(set(self.mixer_types)), [["attention"]])
        check_choice("ffn_types", sorted(set(self.ffn_types)), [["mlp"]])
        for field in ("slow_dim", "slow_heads", "modulation_rank", "num_generators"):
            if getattr(self, field) < 1:
                raise ValueError(f"{field}={getattr(self, field)} must be a positive integer")
        if self.slow_dim % self.slow_heads:
            raise ValueError(f"slow_dim={self.slow_dim} must be divisible by slow_heads={self.slow_heads}")
        if not 0 <= self.slow_layer < self.num_hidden_layers:
            raise ValueError(
                f"slow_layer={self.slow_layer} must be in [0, {self.num_hidden_layers - 1}] (0-based; "
                f"num_hidden_layers={self.num_hidden_layers}): at least one block must be modulated"
            )
        if not 0.0 <= self.gp_noise <= 1.0:
            raise ValueError(f"gp_noise={self.gp_noise} must be in [0, 1]")
        if self.gp_length <= 0 or self.gp_scale <= 0:
            raise ValueError(f"gp_length={self.gp_length} and gp_scale={self.gp_scale} must be > 0")
        if self.truncated_context < 0 or not 0.0 < self.truncated_max_fraction <= 1.0:
            raise ValueError(
                f"truncated_context={self.truncated_context} must be ≥ 0 and truncated_max_fraction="
                f"{self.truncated_max_fraction} in (0, 1]"
            )
        if self.truncated_window is not None and self.truncated_window < 1:
            raise ValueError(f"truncated_window={self.truncated_window} must be a positive integer or None")
        for field in ("slow_change_weight", "slow_diversity_weight", "slow_kl_weight", "truncated_loss_weight"):
            if getattr(self, field) < 0:
                raise ValueError(f"{field}={getattr(self, field)} must be ≥ 0")
        if self.slow_smoothing < 0 or self.slow_shift < 0:
            raise ValueError(f"slow_smoothing={self.slow_smoothing} and slow_shift={self.slow_shift} must be ≥ 0")
