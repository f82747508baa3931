"""Generation cache shared by every architecture: one `MixerState` per layer inside a `transformers.Cache`.

Each mixer keeps whatever its recurrent form needs (keys/values for attention, a matrix state for linear
attention, a convolution window, n-gram running sums, ...) as named batch-first tensors in its layer's
`MixerState`. Because every field is batch-first, beam search reordering, `num_return_sequences` expansion and
batch selection are the same `index_select` for all of them.
"""

from __future__ import annotations

import torch
from transformers.cache_utils import Cache


class MixerState:
    """Per-layer recurrent state: named tensors whose first dimension is the batch.

    Args:
        None. Mixers fill it with `set(name, tensor)` on prefill and read it back with `get(name)`.
    """

    is_compileable = False
    is_sliding = False
    supports_early_init = False
    is_initialized = False
    is_croppable = False

    def __init__(self):
        self.tensors: dict[str, torch.Tensor] = {}

    def __repr__(self):
        shapes = {name: tuple(t.shape) for name, t in self.tensors.items()}
        return f"MixerState({shapes})"

    def get(self, name: str) -> torch.Tensor | None:
        return self.tensors.get(name)

    def set(self, name: str, tensor: torch.Tensor) -> None:
        self.tensors[name] = tensor

    @property
    def batch_size(self) -> int:
        return next(iter(self.tensors.values())).shape[0] if self.tensors else -1

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.tensors.values())

    def _apply(self, fn) -> None:
        self.tensors = {name: fn(t) for name, t in self.tensors.items()}

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        self._apply(lambda t: t.index_select(0, beam_idx.to(t.device)))

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self._apply(lambda t: t[indices])

    def batch_repeat_interleave(self, repeats: int) -> None:
        self._apply(lambda t: t.repeat_interleave(repeats, dim=0))

    def reset(self) -> None:
        self.tensors = {}

    def crop(self, tokens_to_remove: int) -> None:
        raise NotImplementedError(
            "hf_icl caches hold recurrent states that cannot be rolled back; assisted/speculative decoding "
            "(which crops the cache) is not supported."
        )

    def offload(self) -> None:  # pragma: no cover - CPU-only states are never offloaded
        pass

    def prefetch(self) -> None:  # pragma: no cover
        pass

    def get_max_length(self) -> int:
        return -1


class ICLCache(Cache):
    """The cache every hf_icl model uses for `generate`: one `MixerState` per layer plus the token count.

    Args:
        num_layers (`int`): number of decoder layers (one state each).
    """

    def __init__(self, num_layers: int):
        super().__init__(layers=[MixerState() for _ in range(num_layers)])
        self.seen_tokens = 0
        self.model_state = MixerState()  # model-level tensors (e.g. RegularGPT's top hidden states)

    def layer_state(self, layer_idx: int) -> MixerState:
        """The state of layer (or layer application) `layer_idx`; slots are added on first use."""
        while len(self.layers) <= layer_idx:
            self.layers.append(MixerState())
        return self.layers[layer_idx]

    def _all_states(self):
        return [*self.layers, self.model_state]

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        for state in self._all_states():
            state.reorder_cache(beam_idx)

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        for state in self._all_states():
            state.batch_select_indices(indices)

    def batch_repeat_interleave(self, repeats: int) -> None:
        for state in self._all_states():
            state.batch_repeat_interleave(repeats)

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.seen_tokens

    def get_query_offset(self, layer_idx: int = 0) -> int:
        return self.seen_tokens

    def advance(self, num_tokens: int) -> None:
        """Record that `num_tokens` more positions have been folded into every layer's state."""
        self.seen_tokens += num_tokens

    def reset(self) -> None:
        super().reset()
        self.model_state.reset()
        self.seen_tokens = 0

    def nbytes_per_sequence(self) -> int:
        """Bytes of state held per sequence (all layers), for the state-size analyses."""
        batch = max(self.layers[0].batch_size, 1) if self.layers else 1
        return sum(state.nbytes() for state in self._all_states()) // batch
