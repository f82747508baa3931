"""The three kernel-level changes behind issue 30's short-sequence numbers, each against the form it replaced, side by
side in one run:

1. **512-bit vectors for numba** (`hf_icl/utils/numba_vectors.py`): the compiled selective scan at Mamba `tiny`'s T = 82
   shape (B = 64, D = 128, N = 16), forward and forward + backward, compiled with the wide vectors (hf_icl's
   default on AVX-512 hosts) against numba's own default (`NUMBA_CPU_FEATURES=""`: LLVM's tuning, 256-bit on Intel
   server cores). The setting is fixed per process at numba's first compilation, so each side runs in its own child
   process, alternating, `--rounds` times; a round's ratio is 256-bit time / 512-bit time, and the table gives each
   side's median and the **median of the per-round ratios** (robust to the drift of a shared VM, which pairs a fast
   round of one side with a slow round of the other when each side's best is taken). On a host without AVX-512 the
   two children compile the same code and the ratio is ~1.
2. **The blocked gated-Toeplitz mix** (`hf_icl/mixers/ops/gated_toeplitz.py`): one H3 `tiny` mixer (d = 64, 8 heads
   of d_h = 8) at T = 82, B = 64, forward + backward, with the blocked CPU form against the plain expression
   ((q kᵀ) ⊙ M) v that it replaced (still the path off the CPU), in the same process, interleaved; outputs and
   gradients are checked to agree first. ratio = plain time / blocked time.
3. **Vectorised elementwise maths in the compiled kernels**: the selective scan's softplus, sigmoid and SiLU gate
   (`scan_softplus`, `scan_sigmoid` of `hf_icl/mixers/ops/numba_math.py`), and unchecked divisions
   (`error_model="numpy"`) there and in RWKV's WKV. The scan runs as Mamba calls it (Δ before its softplus, the D
   skip, the gate z) at the T = 82 shape and at the many-outlier shape (B = 64, T = 192), the WKV at RWKV `tiny`'s
   T = 82 shape, forward + backward, each against the form it replaced: the same kernel source with libm's exp and
   log1p per element and numba's default error model, which checks every division for a zero divisor (rebuilt here
   by substitution; each substituted text must be found). Same process, interleaved; outputs and gradients are
   checked to agree first. ratio = replaced time / shipped time.

Run: `OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/cpu_kernels.py [--rounds 5 --repeats 5]`.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
from contextlib import contextmanager

import torch
from common import add_output_argument, median_time, run_recorded

SCAN_CHILD = """
import json, sys, torch
sys.path.insert(0, {here!r})
from common import median_time, numba_wide_vectors
from hf_icl.mixers.ops.selective_scan import scan_backend, selective_scan

torch.set_num_threads(1)
torch.manual_seed(0)
batch, length, channels, state = {shape}
x = torch.randn(batch, length, channels, requires_grad=True)
delta = torch.nn.functional.softplus(torch.randn(batch, length, channels) - 1).requires_grad_()
A = (-torch.rand(channels, state) - 0.5).requires_grad_()  # (D, N), negative
B, C = (torch.randn(batch, length, state, requires_grad=True) for _ in range(2))
assert scan_backend(x, delta, A, B, C) == "numba", "the compiled scan does not run here"

def forward():
    with torch.no_grad():
        selective_scan(x, delta, A, B, C)

def forward_backward():
    y, _ = selective_scan(x, delta, A, B, C)
    y.sum().backward()

print(json.dumps({{"wide": numba_wide_vectors(), "forward": median_time(forward, {repeats}),
                  "forward + backward": median_time(forward_backward, {repeats})}}))
