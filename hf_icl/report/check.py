"""`python -m hf_icl.report DIR --check`: the committed report and the front page's numbers against the committed runs.

Two checks, each failure one line naming the file and the number:

1. **Regeneration.** The report is rebuilt from the runs under DIR into a temporary folder; every page (`*.md`,
   `*.html`) and `findings.json` must equal the committed one, and the README's headline block the regenerated
   block.
2. **Prose numbers.** Every number in the README's prose (a decimal like `0.9453`, or a grouped integer like
   `1,600`; outside code, links and the generated block) must be cited in `DIR/claims.yaml` with the committed file
   it comes from, and that file's value must round to it:

       README.md:
         - text: "0.9453"                 # as printed
           source: quickstart/run/metrics.json   # relative to DIR
           path: test.model.accuracy      # a JSON path (an integer part indexes a list) ...
         - text: "284"
           source: quickstart/command_time.txt
           pattern: 'wall (\\d+\\.\\d+) s'  # ... or a regular expression's first group, in a text file
           scale: 100                     # optional: the file's value times this (fractions printed as percent)
         - text: "100,096"
           source: parameters.md
           contains: true                 # ... or the text itself, in a committed table or text output

   A changed or invented number fails: either it is missing from the table, or its source no longer rounds to it.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import yaml

from .build import HEADLINE_END, HEADLINE_START, WRITING, build_report
from .runs import walk

CLAIMS = "claims.yaml"
NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+)(?![\w])")
"""A decimal (0.9453, 12.2) or a grouped integer (1,600): what the prose check reads."""


def check(folder: Path, readme: Path | None, command: str) -> list[str]:
    """Every mismatch, one line each (empty: the committed files hold)."""
    problems = regeneration_problems(folder, readme, command)
    if readme is not None:
        problems += prose_problems(readme, folder)
    return problems


def regeneration_problems(folder: Path, readme: Path | None, command: str) -> list[str]:
    problems = []
    if (folder / WRITING).is_file():
        problems.append(f"{folder / WRITING}: a report was interrupted while its pages were put in place; rerun it")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report"
        fresh_readme = None
        if readme is not None:
            fresh_readme = Path(tmp) / readme.name
            fresh_readme.write_text(readme.read_text(encoding="utf-8"), encoding="utf-8")
        build_report([folder], out, command, readme=fresh_readme, place=folder, readme_place=readme, draw=False)
        for page in sorted(out.glob("*.md")) + sorted(out.glob("*.html")) + [out / "findings.json"]:
            committed = folder / page.name
            if not committed.is_file():
                problems.append(f"{committed}: missing; the report regenerates it")
            elif committed.read_text(encoding="utf-8") != page.read_text(encoding="utf-8"):
                problems.append(f"{committed}: {first_difference(committed, page)}")
        if readme is not None and _block(readme) != _block(fresh_readme):
            problems.append(f"{readme}: the headline block differs from its regeneration "
                            f"({first_difference(readme, fresh_readme)})")  # fmt: skip
    return problems


def first_difference(committed: Path, fresh: Path) -> str:
    """`line N: 'committed' != 'regenerated'` for the first differing line."""
    old, new = committed.read_text(encoding="utf-8").splitlines(), fresh.read_text(encoding="utf-8").splitlines()
    for number, (a, b) in enumerate(zip(old, new), 1):
        if a != b:
            return f"line {number} differs from its regeneration: {_short(a)!r} != {_short(b)!r}"
    return f"{len(old)} lines against {len(new)} regenerated"


def _short(text: str, width: int = 100) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _block(readme: Path) -> str:
    text = readme.read_text(encoding="utf-8")
    return text.split(HEADLINE_START, 1)[-1].split(HEADLINE_END, 1)[0]


def prose(text: str) -> list[tuple[int, str]]:
    """(line number, text) of the prose lines: fenced code, the generated block, inline code and link targets
    removed."""
    lines, fenced, generated = [], False, False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if HEADLINE_START in line:
            generated = True
        if HEADLINE_END in line:
            generated = False
            continue
        if fenced or generated:
            continue
        line = re.sub(r"`[^`]*`", " ", line)  # inline code
        line = re.sub(r"\]\([^)]*\)", "]", line)  # link targets
        line = re.sub(r"arXiv:\d+\.\d+|§\s*[\d.]+|\b[A-Z]+-\d+\.\d+", " ", line)  # identifiers, sections, licences
        lines.append((number, line))
    return lines


def prose_problems(readme: Path, folder: Path) -> list[str]:
    claims_file = folder / CLAIMS
    claims = yaml.safe_load(claims_file.read_text(encoding="utf-8")) if claims_file.is_file() else {}
    mine = {str(c["text"]): c for c in (claims or {}).get(readme.name, [])}
    problems = []
    for number, line in prose(readme.read_text(encoding="utf-8")):
        for token in NUMBER.findall(line):
            if token not in mine:
                problems.append(f"{readme}:{number}: {token} is cited in no committed file ({claims_file} has no "
                                f"entry for it)")  # fmt: skip
    for text, claim in mine.items():
        why = claim_problem(text, claim, folder)
        if why:
            problems.append(f"{claims_file}: {readme.name} {text}: {why}")
    return problems


def claim_problem(text: str, claim: dict, folder: Path) -> str | None:
    """Why `claim`'s source does not back `text`, or `None`."""
    source = folder / claim["source"]
    if not source.is_file():
        return f"its source {source} does not exist"
    raw = source.read_text(encoding="utf-8")
    if claim.get("contains"):
        found = re.search(rf"(?<![\w.,]){re.escape(text)}(?![\w]|[.,]\d)", raw)
        return None if found else f"{source} does not contain it"
    if "path" in claim:
        value = walk(json.loads(raw), claim["path"])
    else:
        found = re.search(claim["pattern"], raw)
        value = found.group(1) if found else None
    try:
        value = float(str(value).replace(",", "")) * claim.get("scale", 1)
    except (TypeError, ValueError):
        return f"{source} has no number at {claim.get('path') or claim.get('pattern')!r} (found {value!r})"
    if not rounds_to(value, text):
        return f"{source} holds {value:g} at {claim.get('path') or claim.get('pattern')!r}, which does not round to it"
    return None


def rounds_to(value: float, text: str) -> bool:
    """Whether `value` printed with `text`'s decimals is `text` (1,600 and 1600 alike)."""
    plain = text.replace(",", "")
    decimals = len(plain.split(".")[1]) if "." in plain else 0
    return abs(value - float(plain)) <= 10 ** (-decimals) / 2 + 1e-12
