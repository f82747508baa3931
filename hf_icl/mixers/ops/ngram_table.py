"""Exact per-row hash tables of n-gram running sums: the decoding state of the n-gram heads (paper 1, §6).

P1 notes that in-context n-grams can be stored in a trie and queried cheaply, so an n-gram head adds little
to a recurrent model's decoding cost. Here every batch row keeps an open-addressing hash table (linear probing,
load ≤ 1/2) from an n-gram, stored as its n token ids and compared exactly (no hashing collisions can merge two
n-grams), to the sum and the count of the hidden states registered under it. A lookup or an update costs O(n)
expected probes plus O(d), and the capacity doubles when full, so a decoding step is O(d) amortised.

All fields live in a `MixerState` as batch-first tensors, so beam reordering and batch expansion (index_select
on dim 0) copy whole tables row by row:

    ngram_index  (B, C)     entry id stored at each hash slot, −1 if empty (C = 2K)
    ngram_keys   (B, K, n)  the n tokens of each entry
    ngram_sums   (B, K, d)  Σ h_j over the positions j registered under the entry (fp32)
    ngram_counts (B, K)     number of such positions
    ngram_size   (B,)       entries in use per row

All operations are vectorised over a flat list of (row, n-gram) items; the probe loops run until every item is
resolved, which is O(1) rounds in expectation.
"""

from __future__ import annotations

import torch

_PRIME = 2**31 - 1


def _hash(keys: torch.Tensor) -> torch.Tensor:
    """(M, n) non-negative token ids -> (M,) hashes in [0, 2^31 − 1)."""
    h = torch.zeros(keys.shape[0], dtype=torch.long, device=keys.device)
    for k in range(keys.shape[1]):
        h = (h * 1_000_003 + keys[:, k] % _PRIME) % _PRIME
    return h


def lookup(state, rows: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """Entry id of each (row, n-gram) item, or −1 when the row has no such entry (or no table yet).

    Args:
        state: the layer's `MixerState`.
        rows: (M,) batch rows.
        keys: (M, n) n-grams as token ids (all ≥ 0).
    """
    entry = torch.full_like(rows, -1)
    index = state.get("ngram_index")
    if index is None or rows.numel() == 0:
        return entry
    capacity = index.shape[1]
    slot = _hash(keys) % capacity
    active = torch.ones_like(rows, dtype=torch.bool)
    while bool(active.any()):
        stored = index[rows, slot]  # (M,)
        same = (state.get("ngram_keys")[rows, stored.clamp(min=0)] == keys).all(-1) & (stored >= 0)
        entry = torch.where(active & same, stored, entry)
        active = active & ~same & (stored >= 0)
        slot = (slot + 1) % capacity
    return entry


def _insert_index(index: torch.Tensor, rows, keys, entries) -> None:
    """Point a free slot of `index` (B, C) at each new entry, in parallel rounds of linear probing."""
    batch, capacity = index.shape
    flat_index = index.view(-1)
    slot = _hash(keys) % capacity
    active = torch.ones_like(rows, dtype=torch.bool)
    unclaimed = torch.iinfo(torch.long).max
    while bool(active.any()):
        flat = rows * capacity + slot
        candidate = active & (flat_index[flat] < 0)
        claims = torch.full_like(flat_index, unclaimed)
        claims.scatter_reduce_(0, flat, torch.where(candidate, entries, unclaimed), "amin")
        won = candidate & (claims[flat] == entries)  # the smallest entry id wins a contested slot
        flat_index.copy_(torch.where(claims != unclaimed, claims, flat_index))
        active = active & ~won
        slot = torch.where(active, (slot + 1) % capacity, slot)


def _reserve(state, needed: int, n: int, width: int, batch: int, device) -> None:
    """Make room for `needed` entries per row: double the capacity and rebuild the hash index if short."""
    keys = state.get("ngram_keys")
    old = 0 if keys is None else keys.shape[1]
    if needed <= old:
        return
    capacity = max(8, 2 * old)
    while capacity < needed:
        capacity *= 2
    grown = {
        "ngram_keys": torch.zeros(batch, capacity, n, dtype=torch.long, device=device),
        "ngram_sums": torch.zeros(batch, capacity, width, dtype=torch.float32, device=device),
        "ngram_counts": torch.zeros(batch, capacity, dtype=torch.float32, device=device),
    }
    if keys is not None:
        for name, tensor in grown.items():
            tensor[:, :old] = state.get(name)
    size = state.get("ngram_size") if keys is not None else torch.zeros(batch, dtype=torch.long, device=device)
    index = torch.full((batch, 2 * capacity), -1, dtype=torch.long, device=device)
    rows, entries = torch.nonzero(torch.arange(capacity, device=device)[None] < size[:, None], as_tuple=True)
    _insert_index(index, rows, grown["ngram_keys"][rows, entries], entries)
    for name, tensor in {**grown, "ngram_index": index, "ngram_size": size}.items():
        state.set(name, tensor)


def accumulate(state, batch: int, rows, keys, sums, counts) -> None:
    """Add `sums` and `counts` to each (row, n-gram) entry, creating the entries that are new.

    Args:
        state: the layer's `MixerState` (created on first use).
        batch: number of rows B.
        rows: (M,) rows; the (row, n-gram) items must be distinct.
        keys: (M, n) n-grams as token ids (all ≥ 0).
        sums: (M, d) hidden-state sums to add.
        counts: (M,) counts to add.
    """
    device = rows.device
    _reserve(state, 1, keys.shape[1], sums.shape[1], batch, device)  # creates an empty table on first use
    entry = lookup(state, rows, keys)
    new = entry < 0
    added = torch.bincount(rows[new], minlength=batch)  # (B,) new entries per row
    size = state.get("ngram_size")
    _reserve(state, int((size + added).max()), keys.shape[1], sums.shape[1], batch, device)
    new_rows = rows[new]
    order = torch.argsort(new_rows, stable=True)
    first = torch.cumsum(added, 0) - added  # first item of each row in the row-sorted order
    rank = torch.empty_like(order)
    rank[order] = torch.arange(order.numel(), device=device) - first[new_rows[order]]
    entry[new] = size[new_rows] + rank
    state.get("ngram_keys")[rows[new], entry[new]] = keys[new]
    _insert_index(state.get("ngram_index"), new_rows, keys[new], entry[new])
    state.get("ngram_sums")[rows, entry] += sums.float()
    state.get("ngram_counts")[rows, entry] += counts.float()
    state.set("ngram_size", size + added)
