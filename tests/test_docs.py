"""The README is a front page and the docs a site whose numbers are traceable: at most 300 README lines, no internal
tracker numbers, every number in a results table of the docs found in a committed results file, the benchmark page
equal to its rendering from the committed benchmark files, and `mkdocs build --strict` clean."""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RESULTS = DOCS / "results"
# Pages written by generators, each checked by regenerating it (tests/test_report.py, the benchmark test below).
GENERATED = {"benchmarks.md", "results/REPORT.md", "results/runs.md", *(f"results/P{i}.md" for i in range(1, 6))}
# Pages whose text belongs to work in progress elsewhere (the code map; the P3/P5/P2-P4 experiment notes): they are
# built by mkdocs --strict like every page, but their wording is not checked here.
ELSEWHERE = ("architecture.md", "results/slowfast/", "results/regression/", "results/length_generalization/")
# Tables that a committed script writes from committed runs: their derived cells (non-embedding counts in
# parentheses, percentage changes, means ± sd) are computed by that script, so only their other numbers are looked up.
SCRIPT_WRITTEN = {"results/ngram_heads_text/table.md": "experiments/ngram_heads_text/summarize.py",
                  "results/recipe/comparison_1200.md": "experiments/regbench_recipe_comparison.py",
                  "results/recipe/comparison_1200_ratio_warmup.md": "experiments/regbench_recipe_comparison.py",
                  "results/recipe/gpt2/comparison_1200.md": "experiments/regbench_recipe_comparison.py"}  # fmt: skip
NOT_CPU_BENCHMARKS = ("gpu_check",)
"""The GPU check writes its own JSON (device facts, time-boxed steps), committed when a GPU was lent; its CPU side
is `tests/test_gpu_check.py`."""
TRACKER = re.compile(r"\bissues? #?\d+|(?<![\w&])#\d{1,4}\b", re.IGNORECASE)
NUMBER = re.compile(r"(?<![\w.])[−-]?\d[\d,]*(?:\.\d+)?(?:e[−-]?\d+)?(?![\w.])")


def own_pages() -> list[Path]:
    pages = []
    for page in sorted(DOCS.rglob("*.md")):
        name = page.relative_to(DOCS).as_posix()
        if name not in GENERATED and not name.startswith(ELSEWHERE):
            pages.append(page)
    return pages


def test_readme_is_a_front_page():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300, "README.md is longer than 300 lines: move detail to docs/"
    for paper in ("2401.12973", "2305.03796", "2402.01032", "2402.04248", "Learning Fast and Slow"):
        assert paper in text, f"the README cites the five papers ({paper} missing)"
    for link in re.findall(r"\]\(((?:docs/)[^)#]+)", text):
        assert (ROOT / link).exists(), f"README links to {link}, which does not exist"


def test_no_internal_tracker_numbers_in_the_readme_or_the_docs():
    for page in [ROOT / "README.md", *own_pages(), *(DOCS / name for name in GENERATED)]:
        found = TRACKER.findall(page.read_text(encoding="utf-8"))
        assert not found, f"{page.relative_to(ROOT)} cites tracker numbers {found}, which mean nothing to a reader"


def committed_numbers() -> set[float]:
    """Every number in a committed results file (JSON under docs/results, keys included) and every published number
    in the report's paper_numbers.yaml."""
    found: set[float] = set()

    def collect(node):
        if isinstance(node, dict):
            for key, value in node.items():
                collect(key)
                collect(value)
        elif isinstance(node, list):
            for value in node:
                collect(value)
        elif isinstance(node, bool):
            return
        elif isinstance(node, (int, float)):
            found.add(float(node))
        elif isinstance(node, str):
            for token in NUMBER.findall(node):
                value = parse(token)
                if value is not None:
                    found.add(value)

    for path in sorted(RESULTS.rglob("*.json")):
        collect(json.loads(path.read_text(encoding="utf-8")))
    collect(yaml.safe_load((ROOT / "hf_icl" / "report" / "paper_numbers.yaml").read_text(encoding="utf-8")))
    return found


def parse(token: str) -> float | None:
    try:
        return float(token.replace("−", "-").replace(",", ""))
    except ValueError:
        return None


class CommittedNumbers:
    """The committed numbers, and their roundings to each number of decimals a table prints (each set built once, so a
    token's check is a lookup instead of a pass over every committed number).

    Args:
        numbers: every committed number (`committed_numbers()`).
    """

    def __init__(self, numbers: set[float]):
        self.numbers = numbers
        self._rounded: dict[int, tuple[set[float], set[float]]] = {}

    def rounded(self, decimals: int) -> tuple[set[float], set[float]]:
        """({round(n, decimals)}, {round(|n|, decimals)}) over the committed numbers n."""
        if decimals not in self._rounded:
            self._rounded[decimals] = ({round(n, decimals) for n in self.numbers},
                                       {round(abs(n), decimals) for n in self.numbers})  # fmt: skip
        return self._rounded[decimals]


