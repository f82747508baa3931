"""Static n-gram heads NGH^n (paper 1, §6 eq. (10)–(11), Appendix F Figure 7).

An n-gram head attends uniformly to the positions that follow earlier occurrences of the current n-gram:

    A(n)_ij ∝ 1[x_{i−k} = x_{j−s−k} for k = 0 … n−1  ∧  j − s ≥ n − 1  ∧  j < i]        (eq. (10), Fig. 7)
    NGH^n(h)_i = W1 h_i + W2 Σ_j A(n)_ij h_j                                              (eq. (11))

with shift s (`shift_step` of Fig. 7, default 1): position i reads the hidden states *after* the matches, as an
induction head does. These are Figure 7's conventions, which differ from the indices printed in eq. (10):
`ngram=1` matches the current token only (a bigram head: match x_i, read the next token), and a row with no
match is 0. Padding (mask 0) neither matches nor is averaged, so a left-padded row equals the row unpadded.

Parallel form, O(T·d + T log T) per sequence instead of Figure 7's T×T masks: every n-gram gets an exact integer
id (pairs (id, token) re-ranked with `torch.unique` when they could overflow int64, so no two n-grams share an
id); position j is *registered* under the n-gram ending at j − s and position i *queries* the n-gram ending at i.
Sorting the registrations by (n-gram, position) makes each n-gram a segment, and Σ_{j<i} h_j over i's segment is
a difference of prefix sums located by `searchsorted` (float64 `cumsum` on the torch path; a segmented scan in
`ops/ngram_numba.py` on the CPU when numba is installed, in `ops/ngram_triton.py` on CUDA when Triton is).
Everything is vectorised over the batch: the row index is the n-gram's 0-th "token".

Recurrent form: the cache keeps, per row, an exact hash table n-gram → (Σ h, count) (`ops/ngram_table.py`) and
the last n + s − 1 tokens. A chunk's query adds the table's sums to its in-chunk causal sums; then the chunk's
registrations are added to the table. A decoding step costs O(n + d) amortised.
"""

from __future__ import annotations

import torch
from torch import nn

from .ops.cpu_paths import compiled_backend
from .ops.ngram_table import accumulate, lookup
from .ops.ngram_triton import HAS_TRITON, segmented_cumsum_triton
from .ops.padding import token_mask

try:
    from .ops.ngram_numba import NumbaSegmentSums
except ImportError:  # numba is missing: the PyTorch path
    NumbaSegmentSums = None

_ID_LIMIT = 2**62


def _dense_rank(ids: torch.Tensor) -> torch.Tensor:
    """Replace ids ≥ 0 by their rank among the distinct ids (order-preserving); −1 stays −1."""
    distinct, inverse = torch.unique(ids, return_inverse=True)
    rank = inverse - int(distinct[0] < 0)
    return torch.where(ids < 0, -1, rank)


def ngram_ids(tokens: torch.Tensor, n: int) -> torch.Tensor:
    """Exact ids of the n-grams ending at each position: equal iff same row and same n tokens.

    Args:
        tokens: (B, S) token ids, −1 where there is no token (padding, or before the sequence).
        n: n-gram length.

    Returns:
        (B, S) int64 ids in [0, B·S) (dense ranks), −1 where the n-gram is incomplete or touches a −1 token.
    """
    batch, length = tokens.shape
    base = max(int(tokens.max()) + 1, 1) if tokens.numel() else 1
    ids = torch.arange(batch, device=tokens.device)[:, None].expand(batch, length)  # (B, S) the row is token 0
    for step in range(n):
        if step:  # the (step)-gram ending at p − 1, extended by x_p
            ids = torch.nn.functional.pad(ids[:, :-1], (1, 0), value=-1)
        if (int(ids.max()) + 1) * base >= _ID_LIMIT:
            ids = _dense_rank(ids)
        ids = torch.where((ids >= 0) & (tokens >= 0), ids * base + tokens, -1)
    return _dense_rank(ids)


