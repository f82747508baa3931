"""The compiled (numba) DPLR recurrence ≡ the naive recurrence in float64 (values, final state and every gradient),
≡ the chunked torch form inside whole tiny models of every mixer that takes it (DeltaNet, Gated DeltaNet, RWKV-7; and
without its low-rank term Mamba-2, RetNet, GLA and linear attention), and gives the same bits on one thread and on
several."""

import pytest

pytest.importorskip("numba")

import torch  # noqa: E402
from backend_oracle import assert_model_agrees_under_both_backends  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hf_icl.mixers.ops import dplr_numba  # noqa: E402
from hf_icl.mixers.ops.dplr_numba import NumbaDPLR  # noqa: E402


def naive_recurrence(q, k, v, a, b, g, initial_state, low_rank):
    """S_t = diag(exp g_t) S_{t−1} + b_t (a_tᵀ S_{t−1}) + k_t v_tᵀ, o_t = q_tᵀ S_t, one step at a time."""
    state, outs = initial_state, []
    for t in range(q.shape[1]):
        decayed = g[:, t].exp()[..., None] * state  # (R, Dk, Dv); G = 1 broadcasts over Dk
        update = k[:, t, :, None] * v[:, t, None, :]
        if low_rank:
            read = torch.einsum("ri,rij->rj", a[:, t], state)
            update = update + b[:, t, :, None] * read[:, None, :]
        state = decayed + update
        outs.append(torch.einsum("ri,rij->rj", q[:, t], state))
    return torch.stack(outs, 1), state


def random_rows(rows, length, keys, values, per_key, seed, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    q, k, a, b = (torch.randn(rows, length, keys, generator=gen, dtype=dtype) * 0.5 for _ in range(4))
    v = torch.randn(rows, length, values, generator=gen, dtype=dtype)
    g = -torch.rand(rows, length, keys if per_key else 1, generator=gen, dtype=dtype) * 2
    g = g.masked_fill(torch.rand(rows, length, 1, generator=gen) < 0.2, 0.0)  # decay 1 (padding, the delta rule)
    state = torch.randn(rows, keys, values, generator=gen, dtype=dtype)
    return q, k, v, a, b, g, state


def with_grads(function, inputs, low_rank):
    leaves = [t.clone().requires_grad_() for t in inputs]
    out, state = function(*leaves, low_rank)
    gen = torch.Generator().manual_seed(1)
    weights = [torch.randn(t.shape, generator=gen, dtype=t.dtype) for t in (out, state)]
    grads = torch.autograd.grad((out * weights[0]).sum() + (state * weights[1]).sum(), leaves, allow_unused=True)
    return out, state, *grads


NAMES = ["out", "state", "q", "k", "v", "a", "b", "g", "initial state"]


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 3),
    length=st.integers(1, 40),
    keys=st.integers(1, 6),
    values=st.integers(1, 7),
    per_key=st.booleans(),
    low_rank=st.booleans(),
    checkpoint=st.integers(1, 16),
    seed=st.integers(0, 2**16),
)
def test_compiled_recurrence_equals_the_naive_one(rows, length, keys, values, per_key, low_rank, checkpoint, seed):
    inputs = random_rows(rows, length, keys, values, per_key, seed)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(dplr_numba, "MAX_CHECKPOINT_STEPS", checkpoint)  # several checkpoints at short T
        ours = with_grads(NumbaDPLR.apply, inputs, low_rank)
    oracle = with_grads(naive_recurrence, inputs, low_rank)
    for name, value, expected in zip(NAMES, ours, oracle):
        if expected is None:  # a and b do not enter without the low-rank term: the kernel reports zeros
            assert name in ("a", "b") and not low_rank and not value.any(), name
            continue
        scale = expected.abs().max().item() + 1.0
        torch.testing.assert_close(value, expected, atol=1e-10 * scale, rtol=1e-10, msg=name)


def test_several_threads_give_the_same_bits():
    """Rows are cut into one slice per torch thread (above `kernel_threads.MIN_ELEMENTS` of R·T·Dk·Dv)."""
    inputs = random_rows(6, 70, 16, 32, True, 0, dtype=torch.float32)
    threads, results = torch.get_num_threads(), []
    try:
        for count in (1, 3):
            torch.set_num_threads(count)
            results.append(with_grads(NumbaDPLR.apply, inputs, True))
    finally:
        torch.set_num_threads(threads)
    for name, one, several in zip(NAMES, *results):
        assert torch.equal(one, several), name


@pytest.mark.parametrize(
    "architecture", ["deltanet", "gated_deltanet", "rwkv7", "mamba2", "retnet", "gla", "linear_transformer"]
)
def test_tiny_models_train_the_same_under_both_backends(monkeypatch, architecture):
    """A whole model's loss and every parameter's gradient: compiled recurrence ≡ chunked torch form (left padding
    included, more than one chunk and two checkpoints), and cached decoding after a compiled prefill continues the
    same state."""
    assert_model_agrees_under_both_backends(monkeypatch, architecture, length=70, left_padding=6, generated=5)
