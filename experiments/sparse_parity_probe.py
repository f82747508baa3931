"""Plain-loop probes for sparse parity (issue 27 b), before the committed sweep: the package's model and sampler in a
bare AdamW loop, scored on 1,024 prompts with S drawn per prompt every `--eval_every` steps (accuracy at the first,
middle and last example). Their logs are in docs/results/regression/sparse_parity_cpu/probes/ (file names:
p_m_d<d>[_pp|_b512]: Mamba, d, per-prompt S, batch 512); the recipe they pointed to is
experiments/configs/sparse_parity_cpu.yaml, measured by experiments/sweeps/p5_sparse_parity_cpu.yaml.

    OMP_NUM_THREADS=1 python experiments/sparse_parity_probe.py --arch mamba --d 4 --n 20 --batch 512 --lr 2e-3 \
        --warmup 200 --steps 2000 --per_prompt
"""

import argparse
import json
import time

import torch

from hf_icl.architectures import config_for
from hf_icl.architectures.heads import build_model
from hf_icl.tasks.function_classes.classes import model_inputs, sample
from hf_icl.tasks.function_classes.function_class_data import model_fields
from hf_icl.tasks.function_classes.spec import parity_loss

p = argparse.ArgumentParser()
p.add_argument("--arch", default="mamba")
p.add_argument("--layers", type=int, default=2)
p.add_argument("--hidden", type=int, default=0)
p.add_argument("--pos", default="")
p.add_argument("--lr", type=float, default=4e-4)
p.add_argument("--warmup", type=int, default=0)
p.add_argument("--batch", type=int, default=64)
p.add_argument("--steps", type=int, default=4000)
p.add_argument("--seed", type=int, default=0)
p.add_argument("--n", type=int, default=40)
p.add_argument("--d", type=int, default=10)
p.add_argument("--k", type=int, default=2)
p.add_argument("--clip", type=float, default=10.0)
p.add_argument("--eval_every", type=int, default=250)
p.add_argument("--out", default="")
p.add_argument("--per_prompt", action="store_true")
a = p.parse_args()
torch.manual_seed(a.seed)
torch.set_num_threads(1)
ov = dict(num_hidden_layers=a.layers, **model_fields("sparse_parity", a.d))
if a.pos:
    ov["position_embedding"] = a.pos
if a.hidden:
    ov["hidden_size"] = a.hidden
model = build_model("regression", config_for(a.arch, "tiny", **ov))
print(a, sum(p.numel() for p in model.parameters()), flush=True)
opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.0)
test = sample("sparse_parity", 1024, a.n, a.d, (99, 1), k=a.k, shared_subset=False)


def evaluate():
    model.eval()
    with torch.no_grad():
        out = model(**{k: test[k] for k in ("xs", "ys")})
    model.train()
    acc = ((out.predictions > 0).float() * 2 - 1 == test["ys"]).float().mean(0)
    return [round(float(e), 3) for e in acc]


t0 = time.time()
hist = []
for step in range(a.steps):
    lr = a.lr * min(1.0, (step + 1) / a.warmup) if a.warmup else a.lr
    for g in opt.param_groups:
        g["lr"] = lr
    batch = model_inputs(
        sample("sparse_parity", a.batch, a.n, a.d, (a.seed, 7, step), k=a.k, shared_subset=not a.per_prompt)
    )
    loss = parity_loss(model, batch).loss
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
    opt.step()
    if (step + 1) % a.eval_every == 0 or step + 1 == a.steps:
        e = evaluate()
        hist.append((step + 1, e))
        print(
            step + 1,
            f"{time.time() - t0:.0f}s loss {loss.item():.3f}",
            "first",
            e[0],
            "mid",
            e[len(e) // 2],
            "last",
            e[-1],
            flush=True,
        )
print("FINAL", json.dumps(hist[-1]), f"{time.time() - t0:.0f}s")
if a.out:
    json.dump({"args": vars(a), "hist": hist, "wall": time.time() - t0}, open(a.out, "w"))
