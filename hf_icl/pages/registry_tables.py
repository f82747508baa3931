"""Tables of what is registered (mixers, architectures, task families), written into the docs from the registries.

    python -m hf_icl.pages.registry_tables [--write docs/architecture.md] [--check docs/architecture.md]

Each table sits in the page between `<!-- registry: NAME start -->` and `<!-- registry: NAME end -->`; `--write`
replaces those blocks with the tables of the registries as they are (plug-ins included with `--import`), `--check`
exits 1 when the page differs (the test suite does this, so nobody keeps a copy by hand).
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

from ..architectures import ARCHITECTURES
from ..block_features.feature_registry import BLOCK_FEATURES, list_block_features
from ..mixers import list_mixers, mixer_spec
from ..mixers.registry import MAP_AXES
from ..tasks import FAMILIES
from .page_command import page_main

PACKAGE = Path(__file__).parents[1]  # hf_icl/
SIZES = ("tiny", "small", "base")  # the size presets every architecture has (matched on parameters)


def _where(obj) -> str:
    """The file or folder of `obj` relative to the package (`mixers/gla.py`), or its module outside it."""
    path = Path(inspect.getfile(obj))
    try:
        return str(path.relative_to(PACKAGE))
    except ValueError:
        return obj.__module__


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _yes(flag: bool) -> str:
    return "yes" if flag else "—"


def mixers_table() -> str:
    rows = []
    for name in list_mixers():
        spec = mixer_spec(name)
        fields = ", ".join(f"`{field}`" for field in spec.config_fields) or "—"
        rows.append([f"`{name}`", f"`{_where(spec.mixer_class)}`", _yes(spec.recurrent), _yes(spec.attention_maps),
                     _yes(spec.mixing_maps), _yes(spec.continuous_inputs), fields])  # fmt: skip
    header = ["mixer", "file", "recurrent decode", "softmax maps", "exact linear maps", "continuous inputs",
              "config fields"]  # fmt: skip
    return _table(header, rows)


def maps_table() -> str:
    """What `output_attentions=True` returns for each mixer, from its declarations (`map_axis`,
    `map_rows_sum_to_one`); `tests/test_mixing_maps.py` checks each declaration against a computed map."""
    rows = []
    for name in list_mixers():
        spec = mixer_spec(name)
        if spec.attention_maps:
            kind = "softmax probabilities"
        elif spec.mixing_maps:
            kind = "exact linear map (map @ values = output)"
        else:
            rows.append([f"`{name}`", "none (`None`)", "—", "—"])
            continue
        rows.append([f"`{name}`", kind, spec.map_axis, _yes(spec.map_rows_sum_to_one)])
    legend = "\n".join(f"- *{axis}*: {meaning}." for axis, meaning in MAP_AXES.items())
    return _table(["mixer", "map", "H indexes", "rows sum to 1"], rows) + "\n\n" + legend


def architectures_table() -> str:
    rows = []
    for name in sorted(ARCHITECTURES):
        entry = ARCHITECTURES[name]
        mixers = ", ".join(f"`{m}`" for m in dict.fromkeys(entry.config_class().mixer_types))
        capabilities = [cap for cap in ("recurrent_decode", "attention_maps") if getattr(entry, cap)]
        capabilities += [*entry.block_features, *(["continuous_inputs"] if entry.continuous_inputs else [])]
        rows.append([f"`{name}`", f"`{Path(_where(entry.config_class)).parent}/`", mixers,
                     ", ".join(f"`{p}`" for p in entry.presets), ", ".join(capabilities) or "—"])  # fmt: skip
    return _table(["architecture", "folder", "mixers (default)", "presets", "capabilities"], rows)


def _first_sentence(text: str | None) -> str:
    """The first sentence of a docstring or note, on one line (a table cell: `|` escaped)."""
    flat = " ".join((text or "").split())
    ends = (m.start() for m in re.finditer(r"[.](?=\s+[A-Z`(]|$)", flat))  # a full stop before a new sentence ...
    end = next((i for i in ends if not re.search(r"\b(al|eq|Eq|Fig|e\.g|i\.e|vs)$", flat[:i])), None)  # not "al."
    sentence = flat[: end + 1] if end is not None else flat
    return sentence.replace("|", "\\|")


def _non_embedding_counts(name: str) -> list[str]:
    """Non-embedding parameters of `name` at each size preset it has, counted on the meta device (no memory)."""
    import torch
    from transformers import AutoModelForCausalLM

    from ..architectures import config_for, non_embedding_parameters

    cells = []
    for size in SIZES:
        if size not in ARCHITECTURES[name].presets:
            cells.append("—")
            continue
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config_for(name, size, vocab_size=20))
        cells.append(f"{non_embedding_parameters(model):,}")
    return cells


def zoo_table() -> str:
    """The README's architecture table: every architecture (what its config class says it is, its parameters per
    size preset with RegBench's 20 tokens, its other presets) and every block feature any architecture can take."""
    rows = []
    for name in sorted(ARCHITECTURES):
        entry = ARCHITECTURES[name]
        others = ", ".join(f"`{p}`" for p in entry.presets if p not in SIZES) or "—"
        rows.append([f"`{name}`", *_non_embedding_counts(name), _first_sentence(entry.config_class.__doc__), others])
    for name in list_block_features():
        feature = BLOCK_FEATURES[name]
        option = f" (`{feature.option.flag}`)" if feature.option is not None else ""
        rows.append([f"block feature `{name}`{option}", "", "", "", _first_sentence(feature.__doc__), "—"])
    return _table(["architecture", *SIZES, "what it is", "other presets"], rows)


