"""Shared check of the compiled CPU kernels: a whole model's loss and gradients under `HF_ICL_SCAN_BACKEND=numba`
equal those under `torch` (the oracle forms)."""

import torch
from transformers import AutoModelForCausalLM

import hf_icl
from hf_icl.mixers.ops.selective_scan import SCAN_BACKEND_ENV


def assert_model_agrees_under_both_backends(
    monkeypatch, architecture: str, loss_tolerance: float = 1e-5, tokens: int = 20, length: int = 33,
    left_padding: int = 0, generated: int = 0, **overrides,
):  # fmt: skip
    """Train-step loss and every parameter's gradient of a `tiny` model (with config `overrides`), numba path against
    the torch path, on ids drawn from 1..tokens − 1 (few tokens: many repeats, e.g. n-gram matches). With
    `left_padding`, the second row's first positions are padding; with `generated`, greedy generation of that many
    tokens after the first half of the ids (a compiled prefill, then cached steps) gives the same tokens."""
    config = hf_icl.config_for(architecture, "tiny", vocab_size=20, **overrides)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config)
    input_ids = torch.randint(1, tokens, (3, length), generator=torch.Generator().manual_seed(0))
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, :left_padding] = 0
    results = {}
    for backend in ("numba", "torch"):
        monkeypatch.setenv(SCAN_BACKEND_ENV, backend)
        model.zero_grad(set_to_none=True)
        loss = model(input_ids=input_ids, attention_mask=attention_mask, labels=input_ids).loss
        loss.backward()
        grads = [p.grad.clone() for p in model.parameters() if p.grad is not None]
        tokens_out = None
        if generated:
            with torch.no_grad():
                half = length // 2
                tokens_out = model.generate(input_ids[:, :half], attention_mask=attention_mask[:, :half],
                                            max_new_tokens=generated, do_sample=False)  # fmt: skip
        results[backend] = (loss.detach(), grads, tokens_out)
    torch.testing.assert_close(results["numba"][0], results["torch"][0], atol=loss_tolerance, rtol=loss_tolerance)
    assert len(results["numba"][1]) == len(results["torch"][1]) > 0
    for ours, oracle in zip(results["numba"][1], results["torch"][1]):
        torch.testing.assert_close(ours, oracle, atol=1e-5 * (oracle.abs().max().item() + 1e-3), rtol=1e-4)
    if generated:
        assert torch.equal(results["numba"][2], results["torch"][2])
    return model


def spy_on_kernel(monkeypatch, module, name: str) -> list:
    """Replace the autograd function `module.<name>` (a compiled kernel's dispatch point) by a spy that runs it and
    records the dtype of each call's first argument; returns that list, to assert where the kernel was taken."""
    kernel, calls = getattr(module, name), []

    class Spy:
        @staticmethod
        def apply(*args):
            calls.append(args[0].dtype)
            return kernel.apply(*args)

    monkeypatch.setattr(module, name, Spy)
    return calls


def values_and_grads(fn, inputs, cotangent):
    """fn(*inputs) and the gradients of ⟨fn(*inputs), cotangent⟩ with respect to each input (fresh leaves)."""
    leaves = [t.detach().clone().requires_grad_() for t in inputs]
    out = fn(*leaves)
    return (out.detach(), *torch.autograd.grad(out, leaves, cotangent))
