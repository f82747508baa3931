"""Mamba-2, DeltaNet, Gated DeltaNet, RWKV-7 and Based: chunked training form against the naive recurrence
(target ≥ 3× at T = 2048).

Run: `OMP_NUM_THREADS=1 python benchmarks/recurrent_mixers_chunked.py [--lengths 2048 --batch 2]`.

Each case times one training forward + backward of a single mixer layer of the `small` preset (d = 128) on a
(B, T, d) input. "chunked" is the mixer as shipped: the DPLR chunked form of `ops/delta_rule.py` (DeltaNet, Gated
DeltaNet, RWKV-7; UT transform, one triangular solve per chunk) or the chunked linear recurrence of
`ops/linear_recurrence.py` (Mamba-2's SSD, Based's Taylor linear attention). "naive recurrent" is the same mixer
and weights with that function swapped for a Python loop over time steps through the decoding step
(`dplr_step`, `recurrent_step`), i.e. the paper's recurrence token by token. The two are checked to agree before
timing; process CPU time, median of repeats after a warm-up, the forms interleaved over rounds and the best round
kept. ratio = naive / chunked.
"""

from __future__ import annotations

import argparse
import contextlib

import torch
from common import add_output_argument, median_time, print_table, run_recorded

import hf_icl
from hf_icl.mixers import MIXERS
from hf_icl.mixers.ops import delta_rule, linear_recurrence

MIXERS_UNDER_TEST = {
    "Mamba-2": ("mamba2", linear_recurrence, "chunked_linear_attention"),
    "DeltaNet": ("deltanet", delta_rule, "dplr_chunked"),
    "Gated DeltaNet": ("gated_deltanet", delta_rule, "dplr_chunked"),
    "RWKV-7": ("rwkv7", delta_rule, "dplr_chunked"),
    "Based": ("based", linear_recurrence, "chunked_linear_attention"),
}


def naive_linear(q, k, v, log_decay=None, chunk_size=64, initial_state=None):
    """`chunked_linear_attention`'s contract, one time step at a time."""
    decay = [None] * q.shape[2] if log_decay is None else log_decay.expand(*q.shape[:3], -1).unbind(2)
    state, outs = initial_state, []
    for q_t, k_t, v_t, g_t in zip(q.unbind(2), k.unbind(2), v.unbind(2), decay):
        out, state = linear_recurrence.recurrent_step(q_t, k_t, v_t, g_t, state)
        outs.append(out)
    return torch.stack(outs, dim=2), state


def naive_dplr(q, k, v, a, b, log_decay=None, chunk_size=64, initial_state=None):
    """`dplr_chunked`'s contract, one time step at a time."""
    decay = [None] * q.shape[2] if log_decay is None else log_decay.unbind(2)
    state, outs = initial_state, []
    for q_t, k_t, v_t, a_t, b_t, g_t in zip(*(x.unbind(2) for x in (q, k, v, a, b)), decay):
        out, state = delta_rule.dplr_step(q_t, k_t, v_t, a_t, b_t, g_t, state)
        outs.append(out)
    return torch.stack(outs, dim=2).to(v.dtype), state


NAIVE = {"chunked_linear_attention": naive_linear, "dplr_chunked": naive_dplr}


@contextlib.contextmanager
def swapped(module, name, form):
    original = getattr(module, name)
    setattr(module, name, form)
    try:
        yield
    finally:
        setattr(module, name, original)


def build(mixer_name):
    arch = mixer_name
    config = hf_icl.config_for(arch, "small")
    torch.manual_seed(0)
    mixer = MIXERS[mixer_name](config, layer_idx=0)
    for module in mixer.modules():
        if hasattr(module, "reset_mixer_parameters"):
            module.reset_mixer_parameters()
    return mixer, config


def forward_backward(mixer, x):
    def step():
        mixer(x).square().mean().backward()
        mixer.zero_grad(set_to_none=True)
        x.grad = None

    return step


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lengths", type=int, nargs="+", default=[2048])
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--clock", choices=("process", "wall"), default="process")
    add_output_argument(parser)
    args = parser.parse_args()
    rows = []
    for label, (mixer_name, module, name) in MIXERS_UNDER_TEST.items():
        mixer, config = build(mixer_name)
        for length in args.lengths:
            x = torch.randn(args.batch, length, config.hidden_size, requires_grad=True)
            with torch.no_grad():
                chunked = mixer(x)
                with swapped(module, name, NAIVE[name]):
                    naive = mixer(x)
            torch.testing.assert_close(naive, chunked, atol=1e-4, rtol=1e-3)

            step = forward_backward(mixer, x)
            times = []
            for _ in range(args.rounds):
                with swapped(module, name, NAIVE[name]):
                    slow = median_time(step, repeats=args.repeats, warmup=1, clock=args.clock)
                fast = median_time(step, repeats=args.repeats, warmup=1, clock=args.clock)
                times.append((slow, fast))
            slow, fast = (min(column) for column in zip(*times))
            rows.append((f"{label} T={length} (chunk {mixer.chunk_size})", slow, fast))
    print(
        f"batch {args.batch}, d={config.hidden_size}, small presets' mixers, threads={torch.get_num_threads()}, "
        f"{args.clock} time; ratio = naive / chunked (target ≥ 3 at T = 2048)\n"
    )
    print("Mixer layer, training forward + backward:\n")
    print_table(rows, unit="s", ours="naive recurrent", reference="chunked")


if __name__ == "__main__":
    run_recorded(main)
