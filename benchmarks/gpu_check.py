"""The GPU check: everything that needs CUDA, in one time-boxed command, for the rare session that is lent a GPU.

    python benchmarks/gpu_check.py --dry-run                       # CPU (CI): imports, arguments, the plan
    python benchmarks/gpu_check.py --prepare-wheels outputs/gpu_wheels   # here: download the pure-Python wheels
    python benchmarks/gpu_check.py --wheels outputs/gpu_wheels --output docs/results/benchmarks/gpu_check.json

Steps, each under its own time limit (a step past it is recorded as `timed_out` and the next one runs), the JSON and
the log rewritten after every step so a cut-off run still returns what it measured:

1. `device`: the GPU, driver, CUDA and library versions (torch, triton, transformers, accelerate, fla, mamba-ssm,
   causal-conv1d) and which of hf_icl's guarded kernels imported;
2. `cuda_tests`: the test items that skip without CUDA (fla's chunk kernels, the Triton n-gram kernel, mamba-ssm's
   scan, causal-conv1d), each against its pure-PyTorch oracle;
3. `step_times`: one forward+backward of every architecture at the recipe shape (tiny preset, 4 layers, batch 32,
   384 tokens) on the GPU, fast path (the guarded kernels) against pure PyTorch (the kernels switched off), fp32 and
   bf16 autocast;
4. `train`: the RegBench CPU recipe (`experiments/configs/regbench_cpu.yaml`) on the GPU, scored on validation every
   100 steps, until its time limit; the step where it passes the in-context 2-gram line is read from its history.

The GPU machine has torch, triton, transformers and accelerate but lacks `datasets`, `evaluate` and `fla`, and has no
network: `--prepare-wheels DIR` downloads them (pure-Python wheels, no dependencies) here, `carry` takes DIR along,
and `--wheels DIR` installs them there with `pip install --no-index --no-deps --target`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.metadata
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WHEELS = ("transformers==5.24.0", "datasets==5.2.0", "evaluate==0.4.6", "flash-linear-attention==0.6.0",
          "fla-core==0.6.0", "dill", "multiprocess", "regex", "tqdm", "fsspec")  # fmt: skip
"""What the GPU machine lacks (or has too old), as wheels for its Python (`GPU_PYTHON`)."""
GPU_PYTHON = "3.12"
CUDA_TESTS = ("tests/test_mixers_delta_rule.py", "tests/test_mixers_linear_attention.py", "tests/test_mixers_mamba.py",
              "tests/test_ngram_heads.py", "tests/test_ops.py")  # fmt: skip
CUDA_SELECTION = "cuda or fla or triton or kernel"
"""The test items that skip without CUDA (their names say which kernel they check)."""
LIBRARIES = ("torch", "triton", "transformers", "accelerate", "datasets", "flash-linear-attention", "fla-core",
             "mamba-ssm", "causal-conv1d")  # fmt: skip
GUARDED = {  # module: attributes that are None where the kernel did not import (the pure path then runs)
    "hf_icl.mixers.ops.delta_rule": ("_FLA_DELTA", "chunk_delta_rule", "chunk_gated_delta_rule"),
    "hf_icl.mixers.ops.linear_recurrence": ("chunk_gla", "chunk_simple_gla"),
    "hf_icl.mixers.ops.selective_scan": ("mamba_ssm_selective_scan",),
    "hf_icl.mixers.ops.short_conv": ("causal_conv1d_fn",),
    "hf_icl.mixers.rwkv7": ("chunk_rwkv7",),
    "hf_icl.mixers.ngram": ("HAS_TRITON",),
}
SHAPE = {"preset": "tiny", "num_hidden_layers": 4, "batch": 32, "length": 384}
STEPS = ("device", "cuda_tests", "step_times", "train")
LIMITS = {"device": 30, "cuda_tests": 120, "step_times": 150, "train": 180}
"""Seconds per step: 8 minutes in all, inside a 15-minute lease with the machine's start and a rerun's margin."""


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dry-run", action="store_true", help="check imports and arguments, print the plan, run nothing"
    )
    parser.add_argument("--prepare-wheels", metavar="DIR", type=Path, help="download the wheels the GPU machine lacks")
    parser.add_argument("--wheels", metavar="DIR", type=Path, help="install these wheels (--no-index) before the steps")
    parser.add_argument("--output", metavar="FILE", type=Path, default=Path("gpu_check.json"),
                        help="the JSON (a .log beside it holds every step's output)")  # fmt: skip
    parser.add_argument("--steps", default=",".join(STEPS), help=f"comma-separated subset of: {', '.join(STEPS)}")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every step's time limit (default 1)")
    args = parser.parse_args(argv)
    steps = [s for s in args.steps.split(",") if s]
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        parser.error(f"argument --steps: {unknown[0]!r} is not one of: {', '.join(STEPS)}")
    if args.scale <= 0:
        parser.error(f"argument --scale: {args.scale} must be > 0")
    if args.wheels is not None and not args.wheels.is_dir():
        parser.error(f"argument --wheels: {str(args.wheels)!r} is not a folder (make it with --prepare-wheels)")
    args.steps = steps
    return args


def plan(args) -> list[str]:
    """What the check would run, one line per step."""
    lines = [f"install {args.wheels}/*.whl with pip --no-index --no-deps --target" if args.wheels else "no wheels"]
    for step in args.steps:
        limit = LIMITS[step] * args.scale
        what = {"device": "report the GPU, driver and versions",
                "cuda_tests": f"pytest {' '.join(CUDA_TESTS)} -k '{CUDA_SELECTION}'",
                "step_times": f"forward+backward of {len(architectures())} architectures, fast vs pure, fp32 and bf16",
                "train": "train.py --config experiments/configs/regbench_cpu.yaml --eval-every 100"}[step]  # fmt: skip
        lines.append(f"{step} (≤ {limit:.0f} s): {what}")
    return lines


def architectures() -> list[str]:
    import hf_icl

    return list(hf_icl.list_architectures())


def versions() -> dict:
    found = {}
    for name in LIBRARIES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def step_device() -> dict:
    import torch

    facts = {"versions": versions(), "cuda_available": torch.cuda.is_available(), "torch_cuda": torch.version.cuda}
    if torch.cuda.is_available():
        facts["device"] = torch.cuda.get_device_name(0)
        facts["capability"] = list(torch.cuda.get_device_capability(0))
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                         capture_output=True, text=True, check=False) if _which("nvidia-smi") else None  # fmt: skip
    facts["nvidia_smi"] = smi.stdout.strip() if smi else None
    facts["kernels"] = {f"{module}.{name}": getattr(importlib.import_module(module), name, None) is not None
                        for module, names in GUARDED.items() for name in names[:1]}  # fmt: skip
    return facts


def _which(name: str) -> bool:
    return any((Path(p) / name).is_file() for p in os.environ.get("PATH", "").split(os.pathsep))


def step_cuda_tests(limit: float, log) -> dict:
    command = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *CUDA_TESTS, "-k",
               CUDA_SELECTION]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=limit, cwd=ROOT, check=False)
    log.write(done.stdout + done.stderr)
    tail = [line for line in done.stdout.splitlines() if line.strip()][-1:] or [""]
    return {"command": " ".join(command[1:]), "returncode": done.returncode, "summary": tail[0]}


@contextlib.contextmanager
def pure_pytorch():
    """Every guarded kernel switched off (as on a machine where it did not import): the oracle path."""
    saved = []
    for module_name, names in GUARDED.items():
        module = importlib.import_module(module_name)
        for name in names:
            if hasattr(module, name):
                saved.append((module, name, getattr(module, name)))
                setattr(module, name, False if name == "HAS_TRITON" else None)
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


def time_step(architecture: str, dtype: str, repeats: int = 5) -> float:
    """Median seconds of one forward+backward at the recipe shape on cuda."""
    import torch
    from transformers import AutoModelForCausalLM

    import hf_icl

    config = hf_icl.config_for(architecture, SHAPE["preset"], vocab_size=20,
                               num_hidden_layers=SHAPE["num_hidden_layers"])  # fmt: skip
    model = AutoModelForCausalLM.from_config(config).cuda()
    ids = torch.randint(0, 20, (SHAPE["batch"], SHAPE["length"]), device="cuda")
    times = []
    for i in range(repeats + 2):
        torch.cuda.synchronize()
        start = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=dtype == "bf16"):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.cuda.synchronize()
        if i >= 2:
            times.append(time.perf_counter() - start)
    model.zero_grad(set_to_none=True)
    return sorted(times)[len(times) // 2]


def step_step_times(deadline: float) -> dict:
    rows = {}
    for architecture in architectures():
        for dtype in ("fp32", "bf16"):
            if time.monotonic() > deadline:
                rows["timed_out_at"] = f"{architecture} {dtype}"
                return rows
            row = {}
            for path in ("fast", "pure"):
                try:
                    with pure_pytorch() if path == "pure" else contextlib.nullcontext():
                        row[path] = time_step(architecture, dtype)
                except Exception as error:  # noqa: BLE001 - a failing architecture is a result, not the end
                    row[path] = f"{type(error).__name__}: {' '.join(str(error).split())[:200]}"
            if all(isinstance(v, float) for v in row.values()):
                row["pure_over_fast"] = row["pure"] / row["fast"]
            rows[f"{architecture} {dtype}"] = row
    return rows


def train_arguments(limit: float, folder: Path) -> list[str]:
    """train.py's arguments: the recipe on the GPU, validation every 100 steps, training stopped a minute before
    the step's limit (the evaluation and the saved model need the rest)."""
    return ["--config", "experiments/configs/regbench_cpu.yaml", "--eval-every", "100", "--max-train-minutes",
            f"{max(limit - 60, 30) / 60:.2f}", "--output-dir", str(folder), "--overwrite",
            "--report-to", "none"]  # fmt: skip


