"""The compiled shared-key recurrence (Mamba-2's heads as columns of one state) ≡ the naive per-head recurrence in
float64 (values, final state and every gradient, several checkpoint chunks), the same bits on one thread and on
several, and the path a whole Mamba-2 takes on the CPU, equal to the chunked torch form (padding and cached decoding
included)."""

import pytest

pytest.importorskip("numba")

import torch  # noqa: E402
from backend_oracle import assert_model_agrees_under_both_backends, spy_on_kernel  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hf_icl.mixers.ops import shared_key_numba  # noqa: E402
from hf_icl.mixers.ops.shared_key_numba import SharedKeyRecurrence  # noqa: E402


def naive_recurrence(q, k, v, g, initial_state):
    """Per head h: S_t = exp(g_th) S_{t−1} + k_t v_thᵀ, o_th = q_tᵀ S_t; q, k (R, T, Dk) shared by the heads, v and
    the state laid out as H blocks of P columns."""
    rows, length, heads = g.shape
    group = v.shape[-1] // heads
    state, outs = initial_state, []
    for t in range(length):
        decay = g[:, t].exp().repeat_interleave(group, dim=-1)  # (R, H·P)
        state = decay[:, None, :] * state + k[:, t, :, None] * v[:, t, None, :]
        outs.append(torch.einsum("ri,rij->rj", q[:, t], state))
    return torch.stack(outs, 1), state


def random_rows(rows, length, keys, heads, group, seed, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(rows, length, keys, generator=gen, dtype=dtype) * 0.5 for _ in range(2))
    v = torch.randn(rows, length, heads * group, generator=gen, dtype=dtype)
    g = -torch.rand(rows, length, heads, generator=gen, dtype=dtype) * 2
    g = g.masked_fill(torch.rand(rows, length, 1, generator=gen) < 0.2, 0.0)  # decay 1 (padding)
    state = torch.randn(rows, keys, heads * group, generator=gen, dtype=dtype)
    return q, k, v, g, state


def with_grads(function, inputs):
    leaves = [t.clone().requires_grad_() for t in inputs]
    out, state = function(*leaves)
    gen = torch.Generator().manual_seed(1)
    weights = [torch.randn(t.shape, generator=gen, dtype=t.dtype) for t in (out, state)]
    grads = torch.autograd.grad((out * weights[0]).sum() + (state * weights[1]).sum(), leaves)
    return out, state, *grads


NAMES = ["out", "state", "q", "k", "v", "g", "initial state"]


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 3),
    length=st.integers(1, 40),
    keys=st.integers(1, 6),
    heads=st.integers(1, 4),
    group=st.integers(1, 5),
    checkpoint=st.integers(1, 16),
    seed=st.integers(0, 2**16),
)
def test_compiled_recurrence_equals_the_naive_one(rows, length, keys, heads, group, checkpoint, seed):
    inputs = random_rows(rows, length, keys, heads, group, seed)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(shared_key_numba, "MAX_CHECKPOINT_STEPS", checkpoint)  # several chunks at short T
        ours = with_grads(SharedKeyRecurrence.apply, inputs)
    oracle = with_grads(naive_recurrence, inputs)
    for name, value, expected in zip(NAMES, ours, oracle):
        scale = expected.abs().max().item() + 1.0
        torch.testing.assert_close(value, expected, atol=1e-10 * scale, rtol=1e-10, msg=name)


def test_several_threads_give_the_same_bits():
    """Rows are cut into one slice per torch thread (above `kernel_threads.MIN_ELEMENTS` of R·T·Dk·Dv)."""
    inputs = random_rows(6, 70, 16, 2, 16, 0, dtype=torch.float32)
    threads, results = torch.get_num_threads(), []
    try:
        for count in (1, 3):
            torch.set_num_threads(count)
            results.append(with_grads(SharedKeyRecurrence.apply, inputs))
    finally:
        torch.set_num_threads(threads)
    for name, one, several in zip(NAMES, *results):
        assert torch.equal(one, several), name


def test_mamba2_takes_the_shared_key_kernel_and_agrees_with_the_chunked_form(monkeypatch):
    """Every Mamba-2 layer's SSD runs through the shared-key kernel on the CPU (left padding included), and the
    model's loss, gradients and cached decoding equal the chunked torch form's."""
    calls = spy_on_kernel(monkeypatch, shared_key_numba, "SharedKeyRecurrence")
    assert_model_agrees_under_both_backends(monkeypatch, "mamba2", length=70, left_padding=6, generated=5)
    assert len(calls) >= 2  # the training forward and the prefill of every layer (tiny: 2 layers)


def test_the_wrapper_continues_a_state_as_the_chunked_form_does():
    """`shared_key_recurrence` on (B, H, T, ·) tensors with q and k expanded over the heads and a (B, H, Dk, P)
    state to continue: the chunked form's output, final state and gradients."""
    from hf_icl.mixers.ops.linear_recurrence import chunked_linear_attention

    gen = torch.Generator().manual_seed(0)
    batch, heads, length, keys, values = 2, 3, 45, 5, 4
    leaves = [
        torch.randn(batch, 1, length, keys, generator=gen), torch.randn(batch, 1, length, keys, generator=gen),
        torch.randn(batch, heads, length, values, generator=gen), -torch.rand(batch, heads, length, 1, generator=gen),
        torch.randn(batch, heads, keys, values, generator=gen),
    ]  # fmt: skip
    results = []
    for function in (shared_key_numba.shared_key_recurrence, lambda *a: chunked_linear_attention(*a[:4], 16, a[4])):
        inputs = [t.clone().requires_grad_() for t in leaves]
        q, k, v, g, state = inputs
        out, final = function(q.expand(-1, heads, -1, -1), k.expand(-1, heads, -1, -1), v, g, state)
        grads = torch.autograd.grad(out.square().sum() + final.sin().sum(), inputs)
        results.append((out, final, *grads))
    for ours, oracle in zip(*results):
        torch.testing.assert_close(ours, oracle, atol=2e-5, rtol=2e-5)
