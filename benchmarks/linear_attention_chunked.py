"""Linear attention, RetNet and GLA: chunked training form against the naive recurrent form (target ≥ 5× at 2048).

Run: `OMP_NUM_THREADS=1 python benchmarks/linear_attention_chunked.py [--lengths 512 2048 --batch 4]`.

Each case times one training forward + backward of a single mixer layer (d=128, 2 heads, the `small` presets'
mixers) on a (B, T, d) input. "chunked" is the mixer as shipped: `ops.linear_recurrence.chunked_linear_attention`
(intra-chunk attention-style, inter-chunk state, C = `scan_chunk_size` = 64). "naive recurrent" is the same mixer
and weights with that function swapped for a Python loop over time steps through `recurrent_step`, the decoding
form (same maths: S_t = diag(exp g_t) S_{t−1} + k_tᵀ v_t, o_t = q_t S_t). Both are checked to agree before timing,
run in one process, and report the median of repeats after a warm-up (process CPU time by default, which load
from other processes on a shared machine disturbs far less than wall time; `--clock wall` for wall time), the two
forms interleaved over rounds and the best round kept. ratio = naive / chunked.
A second table times the recurrence alone (the only part the two forms differ in) on the exact q, k, v and decays
each mixer produces, since the projections, which both forms share, are a fixed cost in the first.
"""

from __future__ import annotations

import argparse
import contextlib

import torch
from common import add_output_argument, median_time, print_table, run_recorded

import hf_icl
from hf_icl.mixers import MIXERS
from hf_icl.mixers.ops import linear_recurrence as ops

CHUNKED = ops.chunked_linear_attention
ARCHITECTURES = {"linear attention": "linear_transformer", "RetNet": "retnet", "GLA": "gla"}


def naive_recurrent(q, k, v, log_decay=None, chunk_size=64, initial_state=None):
    """`chunked_linear_attention`'s contract, one time step at a time."""
    decay = [None] * q.shape[2] if log_decay is None else log_decay.expand(*q.shape[:3], -1).unbind(2)
    state, outs = initial_state, []
    for q_t, k_t, v_t, g_t in zip(q.unbind(2), k.unbind(2), v.unbind(2), decay):
        out, state = ops.recurrent_step(q_t, k_t, v_t, g_t, state)
        outs.append(out)
    return torch.stack(outs, dim=2), state  # (B, H, T, Dv)


@contextlib.contextmanager
def swapped(form):
    """Run the mixers with `form` in place of `ops.chunked_linear_attention`."""
    chunked = ops.chunked_linear_attention
    ops.chunked_linear_attention = form
    try:
        yield
    finally:
        ops.chunked_linear_attention = chunked


def recurrence_inputs(mixer, x):
    """The (q, k, v, log_decay, chunk_size) that `mixer` passes to the recurrence on input `x`, as fresh leaves that
    need a gradient exactly where the mixer's own tensors do (RetNet's fixed decays do not, GLA's gates do)."""
    seen = []

    def record(*args, **kwargs):
        seen.append((args, kwargs))
        return CHUNKED(*args, **kwargs)

    with swapped(record):
        mixer(x)
    (q, k, v, log_decay, chunk_size, _), _ = seen[0]
    leaves = [None if t is None else t.detach().requires_grad_(t.requires_grad) for t in (q, k, v, log_decay)]
    return (*leaves, chunk_size)


def forward_backward(mixer, x):
    def step():
        mixer(x).square().mean().backward()
        mixer.zero_grad(set_to_none=True)
        x.grad = None

    return step


def recurrence_step(q, k, v, log_decay, chunk_size):
    def step():
        ops.chunked_linear_attention(q, k, v, log_decay, chunk_size)[0].square().mean().backward()
        for leaf in (q, k, v, log_decay):
            if leaf is not None:
                leaf.grad = None

    return step


def timed(step, form, repeats, clock="process"):
    """Median time of `step` with `form` in place of the chunked recurrence, after one warm-up call."""
    with swapped(form):
        return median_time(step, repeats=repeats, warmup=1, clock=clock)


def compare(step, repeats, clock, rounds):
    """(naive, chunked) times, interleaved over `rounds` so drift in machine load hits both alike; best round."""
    times = [[timed(step, form, repeats, clock) for form in (naive_recurrent, CHUNKED)] for _ in range(rounds)]
    return [min(column) for column in zip(*times)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lengths", type=int, nargs="+", default=[512, 2048])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--clock", choices=("process", "wall"), default="process")
    add_output_argument(parser)
    args = parser.parse_args()
    mixer_rows, recurrence_rows = [], []
    for name, arch in ARCHITECTURES.items():
        config = hf_icl.config_for(arch, "small")
        torch.manual_seed(0)
        mixer = MIXERS[config.mixer](config, layer_idx=0)
        for length in args.lengths:
            x = torch.randn(args.batch, length, config.hidden_size, requires_grad=True)
            with torch.no_grad():
                chunked = mixer(x)
                with swapped(naive_recurrent):
                    torch.testing.assert_close(mixer(x), chunked, atol=1e-4, rtol=1e-4)
            step = forward_backward(mixer, x)
            mixer_rows.append((f"{name} T={length}", *compare(step, args.repeats, args.clock, args.rounds)))
            q, k, v, log_decay, chunk_size = recurrence_inputs(mixer, x)
            step = recurrence_step(q, k, v, log_decay, chunk_size)
            times = compare(step, args.repeats, args.clock, args.rounds)
            recurrence_rows.append((f"{name} T={length} (Dk={q.shape[-1]}, Dv={v.shape[-1]})", *times))
    print(
        f"batch {args.batch}, d={config.hidden_size}, {config.num_attention_heads} heads, "
        f"chunk {config.scan_chunk_size}, threads={torch.get_num_threads()}, {args.clock} time; "
        "ratio = naive / chunked\n"
    )
    print("Mixer layer (projections, gates and norms included), training forward + backward:\n")
    print_table(mixer_rows, unit="s", ours="naive recurrent", reference="chunked")
    print("\nThe recurrence alone, on the q, k, v and decays that mixer produces, forward + backward:\n")
    print_table(recurrence_rows, unit="s", ours="naive recurrent", reference="chunked")


if __name__ == "__main__":
    run_recorded(main)
