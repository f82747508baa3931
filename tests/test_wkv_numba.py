"""The compiled (numba) RWKV-4 WKV ≡ the chunked torch WKV (its oracle) and the float64 stable recurrence: values,
final state and the gradients of w, u, k and v, over random shapes and decays from very fast to very slow; keys
large enough to overflow the raw formula; the dispatch (`rwkv.wkv`) and a whole RWKV model under both backends."""

import pytest

pytest.importorskip("numba")

import torch  # noqa: E402
from backend_oracle import assert_model_agrees_under_both_backends  # noqa: E402
from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from test_mixers_recurrent import random_wkv, wkv_naive  # noqa: E402

from hf_icl.mixers import rwkv as rwkv_module  # noqa: E402
from hf_icl.mixers.ops.selective_scan import SCAN_BACKEND_ENV  # noqa: E402
from hf_icl.mixers.ops.wkv_numba import NumbaWKV  # noqa: E402
from hf_icl.mixers.rwkv import wkv, wkv_chunked  # noqa: E402


def with_grads(form, w, u, k, v, weights):
    """(z, a, b, p, ∂w, ∂u, ∂k, ∂v) of a fixed random linear loss on z."""
    leaves = [t.detach().clone().requires_grad_() for t in (w, u, k, v)]
    z, state = form(*leaves)
    return (z, *state, *torch.autograd.grad((z * weights).sum(), leaves, allow_unused=True, materialize_grads=True))


def compiled(w, u, k, v):
    z, *state = NumbaWKV.apply(w, u, k, v)
    return z, state


# ∂w sums B·T terms of both signs whose size reaches e^k (keys up to 10 below), through the float32 state that the
# forward saved, so both float32 forms' ∂w can be off from the float64 recurrence by more than the common 2e-5, in
# either direction: hypothesis found the compiled kernel off by 1.8x that bound (seed 629) and, later, the two forms'
# ∂w more than 1e-4 apart (seed 54); both are explicit @examples below. Accumulating in float64 inside the kernel did
# not help. So the gradients of both forms are compared with the float64 recurrence (not with each other), and ∂w is
# held to 2e-4.
GRAD_W_TOLERANCE = 2e-4


OUTPUTS = ("z", "a", "b", "p", "w", "u", "k", "v")  # with_grads: z, the final state (a, b, p), ∂w, ∂u, ∂k, ∂v
WITHOUT_STATE = ("z", "w", "u", "k", "v")


def without_state(outputs):
    """`with_grads`'s outputs less the final state: (z, ∂w, ∂u, ∂k, ∂v), named by WITHOUT_STATE."""
    return outputs[:1] + outputs[4:]


def assert_agree(ours, oracle, tolerance, names=OUTPUTS):
    assert len(ours) == len(oracle) == len(names)
    for name, value, expected in zip(names, ours, oracle):
        assert value.shape == expected.shape and value.dtype == torch.float32, name
        bound = max(tolerance, GRAD_W_TOLERANCE) if name == "w" else tolerance
        scale = expected.abs().max().item() + 1.0
        torch.testing.assert_close(value, expected.to(value.dtype), atol=bound * scale, rtol=bound, msg=name)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    batch=st.integers(1, 3),
    length=st.integers(1, 60),
    channels=st.integers(1, 9),
    key_scale=st.sampled_from([0.5, 3.0, 10.0]),
)
@example(seed=629, batch=3, length=60, channels=1, key_scale=10.0)  # compiled ∂w beyond 2e-5 of the float64 one
@example(seed=54, batch=1, length=54, channels=1, key_scale=10.0)  # the two forms' ∂w more than 1e-4 apart
def test_compiled_wkv_equals_the_chunked_form_and_the_float64_recurrence(seed, batch, length, channels, key_scale):
    w, u, k, v = (t.float() for t in random_wkv(seed, batch, length, channels, scale=key_scale))
    weights = torch.randn(batch, length, channels, generator=torch.Generator().manual_seed(seed + 1))
    ours = with_grads(compiled, w, u, k, v, weights)
    chunked = with_grads(lambda *x: wkv_chunked(*x, chunk_size=7), w, u, k, v, weights)
    assert_agree(ours[:4], chunked[:4], 2e-5, names=OUTPUTS[:4])  # the forward: z and the final state (a, b, p)
    exact = with_grads(wkv_naive, *(t.double() for t in (w, u, k, v)), weights.double())
    for form in (ours, chunked):  # the gradients: each float32 form against the float64 recurrence
        assert_agree(without_state(form), without_state(exact), 2e-5, names=WITHOUT_STATE)


def test_keys_that_overflow_the_raw_formula_stay_finite_and_exact():
    w, u, k, v = random_wkv(1, 2, 64, 8)
    k = 50 + 50 * torch.rand(k.shape, generator=torch.Generator().manual_seed(2), dtype=k.dtype)  # e^k > fp32 max
    weights = torch.randn(k.shape, generator=torch.Generator().manual_seed(3), dtype=k.dtype)
    ours = with_grads(compiled, *(t.float() for t in (w, u, k, v)), weights.float())
    assert all(torch.isfinite(t).all() for t in ours)
    exact = with_grads(wkv_naive, w, u, k, v, weights)
    assert_agree(without_state(ours), without_state(exact), 1e-4, names=WITHOUT_STATE)


def test_dispatch_takes_the_kernel_only_where_it_applies(monkeypatch):
    w, u, k, v = (t.float() for t in random_wkv(5, 2, 9, 4))
    calls = []

    class Spy:
        @staticmethod
        def apply(*args):
            calls.append(1)
            return NumbaWKV.apply(*args)

    monkeypatch.setattr(rwkv_module, "NumbaWKV", Spy)
    wkv(w, u, k, v)
    assert calls == [1]
    wkv(w, u, k, v, mask=torch.ones(2, 9, dtype=torch.bool))  # padding: the torch form
    wkv(*(t.double() for t in (w, u, k, v)))  # float64: the torch form
    wkv(w, u, k, v, state=wkv_chunked(w, u, k, v)[1])  # a carried state: the torch form
    monkeypatch.setenv(SCAN_BACKEND_ENV, "torch")
    wkv(w, u, k, v)
    assert calls == [1]


def test_an_rwkv_model_trains_the_same_under_both_backends(monkeypatch):
    assert_model_agrees_under_both_backends(monkeypatch, "rwkv")