def traced(token: str, committed: CommittedNumbers) -> bool:
    """`token` as printed (its decimals) equals some committed number rounded the same way (its magnitude, where a
    table prints a difference's size)."""
    value = parse(token)
    if value is None:
        return True
    decimals = len(token.split(".")[1].split("e")[0]) if "." in token else 0
    if "e" in token.lower():
        return any(abs(n - value) <= abs(value) * 0.01 for n in committed.numbers)
    signed, magnitudes = committed.rounded(decimals)
    return round(value, decimals) in signed or abs(value) in magnitudes


def table_numbers(text: str, derived: bool = False) -> list[str]:
    """Numbers in the data rows of every Markdown table, code spans removed (file names, flags, commands); with
    `derived`, also without parenthesised and percentage cells (what a summarising script computes)."""
    out = []
    for block in re.findall(r"(?:^\|.*\|[ \t]*\n)+", text, flags=re.M):
        rows = block.strip().splitlines()[2:]  # header and separator describe, rows report
        for row in rows:
            row = re.sub(r"`[^`]*`", "", row)
            if derived:  # means ± sd, paired differences, ratios in parentheses and percentages are computed
                row = "|".join(cell for cell in row.split("|") if "±" not in cell)
                row = re.sub(r"\([^)]*\)|[−-]?\d[\d.]*%", "", row)
            out += NUMBER.findall(row)
    return out


def test_every_number_in_a_docs_results_table_is_in_a_committed_results_file():
    numbers = CommittedNumbers(committed_numbers())
    checked = 0
    for page in [ROOT / "README.md", *own_pages()]:
        text = page.read_text(encoding="utf-8")
        if page.name == "README.md":  # its result table is the report's (regenerated in tests/test_report.py)
            continue
        name = page.relative_to(DOCS).as_posix()
        if name in SCRIPT_WRITTEN:
            assert (ROOT / SCRIPT_WRITTEN[name]).is_file()
        for token in table_numbers(text, derived=name in SCRIPT_WRITTEN):
            checked += 1
            assert traced(token, numbers), f"{page.relative_to(ROOT)}: {token} is in no committed results file"
    assert checked > 50


def test_the_traceability_check_can_fail():
    numbers = CommittedNumbers({0.9237, 1241.3, -0.51})
    assert traced("-0.51", numbers) and traced("0.51", numbers) and not traced("-0.52", numbers)
    assert traced("0.9237", numbers) and traced("1,241", numbers) and traced("0.924", numbers)
    assert not traced("0.9366", numbers) and not traced("622", numbers)


def test_the_benchmark_page_is_rendered_from_the_committed_benchmark_files(tmp_path):
    spec = importlib.util.spec_from_file_location("render_docs", ROOT / "benchmarks" / "render_docs.py")
    render = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(render)
    page = (DOCS / "benchmarks.md").read_text(encoding="utf-8")
    stale = "docs/benchmarks.md is stale: python benchmarks/render_docs.py"
    assert page == render.render(RESULTS / "benchmarks"), stale
    files = sorted((RESULTS / "benchmarks").glob("*.json"))
    scripts = {p.stem for p in (ROOT / "benchmarks").glob("[a-z]*.py")} - {"common", "render_docs", *NOT_CPU_BENCHMARKS}
    assert {p.stem for p in files} == scripts, "every benchmark script has a committed result file, and no other"
    for path in files:
        record = json.loads(path.read_text(encoding="utf-8"))
        assert record["tables"] and record["command"].endswith(f"--output docs/results/benchmarks/{path.name}")
        assert {"cpu_model", "cpu_cores", "torch_threads", "torch"} <= set(record["machine"])
        assert set(record["load_average_1min"]) == {"start", "end"} and isinstance(record["idle"], bool)


def test_every_benchmark_script_writes_json_with_the_machine_facts():
    skip = ("common", "render_docs", *NOT_CPU_BENCHMARKS)
    scripts = sorted(p for p in (ROOT / "benchmarks").glob("[a-z]*.py") if p.stem not in skip)
    assert len(scripts) >= 12
    for script in scripts:
        text = script.read_text(encoding="utf-8")
        assert "add_output_argument(parser)" in text and "run_recorded(main)" in text, f"{script.name}: no --output"


def test_mkdocs_builds_the_docs_strictly(tmp_path):
    if shutil.which("mkdocs") is None and importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]' or '.[dev]')")
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "site" / "results" / "P1" / "index.html").is_file()


def test_every_test_the_reliability_page_cites_exists():
    """docs/reliability.md lists each promise with the test that checks it: a renamed or removed test must not leave
    a promise citing nothing."""
    cited = set(re.findall(r"\b(test_[a-z0-9_]+)\b", (DOCS / "reliability.md").read_text(encoding="utf-8")))
    defined = set()
    for path in (ROOT / "tests").glob("test_*.py"):
        defined.add(path.stem)  # a file cited as tests/test_x.py
        defined |= set(re.findall(r"^def (test_[a-z0-9_]+)\(", path.read_text(encoding="utf-8"), re.MULTILINE))
    assert cited and not sorted(cited - defined), sorted(cited - defined)
