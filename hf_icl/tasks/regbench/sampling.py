"""RegBench sampler: random DFAs, Hopcroft minimisation, canonical forms, string sampling.

Implements P1 (In-Context Language Learning) §3.1 "Sampling languages" and §3.2 "Sampling strings",
with the reference code's effective ranges (DESIGN §5.1). All randomness comes from
``numpy.random.default_rng`` streams seeded by the caller; nothing depends on ``hash`` or on set/dict
iteration order, so the output bytes are identical across processes and machines.

Symbols are integer ids 1..18 (``a``..``r``) in the RegBench vocabulary order; 19 is ``|``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NUM_SYMBOLS = 18  # a..r
SEP_ID = 19  # '|'
_CANDIDATE_BATCH = 1024  # automata drawn per vectorised batch (fixed: part of the stream layout)
_STRING_CHUNK = 1024  # instances per vectorised string-sampling chunk (fixed: part of the stream layout)


@dataclass
class SamplingRanges:
    """Inclusive ranges of the RegBench generative process (DESIGN §5.1).

    Args:
        min_states, max_states: number of states before minimisation.
        min_alphabet, max_alphabet: alphabet size, drawn without replacement from a..r.
        min_edges, max_edges: out-edges per state (distinct symbols, distinct targets, no self-loop).
        min_strings, max_strings: strings per problem instance.
        min_length, max_length: length of each string (drawn up front, no stopping probability).
    """

    min_states: int = 4
    max_states: int = 12
    min_alphabet: int = 4
    max_alphabet: int = 18
    min_edges: int = 1
    max_edges: int = 3
    min_strings: int = 10
    max_strings: int = 19
    min_length: int = 1
    max_length: int = 49


@dataclass(frozen=True)
class Automaton:
    """A minimised, trimmed DFA in canonical BFS numbering (start state 0, all states accepting).

    Args:
        num_states: number of states after minimisation and trimming.
        transitions: ``(src, symbol_id, dst)`` triples sorted by ``(src, symbol_id)``.
        alphabet: the sampled alphabet as sorted symbol ids (a superset of the symbols used).
    """

    num_states: int
    transitions: tuple[tuple[int, int, int], ...]
    alphabet: tuple[int, ...]


def _draw_raw_batch(rng: np.random.Generator, r: SamplingRanges, size: int):
    """Draws ``size`` raw automata at once; returns per-candidate arrays (see shape comments)."""
    s_max, e_max = r.max_states, r.max_edges
    n = rng.integers(r.min_states, r.max_states + 1, size=size)  # (B,)
    a = rng.integers(r.min_alphabet, r.max_alphabet + 1, size=size)  # (B,)
    alpha_perm = np.argsort(rng.random((size, NUM_SYMBOLS)), axis=1)  # (B, 18) random order
    in_alpha = np.zeros((size, NUM_SYMBOLS), dtype=bool)
    np.put_along_axis(in_alpha, alpha_perm, np.arange(NUM_SYMBOLS)[None, :] < a[:, None], axis=1)
    upper = np.minimum(np.minimum(e_max, a), n - 1)  # (B,) at most a symbols and n-1 other states
    k = rng.integers(r.min_edges, upper[:, None] + 1, size=(size, s_max))  # (B, S) out-degree
    sym_keys = rng.random((size, s_max, NUM_SYMBOLS))  # (B, S, 18)
    sym_keys[~np.broadcast_to(in_alpha[:, None, :], sym_keys.shape)] = 2.0
    syms = np.argsort(sym_keys, axis=2)[:, :, :e_max]  # (B, S, E) first k are the chosen symbols
    dst_keys = rng.random((size, s_max, s_max))  # (B, S, S)
    idx = np.arange(s_max)
    forbidden = (idx[None, None, :] >= n[:, None, None]) | (idx[None, :, None] == idx[None, None, :])
    dst_keys[forbidden] = 2.0
    dsts = np.argsort(dst_keys, axis=2)[:, :, :e_max]  # (B, S, E) first k are the chosen targets
    return n, in_alpha, k, syms, dsts


def _hopcroft(num: int, delta: list[list[int]], accepting: int) -> list[int]:
    """Coarsest partition of a complete DFA (Hopcroft 1971) with states as bitmasks.

    Args:
        num: number of states (the dead state included).
        delta: ``delta[c][q]`` successor of state ``q`` on (local) symbol ``c``.
        accepting: bitmask of accepting states.

    Returns:
        Class id per state; the partition is unique, only the ids depend on the processing order.
    """
    full = (1 << num) - 1
    inv = []  # inv[c][q]: bitmask of predecessors of q on c
    for row in delta:
        pre = [0] * num
        for q, q2 in enumerate(row):
            pre[q2] |= 1 << q
        inv.append(pre)
    parts = [p for p in (accepting, full & ~accepting) if p]
    work = list(parts)
    while work:
        splitter = work.pop()
        for pre in inv:
            x, bits = 0, splitter
            while bits:
                low = bits & -bits
                x |= pre[low.bit_length() - 1]
                bits ^= low
            if not x:
                continue
            new_parts = []
            for y in parts:
                inter, diff = y & x, y & ~x
                if inter and diff:
                    new_parts += [inter, diff]
                    if y in work:
                        work.remove(y)
                        work += [inter, diff]
                    else:
                        work.append(inter if inter.bit_count() <= diff.bit_count() else diff)
                else:
                    new_parts.append(y)
            parts = new_parts
    cls = [0] * num
    for i, p in enumerate(parts):
        for q in range(num):
            if p >> q & 1:
                cls[q] = i
    return cls


def minimise(num_states: int, edges: list[dict[int, int]]) -> tuple[int, tuple[tuple[int, int, int], ...]]:
    """Trims, Hopcroft-minimises and canonically renumbers a partial DFA (start 0, all accepting).

    The partial DFA is completed with an implicit dead state, minimised, and the dead class dropped.
    States are renumbered in BFS order from the start state, exploring symbols in increasing id
    order, so two automata get the same result iff they are isomorphic (respecting symbols).

    Args:
        num_states: number of states of the raw automaton.
        edges: ``edges[q]`` maps symbol id to target state.

    Returns:
        ``(num_states, transitions)`` with ``transitions`` sorted ``(src, symbol_id, dst)`` triples.
    """
    reach, stack = {0}, [0]
    while stack:
        for q2 in edges[stack.pop()].values():
            if q2 not in reach:
                reach.add(q2)
                stack.append(q2)
    states = sorted(reach)
    local = {q: i for i, q in enumerate(states)}
    dead = len(states)
    symbols = sorted({c for q in states for c in edges[q]})
    delta = [[local[edges[q][c]] if c in edges[q] else dead for q in states] + [dead] for c in symbols]
    cls = _hopcroft(dead + 1, delta, (1 << dead) - 1)
    # quotient automaton over classes, then BFS renumbering from the start class
    step = {}
    for ci, c in enumerate(symbols):
        for q in range(dead):
            if delta[ci][q] != dead:
                step[(cls[q], c)] = cls[delta[ci][q]]
    order, queue = {cls[0]: 0}, [cls[0]]
    transitions = []
    for src_cls in queue:  # queue grows while iterating: BFS
        for c in symbols:
            dst_cls = step.get((src_cls, c))
            if dst_cls is None:
                continue
            if dst_cls not in order:
                order[dst_cls] = len(order)
                queue.append(dst_cls)
            transitions.append((order[src_cls], c, order[dst_cls]))
    return len(order), tuple(transitions)


def sample_automata(
    rng: np.random.Generator, r: SamplingRanges, count: int, taken: set, max_candidates: int | None = None
) -> list[Automaton]:
    """Samples ``count`` automata, none isomorphic to each other or to any canonical key in ``taken``.

    Args:
        rng: the split's random stream.
        r: sampling ranges.
        count: number of automata to return.
        taken: canonical keys already used (updated in place; used for membership only).
        max_candidates: give up after this many raw draws (default ``100 * count + 10000``).

    Returns:
        List of ``count`` minimised automata in canonical numbering.
    """
    limit = max_candidates if max_candidates is not None else 100 * count + 10_000
    out: list[Automaton] = []
    drawn = 0
    while len(out) < count:
        if drawn >= limit:
            raise RuntimeError(
                f"only {len(out)} of {count} pairwise non-isomorphic automata after {drawn} draws; "
                f"widen the sampling ranges ({r})"
            )
        n, in_alpha, k, syms, dsts = _draw_raw_batch(rng, r, _CANDIDATE_BATCH)
        syms_l, dsts_l, k_l = (syms + 1).tolist(), dsts.tolist(), k.tolist()
        for b in range(_CANDIDATE_BATCH):
            drawn += 1
            edges = [dict(zip(syms_l[b][q][: k_l[b][q]], dsts_l[b][q][: k_l[b][q]])) for q in range(n[b])]
            m, transitions = minimise(int(n[b]), edges)
            if transitions in taken:
                continue
            taken.add(transitions)
            alphabet = tuple(int(c) + 1 for c in np.flatnonzero(in_alpha[b]))
            out.append(Automaton(m, transitions, alphabet))
            if len(out) == count:
                break
    return out


def _walk_tables(automata: list[Automaton], max_states: int, max_edges: int):
    """Padded per-automaton tables: out-degree (A, S), edge symbols and targets (A, S, E)."""
    deg = np.zeros((len(automata), max_states), dtype=np.int64)
    sym = np.zeros((len(automata), max_states, max_edges), dtype=np.uint8)
    dst = np.zeros((len(automata), max_states, max_edges), dtype=np.int64)
    for a, aut in enumerate(automata):
        for src, c, d in aut.transitions:  # sorted by (src, symbol): edge slot = running degree
            sym[a, src, deg[a, src]] = c
            dst[a, src, deg[a, src]] = d
            deg[a, src] += 1
    return deg, sym, dst


def sample_texts(rng: np.random.Generator, r: SamplingRanges, automata: list[Automaton]) -> list[str]:
    """Samples one problem instance per automaton: ``k`` random walks from the start state joined by ``|``.

    Args:
        rng: the split's random stream (continues after :func:`sample_automata`).
        r: sampling ranges (strings per instance, string lengths).
        automata: the split's automata.

    Returns:
        One text per automaton over ``a``..``r`` and ``|``.
    """
    letters = np.frombuffer(b"?abcdefghijklmnopqr|", dtype=np.uint8)  # symbol id -> ASCII
    texts: list[str] = []
    for lo in range(0, len(automata), _STRING_CHUNK):
        chunk = automata[lo : lo + _STRING_CHUNK]
        deg, sym, dst = _walk_tables(chunk, r.max_states, r.max_edges)
        k = rng.integers(r.min_strings, r.max_strings + 1, size=len(chunk))  # (A,) strings per instance
        owner = np.repeat(np.arange(len(chunk)), k)  # (S,) automaton of each string
        lengths = rng.integers(r.min_length, r.max_length + 1, size=owner.size)  # (S,)
        u = rng.random((owner.size, r.max_length))  # (S, L) one uniform per step
        state = np.zeros(owner.size, dtype=np.int64)  # (S,) every walk starts at state 0
        out = np.full((owner.size, r.max_length + 1), SEP_ID, dtype=np.uint8)  # (S, L+1)
        for t in range(r.max_length):
            j = (u[:, t] * deg[owner, state]).astype(np.int64)  # (S,) uniform edge slot
            out[:, t] = sym[owner, state, j]
            state = dst[owner, state, j]
        out[np.arange(owner.size), lengths] = SEP_ID
        keep = np.arange(r.max_length + 1)[None, :] <= lengths[:, None]  # letters plus one '|'
        flat = letters[out[keep]].tobytes().decode("ascii")  # all instances, each ends with '|'
        ends = np.cumsum(np.add.reduceat(lengths + 1, np.r_[0, np.cumsum(k)[:-1]]))  # (A,)
        starts = np.r_[0, ends[:-1]]
        texts += [flat[s : e - 1] for s, e in zip(starts.tolist(), ends.tolist())]
    return texts