def tasks_table() -> str:
    """The README's task table: the task families grouped by the metric they declare (`metric_note`)."""
    groups: dict[str, list[str]] = {}
    for name in sorted(FAMILIES):
        groups.setdefault(_first_sentence(FAMILIES[name].metric_note), []).append(name)
    rows = []
    for metric, families in groups.items():
        tasks = [task for family in families for task in sorted(FAMILIES[family].tasks)]
        named = ", ".join(f"`{f}`" for f in families)
        if tasks == families and len(families) > 1:
            named = "one family per task"
        rows.append([", ".join(f"`{t}`" for t in tasks), named, metric or "—"])
    return _table(["tasks", "family", "metric"], rows)


def families_table() -> str:
    rows = []
    for name in sorted(FAMILIES):
        family = FAMILIES[name]
        folder = Path(_where(family.prepare_data)).parent
        rows.append([f"`{name}`", f"`{folder}/`", family.head, ", ".join(f"`{t}`" for t in sorted(family.tasks))])
    return _table(["task family", "folder", "head", "tasks"], rows)


TABLES = {
    "mixers": mixers_table,
    "maps": maps_table,
    "architectures": architectures_table,
    "task-families": families_table,
    "zoo": zoo_table,
    "tasks": tasks_table,
}


def render(page: str) -> str:
    """`page` with every registry block replaced by its current table.

    Raises:
        ValueError: a block's end marker is missing.
    """
    for name, table in TABLES.items():
        start, end = f"<!-- registry: {name} start -->", f"<!-- registry: {name} end -->"
        if start not in page:
            continue
        if end not in page:
            raise ValueError(f"the page has {start!r} without {end!r}")
        block = f"{start}\n{table()}\n{end}"
        page = re.sub(re.escape(start) + r".*?" + re.escape(end), lambda _, block=block: block, page, flags=re.S)
    return page


def render_or_list(page: str | None) -> str:
    """`render(page)`, or every table under its name where there is no page (the command without `--write`)."""
    if page is None:
        return "\n\n".join(f"## {name}\n\n{table()}" for name, table in TABLES.items()) + "\n"
    return render(page)


def main(argv: list[str] | None = None) -> int:
    return page_main("python -m hf_icl.pages.registry_tables", __doc__.splitlines()[0], render_or_list, True, argv)


if __name__ == "__main__":
    sys.exit(main())