def causal_group_sums(query_ids, register_ids, values, use_triton: bool | None = None):
    """Σ_{j < i, register_ids[j] = query_ids[i]} values[j] and the number of such j, for every position i.

    Args:
        query_ids, register_ids: (B, T) dense ids from `ngram_ids` (distinct across rows), −1 = none.
        values: (B, T, d) hidden states.
        use_triton: force (`True`) or forbid (`False`) the Triton scan; default: CUDA tensors with Triton.

    Returns:
        sums (B, T, d) in `values.dtype`, counts (B, T) int64.
    """
    batch, length, width = values.shape
    device = values.device
    positions = torch.arange(length, device=device)
    none = torch.iinfo(torch.long).max
    registered = torch.where(register_ids >= 0, register_ids * length + positions, none).flatten()  # (B·T,)
    registered, order = registered.sort()  # segments of equal n-gram, by position inside each
    start = (query_ids.clamp(min=0) * length).flatten()
    lo = torch.searchsorted(registered, start)  # first registration of the query's n-gram
    hi = torch.searchsorted(registered, start + positions.repeat(batch))  # first one at position ≥ i
    counts = torch.where(query_ids.flatten() >= 0, hi - lo, 0)
    if not use_triton and not values.is_cuda and _numba_path(values):
        flat = values.reshape(batch * length, width)
        sums = NumbaSegmentSums.apply(flat, order, registered, length, torch.where(counts > 0, hi, 0))
        return sums.view(batch, length, width), counts.view(batch, length)
    found = (counts > 0)[:, None]
    rows = values.reshape(batch * length, width).index_select(0, order)  # (B·T, d) in sorted order
    if use_triton if use_triton is not None else (values.is_cuda and HAS_TRITON):
        _, sizes = torch.unique_consecutive(registered // length, return_counts=True)
        starts = torch.nn.functional.pad(torch.cumsum(sizes, 0), (1, 0))
        prefix = segmented_cumsum_triton(rows, starts)  # (B·T, d) inclusive sums inside each n-gram
        sums = prefix.index_select(0, (hi - 1).clamp(min=0)).mul_(found)
    else:
        prefix = torch.nn.functional.pad(rows.double().cumsum(0), (0, 0, 1, 0))  # (B·T + 1, d)
        sums = prefix.index_select(0, hi).sub_(prefix.index_select(0, lo)).mul_(found).to(values.dtype)
    return sums.view(batch, length, width), counts.view(batch, length)


def _numba_path(values: torch.Tensor) -> bool:
    """The compiled segmented sums take float32/float64 CPU tensors where `HF_ICL_SCAN_BACKEND` allows them."""
    if NumbaSegmentSums is None or values.dtype not in (torch.float32, torch.float64):
        return False
    return compiled_backend(True, values) == "numba"


def _query_and_register_ids(extended: torch.Tensor, n: int, shift: int, window_len: int):
    """Ids queried at and registered under each of the last T positions of `extended` (B, W + T).

    Position i queries the n-gram ending at i; position j is registered under the n-gram ending at j − shift
    (if j itself is a token). The first W = n + shift − 1 columns are earlier tokens (−1 if none).
    """
    ids = ngram_ids(extended, n)
    length = extended.shape[1] - window_len
    register = ids[:, window_len - shift : window_len - shift + length]
    return ids[:, window_len:], torch.where(extended[:, window_len:] >= 0, register, -1)


def ngram_head_average(input_ids, hidden_states, n: int, shift: int = 1, attention_mask=None, use_triton=None):
    """A(n)·h of P1 eq. (10)–(11) with Figure 7's conventions: the uniform average of the matched positions.

    Args:
        input_ids: (B, T) token ids.
        hidden_states: (B, T, d) the states h_j that are averaged.
        n: n-gram order (Figure 7's `ngram`; 1 matches the current token, i.e. a bigram head).
        shift: Figure 7's `shift_step`: position i reads j = (match end) + shift.
        attention_mask: optional (B, T) mask, 0 = padding (never matched, never averaged).
        use_triton: see `causal_group_sums`.

    Returns:
        (B, T, d): mean of h_j over the matches of position i, 0 where there is none.
    """
    tokens = input_ids if attention_mask is None else torch.where(attention_mask.bool(), input_ids, -1)
    nothing_before = torch.full((tokens.shape[0], n + shift - 1), -1, dtype=torch.long, device=tokens.device)
    extended = torch.cat([nothing_before, tokens.long()], dim=1)  # (B, W + T)
    query, register = _query_and_register_ids(extended, n, shift, n + shift - 1)
    sums, counts = causal_group_sums(query, register, hidden_states, use_triton)
    return sums / counts.clamp(min=1)[..., None].to(sums.dtype)


class NgramHead(nn.Module):
    """NGH^n (P1 eq. (11)): `W1 h_i + W2 mean_j h_j` over the n-gram matches j of i; no biases.

    Args:
        config: an `ICLConfig` (uses hidden_size and ngram_shift).
        layer_idx (`int`): cache slot of this head.
        order (`int`): n, the n-gram order.
    """

    recurrent = False  # the n-gram table grows with the distinct n-grams seen
    returns_attention_maps = False  # A(n) is fixed by the tokens, not learned scores

    def __init__(self, config, layer_idx: int, order: int):
        super().__init__()
        self.layer_idx = layer_idx
        self.order = order
        self.shift = config.ngram_shift
        self.proj_self = nn.Linear(config.hidden_size, config.hidden_size, bias=False)  # W1
        self.proj_match = nn.Linear(config.hidden_size, config.hidden_size, bias=False)  # W2

    def extra_repr(self) -> str:
        return f"order={self.order}, shift={self.shift}"

    def state_size(self) -> int | None:
        return None  # the table grows with the number of distinct n-grams seen (at most min(T, V^n))

    def forward(self, hidden_states, attention_mask=None, cache=None, input_ids=None, position_ids=None, **kwargs):
        if input_ids is None:
            raise ValueError("n-gram heads match token n-grams: pass input_ids (inputs_embeds alone is not supported)")
        mask = token_mask(attention_mask, input_ids.shape[1])
        if cache is None:
            average = ngram_head_average(input_ids, hidden_states, self.order, self.shift, mask)
        else:
            average = self._cached_average(input_ids, hidden_states, mask, cache.layer_state(self.layer_idx))
        return self.proj_self(hidden_states) + self.proj_match(average)  # (B, T, d)

    def _cached_average(self, input_ids, hidden_states, mask, state):
        """The chunk's averages from the table (earlier chunks) plus in-chunk matches; then update the table."""
        batch, length, width = hidden_states.shape
        n, shift, window_len = self.order, self.shift, self.order + self.shift - 1
        tokens = input_ids if mask is None else torch.where(mask, input_ids, -1)
        window = state.get("window")
        if window is None:
            window = torch.full((batch, window_len), -1, dtype=torch.long, device=input_ids.device)
        extended = torch.cat([window, tokens], dim=1)  # (B, W + T)
        query, register = _query_and_register_ids(extended, n, shift, window_len)
        sums, counts = causal_group_sums(query, register, hidden_states)
        sums, counts = sums.float(), counts.float()
        grams = extended.unfold(1, n, 1)  # (B, W + T − n + 1, n): the n-gram ending at extended position p + n − 1
        rows, cols = torch.nonzero(query >= 0, as_tuple=True)
        entry = lookup(state, rows, grams[rows, cols + shift])
        hit = entry >= 0
        if bool(hit.any()):
            sums[rows[hit], cols[hit]] += state.get("ngram_sums")[rows[hit], entry[hit]]
            counts[rows[hit], cols[hit]] += state.get("ngram_counts")[rows[hit], entry[hit]]
        average = (sums / counts.clamp(min=1)[..., None]).to(hidden_states.dtype)
        # Fold the chunk's registrations into the table, one item per distinct (row, n-gram).
        rows, cols = torch.nonzero(register >= 0, as_tuple=True)
        if rows.numel():
            groups, inverse = torch.unique(register[rows, cols], return_inverse=True)
            first = torch.full_like(groups, cols.numel()).scatter_reduce_(
                0, inverse, torch.arange(cols.numel(), device=cols.device), "amin"
            )
            group_sums = torch.zeros(groups.numel(), width, device=sums.device)
            group_sums.index_add_(0, inverse, hidden_states[rows, cols].float())
            group_counts = torch.bincount(inverse, minlength=groups.numel())
            accumulate(state, batch, rows[first], grams[rows[first], cols[first]], group_sums, group_counts)
        state.set("window", extended[:, extended.shape[1] - window_len :])
        return average