"""


def scan_round(wide: bool, shape: tuple, repeats: int) -> dict:
    """One child process's medians for the scan, with hf_icl's wide vectors or numba's default features."""
    env = dict(os.environ, OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    env.pop("NUMBA_CPU_NAME", None)
    if wide:
        env.pop("NUMBA_CPU_FEATURES", None)
    else:
        env["NUMBA_CPU_FEATURES"] = ""  # numba's defaults; hf_icl leaves a user's setting alone
    code = SCAN_CHILD.format(here=os.path.dirname(os.path.abspath(__file__)), shape=shape, repeats=repeats)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def wide_vector_table(rounds: int, repeats: int) -> None:
    shape = (64, 82, 128, 16)
    results = {False: [], True: []}
    for _ in range(rounds):
        for wide in (False, True):
            results[wide].append(scan_round(wide, shape, repeats))
    wide_flags = {wide: {r["wide"] for r in rs} for wide, rs in results.items()}
    print(f"### Selective scan (numba), B, T, D, N = {shape}: 256-bit default against 512-bit\n")
    print(
        f"512-bit vectors in effect: default child {sorted(wide_flags[False])}, hf_icl child {sorted(wide_flags[True])}"
    )
    print("(False in both where the host has no AVX-512: then both sides compile the same code)\n")
    print("| case | 256-bit, median (ms) | 512-bit, median (ms) | ratio (median of per-round ratios) |")
    print("|---|---|---|---|")
    for case in ("forward", "forward + backward"):
        narrow, wide = ([r[case] for r in results[side]] for side in (False, True))
        ratio = statistics.median(n / w for n, w in zip(narrow, wide))
        print(f"| {case} | {statistics.median(narrow) * 1e3:.3g} | {statistics.median(wide) * 1e3:.3g} | {ratio:.3f} |")


@contextmanager
def plain_gated_toeplitz():
    """H3 with the plain expression ((q kᵀ) ⊙ M) v in place of the blocked CPU form, for this block."""
    import hf_icl.mixers.h3 as h3
    from hf_icl.mixers.ops.gated_toeplitz import plain_gated_toeplitz_mix

    blocked = h3.gated_toeplitz_mix
    h3.gated_toeplitz_mix = plain_gated_toeplitz_mix
    try:
        yield
    finally:
        h3.gated_toeplitz_mix = blocked


def gated_toeplitz_table(rounds: int, repeats: int) -> None:
    import hf_icl
    from hf_icl.mixers.h3 import H3Mixer

    torch.manual_seed(0)
    mixer = H3Mixer(hf_icl.config_for("h3", "tiny"), 0)
    batch, length = 64, 82
    x = torch.randn(batch, length, mixer.num_heads * mixer.head_dim, requires_grad=True)

    def outputs_and_gradients():
        mixer.zero_grad()
        x.grad = None
        z = mixer.mix(x, None, None)[-1]
        z.square().sum().backward()
        return [z.detach(), x.grad.clone(), *(p.grad.clone() for p in mixer.parameters() if p.grad is not None)]

    blocked = outputs_and_gradients()
    with plain_gated_toeplitz():
        plain = outputs_and_gradients()
    for ours, reference in zip(blocked, plain, strict=True):
        torch.testing.assert_close(ours, reference, rtol=1e-4, atol=1e-4)

    def step():
        mixer.mix(x, None, None)[-1].sum().backward()

    times = {"blocked": [], "plain": []}
    for _ in range(rounds):
        times["blocked"].append(median_time(step, repeats))
        with plain_gated_toeplitz():
            times["plain"].append(median_time(step, repeats))
    ratio = statistics.median(p / b for p, b in zip(times["plain"], times["blocked"]))
    print(f"\n### H3 mixer `tiny`, B = {batch}, T = {length}, forward + backward: plain expression against blocked\n")
    print("| case | plain, median (ms) | blocked, median (ms) | ratio (median of per-round ratios) |")
    print("|---|---|---|---|")
    plain_ms, blocked_ms = (statistics.median(times[side]) * 1e3 for side in ("plain", "blocked"))
    print(f"| H3 mixer | {plain_ms:.3g} | {blocked_ms:.3g} | {ratio:.3f} |")


CHECKED_DIVISIONS = {', error_model="numpy")': ")", "cache=True": "cache=False"}  # numba's default error model
LIBM_FORM = {  # the selective scan's vectorised calls -> the per-element libm calls they replaced
    "scan_softplus(r) if softplus else r": "(r if r > 20 else math.log1p(math.exp(r))) if softplus else r",
    "y_t[d] * z_t[d] * scan_sigmoid(z_t[d])": "y_t[d] * z_t[d] / (1 + math.exp(-z_t[d]))",
    "sigmoid = scan_sigmoid(z_t[d])": "sigmoid = 1 / (1 + math.exp(-z_t[d]))",
    "scan_softplus_slope(raw[d])": "(1 / (1 + math.exp(-raw[d])) if raw[d] <= 20 else 1)",
    **CHECKED_DIVISIONS,
}


def replaced_form(module, substitutions: dict, name: str):
    """`module` compiled again from its source with `substitutions` applied (each must be found): the replaced form."""
    import types

    with open(module.__file__) as handle:
        source = handle.read()
    for shipped, replaced in substitutions.items():
        assert shipped in source, f"{module.__name__} no longer contains {shipped!r}: update the substitutions"
        source = source.replace(shipped, replaced)
    rebuilt = types.ModuleType(f"{module.__package__}._{name}")
    rebuilt.__package__ = module.__package__
    exec(compile(source, f"<{module.__name__}, {name}>", "exec"), rebuilt.__dict__)
    return rebuilt


def scan_case(batch: int, length: int, channels: int = 128, state: int = 16):
    """Mamba's scan inputs (Δ before its softplus, D, z) and a step running one scan function forward + backward."""
    generator = torch.Generator().manual_seed(0)
    x, raw, z = (torch.randn(batch, length, channels, generator=generator, requires_grad=True) for _ in range(3))
    A = (-torch.rand(state, channels, generator=generator) - 0.5).requires_grad_()  # (N, D), as the kernel takes it
    B, C = (torch.randn(batch, length, state, generator=generator, requires_grad=True) for _ in range(2))
    skip = torch.randn(channels, generator=generator, requires_grad=True)
    return (x, raw, A, B, C, skip, z), lambda function: function.apply(x, raw, A, B, C, None, 64, skip, True, z)[0]


def wkv_case(batch: int, length: int, channels: int = 64):
    """RWKV's WKV inputs (w, u, k, v) and the call of one WKV function."""
    generator = torch.Generator().manual_seed(0)
    w = torch.rand(channels, generator=generator).requires_grad_()
    u = torch.randn(channels, generator=generator, requires_grad=True)
    k, v = (torch.randn(batch, length, channels, generator=generator, requires_grad=True) for _ in range(2))
    return (w, u, k, v), lambda function: function.apply(w, u, k, v)[0]


def compare(label: str, case, shipped, replaced, rounds: int, repeats: int) -> None:
    """One table row: forward + backward of the replaced against the shipped function, interleaved."""
    leaves, call = case

    def step(function):
        for leaf in leaves:
            leaf.grad = None
        output = call(function)
        output.square().sum().backward()
        return [output.detach(), *(leaf.grad for leaf in leaves)]

    for ours, reference in zip(step(shipped), step(replaced), strict=True):
        torch.testing.assert_close(ours, reference, rtol=1e-4, atol=1e-4 * (1 + reference.abs().max().item()))
    times = {"shipped": [], "replaced": []}
    for _ in range(rounds):
        for side, function in (("shipped", shipped), ("replaced", replaced)):
            times[side].append(median_time(functools.partial(step, function), repeats))
    ratio = statistics.median(slow / fast for slow, fast in zip(times["replaced"], times["shipped"]))
    replaced_ms, shipped_ms = (statistics.median(times[side]) * 1e3 for side in ("replaced", "shipped"))
    print(f"| {label} | {replaced_ms:.3g} | {shipped_ms:.3g} | {ratio:.3f} |")


def elementwise_table(rounds: int, repeats: int) -> None:
    import hf_icl.mixers.ops.selective_scan_numba as scan
    import hf_icl.mixers.ops.wkv_numba as wkv

    libm_scan = replaced_form(scan, LIBM_FORM, "libm").NumbaSelectiveScan
    checked_wkv = replaced_form(wkv, CHECKED_DIVISIONS, "checked").NumbaWKV
    print("\n### Vectorised elementwise maths, forward + backward: the replaced form against the shipped one\n")
    print(
        "Replaced: the selective scan as Mamba calls it (Δ softplus, D skip, SiLU gate) with libm's exp/log1p per "
        "element and checked divisions; RWKV's WKV with its divisions checked for zero element by element.\n"
    )
    print("| case | replaced, median (ms) | shipped, median (ms) | ratio (median of per-round ratios) |")
    print("|---|---|---|---|")
    for batch, length in ((64, 82), (64, 192)):
        label = f"selective scan, B, T, D, N = {batch}, {length}, 128, 16"
        compare(label, scan_case(batch, length), scan.NumbaSelectiveScan, libm_scan, rounds, repeats)
    compare("WKV, B, T, C = 64, 82, 64", wkv_case(64, 82), wkv.NumbaWKV, checked_wkv, rounds, repeats)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="alternations of the two sides")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per side and round (median)")
    add_output_argument(parser)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    wide_vector_table(args.rounds, args.repeats)
    gated_toeplitz_table(args.rounds, args.repeats)
    elementwise_table(args.rounds, args.repeats)


if __name__ == "__main__":
    run_recorded(main)
