"""`hf_icl.mixers.ops.cpu_paths`: the test every hand-written CPU path asks before it replaces the plain expression."""

import torch

from hf_icl.mixers.ops.cpu_paths import on_cpu, plain_cpu_tensors, under_functorch
from hf_icl.mixers.ops.gated_toeplitz import gated_toeplitz_mix


def test_plain_cpu_tensors_qualify_and_none_entries_are_skipped():
    x = torch.randn(3)
    assert on_cpu(x, None) and not under_functorch(x, None) and plain_cpu_tensors(x, None)


def test_tensors_off_the_cpu_do_not_qualify():
    assert not on_cpu(torch.randn(3), torch.empty(3, device="meta"))
    assert not plain_cpu_tensors(torch.empty(3, device="meta"))


def test_tensors_under_vmap_and_grad_transforms_do_not_qualify():
    seen = []

    def record(x):
        seen.append((under_functorch(x), plain_cpu_tensors(x)))
        return x.sum()

    torch.func.vmap(record)(torch.randn(2, 3))
    torch.func.grad(record)(torch.randn(3))
    assert seen == [(True, False), (True, False)]


def test_the_blocked_mix_steps_aside_under_vmap_and_agrees_with_its_plain_expression():
    q, k, v = (torch.randn(2, 2, 1, 5, 3, dtype=torch.float64) for _ in range(3))  # (vmapped, B, H, T, D)
    maps = torch.randn(1, 5, 5, dtype=torch.float64).tril()  # (H, T, T)
    mapped = torch.func.vmap(lambda q, k, v: gated_toeplitz_mix(q, k, v, maps))(q, k, v)
    torch.testing.assert_close(mapped, ((q @ k.transpose(-1, -2)) * maps) @ v)
