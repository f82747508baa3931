"""Forward FLOPs per sequence of every architecture (paper 5, App. C), so curves can be drawn against compute.

P5 counts multiplications per block for batch size 1 and sequence length L (Tables 7, 8), ignoring linear terms:

    attention block  3LD² (QKV) + 2L²D (QKᵀ and AV) + LD² (output projection)
    MLP, width 4D    8LD²          (generally 2·L·D·D_ff)
    Mamba block      2LED² (input projection) + 7LEDN + 2RLED (SSM) + LED² (output projection)

with E = `expand`, N = `ssm_state_size`, R = `dt_rank` read from the config (P5 assumes E = R = 2). Each mixer states
its own rule (`multiplications(length)` in its file: attention and sliding-dilated attention, Mamba and S4-Mamba). A
multiply-accumulate is 2 FLOPs, so the forward pass costs 2 × multiplications (P5's training FLOPs are 6 ×). Mixers
without a rule (linear attention, RetNet, GLA, RWKV, LSTM, S4, H3, Hyena) are counted from their weight matrices:
every matrix entry is one multiplication per token. Read-in and read-out are
included (2LD(d_x + d_y)); norms, activations and convolutions are linear terms and left out, as P5 does.
"""

from __future__ import annotations

from torch import nn


def _matrix_multiplications(module: nn.Module) -> int:
    """Multiplications per token of every weight matrix of `module`'s `nn.Linear` and recurrent (`nn.LSTM`) layers
    (the weight-matrix rule for mixers P5 omits)."""
    count = 0
    for layer in module.modules():
        if isinstance(layer, nn.Linear):
            count += layer.weight.numel()
        elif isinstance(layer, nn.RNNBase):
            count += sum(p.numel() for name, p in layer.named_parameters(recurse=False) if name.startswith("weight"))
    return count


def block_multiplications(config, block: nn.Module, length: int) -> int:
    """Multiplications of one block (mixer plus FFN) on a sequence of `length` positions (P5 Tables 7, 8).

    A mixer with its own rule (`mixer.multiplications(length)`: attention, Mamba, declared in the mixer's file) uses
    it; every other mixer is counted by the weight-matrix rule.
    """
    mixer = getattr(block, "mixer", block)
    rule = getattr(mixer, "multiplications", None)
    count = rule(length) if callable(rule) else length * _matrix_multiplications(mixer)
    ffn = getattr(block, "ffn", None)
    if ffn is not None:
        count += length * _matrix_multiplications(ffn)  # 8LD² for the width-4 MLP of P5 Table 7
    return count


def forward_flops(model, length: int) -> int:
    """Forward FLOPs of one sequence of `length` tokens through `model` (an hf_icl model; P5 App. C).

    Args:
        model: an `ICLForRegression`/`ICLForCausalLM` (its `.model.layers` are the blocks).
        length: tokens per sequence (2N for N in-context pairs).

    Returns:
        2 × the multiplications of every block application (RegularGPT applies its blocks once per depth level)
        plus the read-in/read-out (or LM head) matrices.
    """
    backbone = model.model
    applications = backbone.depth_for(length) if hasattr(backbone, "depth_for") else 1
    total = applications * sum(block_multiplications(model.config, block, length) for block in backbone.layers)
    heads = [module for name, module in model.named_children() if name != "model"]
    total += length * sum(_matrix_multiplications(head) for head in heads)
    return 2 * total
