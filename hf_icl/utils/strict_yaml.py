"""The YAML reader of every config file (`train.py --config`, sweep specs, a config's `imports:`): PyYAML's safe
loader, made strict.

- A key given twice in one mapping is refused (PyYAML keeps the last: `max_steps: 2` then `max_steps: 4000` ran
  4,000 steps). Keys merged in with `<<: *base` may still be replaced; that is what a merge is for.
- Aliases may not expand a value past :data:`MAX_ALIAS_EXPANSION` nodes. PyYAML shares an aliased node rather than
  copying it, so a few hundred bytes of nested aliases ("billion laughs") load at once and blow up only when
  something walks the value: an error message that prints it, a JSON dump.
- Exponent notation without a dot (`lr: 1e-5`) is the number YAML 1.2 makes it (YAML 1.1 reads it as text), and a
  plain scalar that is a malformed number (`.e3`, `1e`, `1.2.3e4`) is refused rather than read as text or left to
  fail later without a file or line.

Every refusal is a :class:`StrictYAMLError` (a `yaml.YAMLError`, so callers that name the file already catch it)
whose message is one line naming the key and the line.
"""

from __future__ import annotations

import re

import yaml

MAX_ALIAS_EXPANSION = 10_000
"""Most nodes (scalars, lists, mappings) that aliases may add to a document, expanded."""
YAML12_FLOAT = re.compile(r"^[-+]?(?:\.[0-9][0-9_]*|[0-9][0-9_]*(?:\.[0-9_]*)?)[eE][-+]?[0-9]+$")
MALFORMED_NUMBER = re.compile(r"^[-+]?(?=[0-9_.]*[0-9.])[0-9_.]*[eE][-+]?[0-9_]*$")
"""A mantissa of digits and dots, an `e`: what was meant as a number. Tried after every number resolver."""
NUMBER_STARTS = list("-+0123456789.")
MALFORMED_TAG = "tag:hf_icl,2026:malformed-number"


class StrictYAMLError(yaml.YAMLError):
    """A duplicate key, an alias expanding too far, or a malformed number; the message names the key and the line."""


class StrictLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` (no arbitrary objects) with the checks of this module."""

    def get_single_node(self):
        self.root = super().get_single_node()
        if self.root is not None:
            check_alias_expansion(self.root)
        return self.root

    def construct_mapping(self, node, deep=False):
        first_line: dict = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # a merge may replace keys: that is what it is for
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                seen = first_line.get(key)
            except TypeError:  # an unhashable key: SafeLoader's own error says so
                break
            if seen is not None:
                where = key_path(self.root, key_node) or str(key)
                raise StrictYAMLError(f"key {where!r} is given twice, at lines {seen} and {line}; give it once")
            first_line[key] = line
        return super().construct_mapping(node, deep=deep)

    def construct_malformed_number(self, node):
        where = key_path(self.root, node)
        raise StrictYAMLError(
            f"{f'key {where!r}: ' if where else ''}{node.value!r} at line {node.start_mark.line + 1} is not a "
            "number (expected e.g. 1e-3, 0.5e3 or 1000; quote it to mean text)"
        )


def key_path(root, target) -> str | None:
    """Where `target` sits under `root`, as `grid.lr[1]` (a key: the key itself), or `None` at the top."""

    def search(node, path: str) -> str | None:
        if node is target:
            return path
        pairs = []
        if isinstance(node, yaml.MappingNode):
            pairs = [(f"{path}.{k.value}".lstrip(".") if isinstance(k, yaml.ScalarNode) else path, k, v)
                     for k, v in node.value]  # fmt: skip
        elif isinstance(node, yaml.SequenceNode):
            pairs = [(f"{path}[{i}]", None, v) for i, v in enumerate(node.value)]
        for child_path, key_node, value_node in pairs:
            if key_node is target:
                return child_path
            found = search(value_node, child_path)
            if found is not None:
                return found
        return None

    return search(root, "") or None


def check_alias_expansion(root) -> None:
    """Refuse a document whose aliases add more than :data:`MAX_ALIAS_EXPANSION` nodes once expanded.

    Raises:
        StrictYAMLError: naming the top-level key (and its line) whose value expands too far, or the document.
    """
    sizes: dict[int, int] = {}
    unique: set[int] = set()

    def size(node, path: frozenset = frozenset()) -> int:
        if id(node) in sizes:
            return sizes[id(node)]
        if id(node) in path:
            raise StrictYAMLError(f"an alias at line {node.start_mark.line + 1} refers to the value it is inside")
        unique.add(id(node))
        children = []
        if isinstance(node, yaml.SequenceNode):
            children = node.value
        elif isinstance(node, yaml.MappingNode):
            children = [child for pair in node.value for child in pair]
        total = 1 + sum(size(child, path | {id(node)}) for child in children)
        sizes[id(node)] = total
        return total

    pairs = root.value if isinstance(root, yaml.MappingNode) else [(None, root)]
    expanded = 1
    for key_node, value_node in pairs:
        expanded += size(value_node) + (key_node is not None)
        if expanded - len(unique) > MAX_ALIAS_EXPANSION:
            where = f"key {key_node.value!r} at line {key_node.start_mark.line + 1}" if key_node else "the document"
            raise StrictYAMLError(
                f"{where}: aliases expand to more than {MAX_ALIAS_EXPANSION:,} values (nested aliases, as in a "
                "'billion laughs' file); write the values out"
            )


StrictLoader.add_implicit_resolver("tag:yaml.org,2002:float", YAML12_FLOAT, NUMBER_STARTS)
StrictLoader.add_implicit_resolver(MALFORMED_TAG, MALFORMED_NUMBER, NUMBER_STARTS)
StrictLoader.add_constructor(MALFORMED_TAG, StrictLoader.construct_malformed_number)


def read_yaml(text: str, loader: type[yaml.SafeLoader] = StrictLoader):
    """The value of one YAML document, read with :class:`StrictLoader`.

    Args:
        text: the document.
        loader: a subclass of :class:`StrictLoader`.

    Raises:
        yaml.YAMLError: a syntax error, or (a :class:`StrictYAMLError`) a duplicate key, an alias bomb, a malformed
            number.
    """
    return yaml.load(text, Loader=loader)  # a SafeLoader: no arbitrary objects
