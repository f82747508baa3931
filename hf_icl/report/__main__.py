"""`python -m hf_icl.report RUN_DIRS... --output DIR [--collect RUNS_DIR] [--readme FILE]`: the reproduction report;
`python -m hf_icl.report docs/results --check` checks the committed one (`check.py`).

Gathers the metrics of every training run at or below RUN_DIRS (`<experiment>/<run>/metrics.json` as train.py writes
it, or `<experiment>/<run>_metrics.json`), rates each finding of the papers (`hf_icl/report/paper_numbers.yaml`) once
(reproduced, direction only, not reproduced, inconclusive, not run; scaled where the runs are smaller than the
paper's setting) and writes `DIR/REPORT.md`, one page per paper (`DIR/P1.md` ...), `DIR/runs.md`, the same pages as
HTML, and `DIR/report_figures/*.png`.

Every metrics file that is not read (not JSON, an evaluation's, or of the wrong shape) is named on stderr with the
reason. A report is never written from no runs, nor over a `REPORT.md` built from more runs than these arguments hold
(unless `--allow-fewer-runs`).

`--collect RUNS_DIR` first copies each run's metrics and `summary.md` (not its checkpoints) to
`RUNS_DIR/<experiment>/<run>/`, then reports on everything in RUNS_DIR: that is how runs made under the ignored
`outputs/` folder join the committed report. `--readme FILE` rewrites the findings table between the headline
markers of FILE. The papers' findings are rated for the repository's `docs/results`, with `--readme` or with
`--papers`; any other folder (one's own sweep) gets `REPORT.md` as a table of its settings, every test metric as mean
± sd over the seeds with n, and a figure with error bars:

    python -m hf_icl.report outputs/sweeps/regbench-ngram-heads --collect docs/results --output docs/results
    python -m hf_icl.report docs/results --output docs/results --readme README.md   # regenerate from the committed runs
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

from ..utils.validation import CommandLineParser, check_output_folder
from .build import HEADLINE_END, HEADLINE_START, WRITING, build_report
from .runs import find_runs, scan_runs


def collect(run_paths: list[str], destination: Path) -> int:
    """Copy every run's metrics (and a run folder's `summary.md`) to `destination/<experiment>/<run>/`; returns the
    number of runs."""
    records = find_runs(run_paths)
    for record in records:
        target = destination / record.experiment / record.name
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(record.file, target / "metrics.json")
        if record.file.name == "metrics.json" and (record.file.parent / "summary.md").is_file():
            shutil.copyfile(record.file.parent / "summary.md", target / "summary.md")
    return len(records)


def is_repository_results(path: str | Path) -> bool:
    """Whether `path` is this repository's committed `docs/results` (where the papers' findings are rated)."""
    return Path(path).resolve() == Path(__file__).resolve().parents[2] / "docs" / "results"


def runs_in_report(path: Path) -> int | None:
    """How many runs an existing REPORT.md was built from (its "N runs in M experiments" line), if it says."""
    if not path.is_file():
        return None
    found = re.search(r"^(\d+) runs in \d+ experiments", path.read_text(encoding="utf-8", errors="replace"), re.M)
    return int(found.group(1)) if found else None


def name_skipped(skipped: list[tuple[Path, str]], named: set | None = None) -> set:
    """Print `skipped <file>: <reason>` on stderr for every skipped metrics file not `named` before; returns them."""
    for file, reason in skipped:
        if file not in (named or set()):
            print(f"skipped {file}: {reason}", file=sys.stderr)
    return {file for file, _ in skipped}


def build_parser() -> CommandLineParser:
    parser = CommandLineParser(prog="python -m hf_icl.report", description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="run folders, or folders holding run folders at any depth")
    parser.add_argument(
        "--output", type=Path, help="folder for the report's pages and figures (required unless --check)"
    )
    parser.add_argument("--check", action="store_true",
                        help="write nothing: exit 1 naming each committed page, findings.json, README block or "
                             "README number (RUN_DIR/claims.yaml) the runs do not regenerate or back")  # fmt: skip
    parser.add_argument("--collect", type=Path, metavar="RUNS_DIR", help="copy the runs' metrics here first")
    parser.add_argument("--readme", type=Path, metavar="FILE", help="rewrite FILE's headline findings table")
    parser.add_argument("--papers", action="store_true",
                        help="rate the five papers' findings (the default only for the repository's docs/results "
                             "or with --readme); otherwise: the sweep's settings, mean ± sd over seeds")  # fmt: skip
    parser.add_argument("--allow-fewer-runs", action="store_true",
                        help="replace a report in --output that was built from more runs than this one")  # fmt: skip
    return parser


def main(argv: list[str] | None = None) -> dict:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.check:
        return run_check(parser, args)
    if args.output is None:
        parser.fail("argument --output: required (or pass --check)")
    for flag, folder in (("--output", args.output), ("--collect", args.collect)):
        if folder is not None:
            try:
                check_output_folder(folder, flag)
            except ValueError as err:
                parser.fail(err)
    if args.readme is not None:
        if not args.readme.is_file():
            parser.fail(f"argument --readme: {str(args.readme)!r} is not a file")
        text = args.readme.read_text(encoding="utf-8", errors="replace")
        if HEADLINE_START not in text or HEADLINE_END not in text:
            parser.fail(f"argument --readme: {str(args.readme)!r} has no {HEADLINE_START} ... {HEADLINE_END} block")
    missing = [path for path in args.runs if not Path(path).exists()]
    if missing:
        parser.fail(f"argument runs: {missing[0]}: no metrics.json here or below (it does not exist)")
    try:
        sources = [str(p) for p in args.runs]
        named = set()
        if args.collect:
            named = name_skipped(scan_runs(sources)[1])  # not copied
            print(f"collected {collect(sources, args.collect)} runs into {args.collect}")
            sources = [str(args.collect)]
        if (args.output / WRITING).is_file():
            print(f"{args.output}: the previous report was interrupted while its pages were put in place (some may "
                  "come from an older run); this run rewrites them all", file=sys.stderr)  # fmt: skip
        before = runs_in_report(args.output / "REPORT.md")
        records, skipped = scan_runs(sources)
        name_skipped(skipped, named)
        found = len(records)
        if not found:
            parser.fail(f"argument runs: no training run to report in {', '.join(sources)}: every metrics file found "
                        f"was skipped ({len(skipped)}, listed above); nothing was written")  # fmt: skip
        if before is not None and found < before and not args.allow_fewer_runs:
            parser.fail(f"argument --output: {args.output / 'REPORT.md'} was built from {before} runs and these "
                        f"arguments hold {found}: add --collect, or pass --allow-fewer-runs to replace it")  # fmt: skip
        command = f"python -m hf_icl.report {' '.join(sources)} --output {args.output}"
        papers = args.papers or args.readme is not None or any(map(is_repository_results, sources))
        counts = build_report(sources, args.output, command, readme=args.readme, papers=papers)
    except (FileNotFoundError, ValueError) as err:
        parser.fail(err)
    print(f"wrote {args.output / 'REPORT.md'}, the paper pages and their HTML from {counts['runs']} runs")
    return counts


def run_check(parser: CommandLineParser, args) -> dict:
    """`--check`: the one report folder RUN_DIR against its regeneration, and the README's numbers against
    RUN_DIR/claims.yaml (the README: --readme, else ./README.md where it has the headline block)."""
    from .check import check

    if len(args.runs) != 1 or not Path(args.runs[0]).is_dir():
        parser.fail("argument runs: --check takes one report folder (the committed docs/results)")
    if args.output is not None or args.collect is not None:
        parser.fail("argument --check: writes nothing; drop --output and --collect")
    folder = Path(args.runs[0])
    readme = args.readme
    if readme is None and Path("README.md").is_file() and HEADLINE_START in Path("README.md").read_text("utf-8"):
        readme = Path("README.md")
    command = f"python -m hf_icl.report {args.runs[0]} --output {args.runs[0]}"
    try:
        problems = check(folder, readme, command)
    except (FileNotFoundError, ValueError) as err:
        parser.fail(err)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"checked {folder}: every page, findings.json" + (f", {readme}'s block and numbers" if readme else "")
          + " match the committed runs")  # fmt: skip
    return {"problems": 0}


if __name__ == "__main__":
    main()
