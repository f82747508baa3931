"""Checks of a `save_pretrained` folder before `python -m hf_icl.evaluate` does any work: each damaged or missing file
is named in one line, instead of a traceback after the data was generated or a partly random model scored silently.

- `config.json` parses and names a registered `model_type` (without one, transformers asks on the terminal whether to
  run the folder's custom code);
- the weights exist and every safetensors header reads (a truncated or garbled file);
- a tokenizer whose `tokenizer_config.json` is there has its `tokenizer.json` (transformers otherwise asks for
  sentencepiece or tiktoken);
- the config's model (built without weights) has exactly the file's weights: no key of the file unused, none of the
  model missing (other than weights tied to one that is there), every shape the same; e.g. a `config.json` that says
  3 layers over 2-layer weights.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..utils.validation import one_line

WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")


def safetensors_files(checkpoint: Path) -> list[Path]:
    """The folder's safetensors weight files: `model.safetensors`, or the shards its index lists."""
    index = checkpoint / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as err:
            raise ValueError(f"{index} is damaged ({type(err).__name__}: {one_line(err)[:120]})") from None
        return [checkpoint / shard for shard in shards]
    single = checkpoint / "model.safetensors"
    return [single] if single.is_file() else []


def check_checkpoint_files(checkpoint: Path) -> None:
    """Refuse a checkpoint folder with a damaged or missing file, naming it; reads headers only.

    Args:
        checkpoint: a `save_pretrained` folder.

    Raises:
        ValueError: the first problem found, naming the file.
    """
    from safetensors import safe_open
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    config_file = checkpoint / "config.json"
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise ValueError(f"{config_file} does not parse ({type(err).__name__}: {one_line(err)[:120]})") from None
    model_type = config.get("model_type") if isinstance(config, dict) else None
    if not isinstance(model_type, str) or model_type not in CONFIG_MAPPING:
        hint = "is missing" if model_type is None else f"{model_type!r} is not a registered architecture"
        raise ValueError(
            f"{config_file}: model_type {hint} (a plug-in's architecture needs --import; hf_icl's: "
            "see hf_icl.list_architectures())"
        )
    if not any((checkpoint / name).is_file() for name in WEIGHT_FILES):
        raise ValueError(f"{checkpoint} has no weights: expected {' or '.join(WEIGHT_FILES)}")
    for weights in safetensors_files(checkpoint):
        try:
            with safe_open(str(weights), "pt"):
                pass
        except Exception as err:  # safetensors raises its own error type for a missing, truncated or garbled file
            raise ValueError(f"{weights} is damaged or missing ({one_line(err)[:120]})") from None
    if (checkpoint / "tokenizer_config.json").is_file() and not (checkpoint / "tokenizer.json").is_file():
        raise ValueError(
            f"{checkpoint / 'tokenizer.json'} is missing: {checkpoint / 'tokenizer_config.json'} describes a tokenizer "
            "whose vocabulary is in that file (restore it, or save the tokenizer again)"
        )


def check_weights_fit(model, checkpoint: Path) -> None:
    """Refuse a checkpoint whose safetensors weights are not exactly the parameters of `model`, its config's model
    (built on the meta device, nothing loaded): a key of either side missing from the other, or another shape.

    A parameter the files lack (unless tied to one they hold) would be left at its random initialisation, and a
    tensor of another shape re-initialised; transformers only logs both.

    Raises:
        ValueError: naming `config.json`, the weight files, and a few of the keys.
    """
    files = safetensors_files(checkpoint)
    mismatch = weights_mismatch(model, files)
    if mismatch:
        raise ValueError(
            f"{checkpoint / 'config.json'} does not describe the model in {', '.join(f.name for f in files)}: "
            + mismatch
        )


def weights_mismatch(model, files: list[Path]) -> str | None:
    """How the tensors of the safetensors `files` differ from the parameters and buffers of `model` (keys missing on
    either side, other shapes; a few keys of each), else `None`; `None` too without files (nothing to compare).

    Keys saved from a wrapped model (`module.` of DDP, `_orig_mod.` of `torch.compile`) are compared without that
    prefix. Reads the files' headers only.
    """
    from safetensors import safe_open

    if not files:
        return None  # a pytorch_model.bin, or a sharded FSDP state: transformers or accelerate checks what they can
    shapes: dict[str, tuple] = {}
    for weights in files:
        with safe_open(str(weights), "pt") as handle:
            shapes.update({key: tuple(handle.get_slice(key).get_shape()) for key in handle.keys()})
    for prefix in ("module.", "_orig_mod."):
        if shapes and all(key.startswith(prefix) for key in shapes):
            shapes = {key[len(prefix) :]: shape for key, shape in shapes.items()}
    state = model.state_dict(keep_vars=True)  # tied weights are one object under several keys
    saved_objects = {id(tensor) for key, tensor in state.items() if key in shapes}
    missing = [key for key, tensor in state.items() if key not in shapes and id(tensor) not in saved_objects]
    unexpected = sorted(set(shapes) - set(state))
    reshaped = [f"{key} {list(shapes[key])} vs {list(tensor.shape)}" for key, tensor in state.items()
                if key in shapes and tuple(tensor.shape) != shapes[key]]  # fmt: skip
    parts = [f"{len(keys)} {what} ({', '.join(keys[:3])}{', ...' if len(keys) > 3 else ''})"
             for what, keys in (("weights the model needs are not in it", missing),
                                ("weights in it have no place in the model", unexpected),
                                ("weights have another shape (saved vs config)", reshaped)) if keys]  # fmt: skip
    return "; ".join(parts) or None


def skeleton(head: str, config):
    """The model of `config` under `head` without memory for its weights (the meta device), else on the CPU."""
    import torch

    from ..architectures.heads import build_model

    try:
        with torch.device("meta"):
            return build_model(head, config)
    except Exception:  # an initialiser that needs real numbers (numpy): build it for real, it is dropped at once
        return build_model(head, config)


def rewriting_note(checkpoint: Path) -> str:
    """`"; a train.py process (pid P on H) holds RUN now: ..."` when a live process of this host holds the lock of the
    run folder around `checkpoint` (a `train.py --overwrite` replacing it), else `""`. Read, never locked."""
    import os
    import socket

    from ..utils.run_locks import LOCK_FILE

    lock = Path(checkpoint).resolve().parent / LOCK_FILE
    try:
        pid, _, host = lock.read_text(encoding="utf-8").strip().partition(" on ")
        if host != socket.gethostname():
            return ""
        os.kill(int(pid), 0)  # signal 0: only checks that the process exists
    except (OSError, ValueError):
        return ""
    return (
        f"; a train.py process (pid {pid} on {host}) holds {lock.parent} now and may be rewriting it: evaluate it "
        "once that run has ended"
    )