def step_train(limit: float, output: Path, log) -> dict:
    folder = output.parent / (output.stem + "_regbench_run")
    command = [sys.executable, "-m", "hf_icl.train", *train_arguments(limit, folder)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=limit, cwd=ROOT, check=False)
    log.write(done.stdout[-20000:] + done.stderr[-20000:])
    result = {"command": " ".join(command[1:]), "returncode": done.returncode}
    metrics_file = folder / "metrics.json"
    if metrics_file.is_file():
        metrics = json.loads(metrics_file.read_text())
        result["steps"] = metrics["train"].get("steps")
        result["wall_time_s"] = metrics["train"].get("wall_time_s")
        result["test"] = metrics["test"].get("model")
        result["two_gram_line_step"] = first_step_past(metrics, "2-gram (paper)")
    return result


def first_step_past(metrics: dict, baseline: str) -> int | None:
    """The first validation step (`train.validation_history`) whose TVD is below `baseline`'s on validation."""
    line = metrics.get("validation", {}).get("baselines", {}).get(baseline, {}).get("tvd")
    for point in metrics["train"].get("validation_history", []):
        if line is not None and point.get("tvd") is not None and point["tvd"] < line:
            return point["step"]
    return None


def install_wheels(folder: Path) -> Path:
    target = folder / "site"
    wheels = sorted(str(p) for p in folder.glob("*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--target",
                    str(target), *wheels], check=True)  # fmt: skip
    sys.path.insert(0, str(target))
    os.environ["PYTHONPATH"] = os.pathsep.join([str(target), str(ROOT), os.environ.get("PYTHONPATH", "")])
    return target


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.prepare_wheels:
        args.prepare_wheels.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
                        "--python-version", GPU_PYTHON, "--platform", "manylinux2014_x86_64",
                        "--dest", str(args.prepare_wheels), *WHEELS], check=True)  # fmt: skip
        print(f"wheels in {args.prepare_wheels}: carry it and pass --wheels {args.prepare_wheels}")
        return {}
    if args.dry_run:
        import torch  # noqa: F401 - the imports the steps need, checked

        from hf_icl.training.arguments import parse_args as parse_train_arguments

        for module in GUARDED:
            importlib.import_module(module)
        if "train" in args.steps:  # the training command's arguments parse (nothing runs)
            parse_train_arguments(train_arguments(LIMITS["train"] * args.scale, args.output.parent / "dry_run"))
        for line in plan(args):
            print(line)
        print(f"dry run: {len(args.steps)} steps planned, nothing run; would write {args.output}")
        return {"plan": plan(args)}
    if args.wheels:
        install_wheels(args.wheels)
    results = {"plan": plan(args), "shape": SHAPE, "steps": {}}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with open(args.output.with_suffix(".log"), "w", encoding="utf-8") as log:
        for step in args.steps:
            limit, start = LIMITS[step] * args.scale, time.monotonic()
            try:
                if step == "device":
                    found = step_device()
                elif step == "cuda_tests":
                    found = step_cuda_tests(limit, log)
                elif step == "step_times":
                    found = step_step_times(start + limit)
                else:
                    found = step_train(limit, args.output, log)
            except subprocess.TimeoutExpired:
                found = {"timed_out": limit}
            except Exception as error:  # noqa: BLE001 - a failing step is recorded; the next one runs
                found = {"error": f"{type(error).__name__}: {' '.join(str(error).split())[:500]}"}
            found["seconds"] = round(time.monotonic() - start, 1)
            results["steps"][step] = found
            args.output.write_text(json.dumps(results, indent=1, default=str) + "\n", encoding="utf-8")
            log.flush()
            print(f"{step}: {found.get('seconds')} s", flush=True)
    return results


if __name__ == "__main__":
    main()
