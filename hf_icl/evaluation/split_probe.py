"""Before training (and before `evaluate` scores a split): score the longest row of every evaluation split with the
family's own evaluator, so that a split the model cannot take fails in one line before the work, not in a traceback
after it.

The training probe (`loop.probe_model`) forwards the longest training example only; a task whose test split is longer
than its training split (length generalisation: `parity_check` tests up to 500 symbols) trained the whole run with
`--override max_position_embeddings=50` and then failed in the test evaluation, writing neither `metrics.json` nor
`model/` (and `--resume` repeated it). Only a position limit is reported; anything else the one-row probe runs into is
left to the real evaluation, so the probe never refuses a run that would have finished.
"""

from __future__ import annotations

import re

POSITION_LIMIT = re.compile(r"max_position_embeddings|position_embedding")
"""What the model's error about positions past its limit says (`modeling.decoder`)."""


def longest_row(split) -> int | None:
    """The index of the longest row of a `datasets.Dataset`: by its `length` column where it has one, else by the
    total length of its text and list columns; `None` for anything else (or no rows)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if not hasattr(split, "with_format") or not len(split):
        return None
    table = split.with_format("arrow")[:]
    total = None
    if "length" in table.column_names and pa.types.is_integer(table.schema.field("length").type):
        total = np.asarray(table["length"].to_numpy(), dtype=np.int64)
    else:
        for name in table.column_names:
            kind = table.schema.field(name).type
            if pa.types.is_string(kind) or pa.types.is_large_string(kind):
                size = pc.utf8_length(table[name])
            elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
                size = pc.list_value_length(table[name])
            else:
                continue
            size = np.asarray(size.to_numpy(zero_copy_only=False), dtype=np.float64)
            total = size if total is None else total + np.nan_to_num(size)
    return None if total is None else int(np.nanargmax(total))


def probe_evaluation_splits(task: str, family, data, model, splits=("validation", "test")) -> str | None:
    """Score the longest row of each of `splits` with `family`'s evaluator; the model's position-limit message
    (naming the split) where one does not fit, else `None`. The caller keeps the random generators as they were
    (`training.loop.preserved_random_state`).

    Args:
        task: the task name.
        family: its `TaskFamily`.
        data: the prepared `TaskData` (splits without rows, or none, are skipped).
        model: the model to score (left in the mode it was in).
        splits: the split names to probe, where the data has them.
    """
    import dataclasses

    import torch

    from ..tasks import EvalRequest

    if data.splits is None:
        return None
    was_training = model.training
    model.eval()
    try:
        for name in splits:
            if name not in data.splits:
                continue
            index = None
            try:
                index = longest_row(data.splits[name])
                if index is None:
                    continue
                probed = type(data.splits)({**data.splits, name: data.splits[name].select([index])})
                request = EvalRequest(task, model, dataclasses.replace(data, splits=probed), name, 1, False)
                with torch.no_grad():
                    family.evaluate(request)
            except ValueError as err:
                if POSITION_LIMIT.search(str(err)):
                    return f"the {name} split's longest row (row {index}): {err}"
            except Exception:  # noqa: BLE001 (a one-row artefact; the real evaluation reports real problems)
                continue
    finally:
        model.train(was_training)
    return None
