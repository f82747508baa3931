"""`metrics.json["code"]`: the versions and the git commit of the code that trained a run (training/provenance.py),
checked against git itself on a throwaway repository, and None where git cannot say; `metrics.json["machine"]`, the
host, from a fabricated /proc/cpuinfo."""

import subprocess

import pytest

from hf_icl.training import provenance


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repository(tmp_path, monkeypatch):
    """A git repository with one commit, standing in for the package's folder."""
    git(tmp_path, "init", "-q")
    (tmp_path / "module.py").write_text("x = 1\n")
    git(tmp_path, "add", "module.py")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    monkeypatch.setattr(provenance, "PACKAGE_DIR", tmp_path)
    return tmp_path


def test_commit_and_clean_sources(repository):
    code = provenance.code_provenance()
    assert code["git_commit"] == git(repository, "rev-parse", "HEAD") and len(code["git_commit"]) == 40
    assert code["git_dirty"] is False
    assert code["hf_icl"] and code["torch"]


def test_uncommitted_change_marks_the_run_dirty(repository):
    (repository / "module.py").write_text("x = 2\n")
    assert provenance.code_provenance()["git_dirty"] is True


def test_outside_a_checkout_the_commit_is_none(tmp_path, monkeypatch):
    monkeypatch.setattr(provenance, "PACKAGE_DIR", tmp_path)  # a plain folder: not a checkout
    code = provenance.code_provenance()
    assert code["git_commit"] is None and code["git_dirty"] is None


def test_without_git_the_commit_is_none(repository, monkeypatch):
    def missing_git(*args, **kwargs):
        raise FileNotFoundError("git")

    monkeypatch.setattr(provenance.subprocess, "run", missing_git)  # a checkout, but no git program to ask
    code = provenance.code_provenance()
    assert code["git_commit"] is None and code["git_dirty"] is None


def test_segments_of_a_fresh_a_resumed_and_an_old_checkpoint_run():
    one, two = ({"hf_icl": "0.1", "torch": "2", "git_commit": sha * 40, "git_dirty": False} for sha in ("a", "b"))
    fresh = provenance.code_segments(None, 0, one)
    assert fresh == [{"from_step": 0, **one}]
    assert provenance.code_segments(fresh, 500, two) == [{"from_step": 0, **one}, {"from_step": 500, **two}]
    # a checkpoint written before segments were recorded: the steps before it trained on unknown code
    assert provenance.code_segments(None, 500, two) == [
        {"from_step": 0, **provenance.NOT_RECORDED},
        {"from_step": 500, **two},
    ]


def test_the_code_is_read_when_the_run_starts_not_when_it_ends(tmp_path, monkeypatch):
    """A checkout that moves on while a run trains does not rename the code that trained it."""
    from hf_icl.training import loop
    from hf_icl.training.arguments import parse_args

    checkout = {"git_commit": "at the start"}
    monkeypatch.setattr(loop, "code_provenance", lambda: dict(checkout))
    train_steps = loop.run_steps

    def steps_then_new_commit(*args, **kwargs):
        train_steps(*args, **kwargs)
        checkout["git_commit"] = "at the end"  # committed while the run trained

    monkeypatch.setattr(loop, "run_steps", steps_then_new_commit)
    args = parse_args(
        ["--architecture", "transformer", "--preset", "tiny", "--report-to", "none", "--threads", "1",
         "--n-train", "40", "--task-option", "n_test=8", "--task-option", "n_validation=8",
         "--max-steps", "2", "--warmup-steps", "1", "--output-dir", str(tmp_path / "run")]
    )  # fmt: skip
    metrics = loop.train(args)
    assert metrics["code"] == {"git_commit": "at the start"}
    assert "code_segments" not in metrics  # one process trained it
    assert metrics["machine"] == provenance.machine_facts()  # the host of the run's CPU time


def test_machine_facts_read_the_model_and_the_vector_extensions(tmp_path):
    """The CPU model and AVX-512 / AMX from a fabricated /proc/cpuinfo (the first processor's lines); an unreadable
    file gives None and False rather than an error."""
    cpuinfo = tmp_path / "cpuinfo"
    processor = (
        "processor\t: {n}\ncpu family\t: 6\nmodel name\t: Intel(R) Xeon(R) Platinum 8488C\n"
        "flags\t\t: fpu sse2 avx2 {extra}\n\n"
    )
    cpuinfo.write_text(processor.format(n=0, extra="avx512f amx_tile") + processor.format(n=1, extra=""))
    facts = provenance.machine_facts(cpuinfo)
    assert facts["cpu_model"] == "Intel(R) Xeon(R) Platinum 8488C"
    assert facts["avx512"] is True and facts["amx"] is True and facts["cpu_count"] >= 1
    assert facts["cpu_family"] == 6
    cpuinfo.write_text("processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 avx2 avx512_bf16_lookalike\n")
    assert provenance.machine_facts(cpuinfo) | {"cpu_count": 0} == {
        "cpu_model": "AMD EPYC", "cpu_family": None, "cpu_count": 0, "avx512": False, "amx": False}  # fmt: skip
    missing = provenance.machine_facts(tmp_path / "absent")
    assert missing["cpu_model"] is None and missing["cpu_family"] is None
    assert missing["avx512"] is False and missing["amx"] is False


def test_the_runs_table_names_each_runs_host():
    """The runs page's host cell: the recorded CPU model with its family and extensions, "–" for runs from before."""
    from hf_icl.report.build import host_label

    assert host_label({"cpu_model": "AMD EPYC", "avx512": False, "amx": False}) == "AMD EPYC"
    assert host_label({"cpu_model": "Intel Xeon", "avx512": True, "amx": True}) == "Intel Xeon (AVX-512, AMX)"
    zen5 = {"cpu_model": "AMD EPYC", "cpu_family": 26, "avx512": True, "amx": False}
    assert host_label(zen5) == "AMD EPYC (family 26, AVX-512)"  # one model name, two host generations told apart
    assert host_label(None) == "–" and host_label({"cpu_model": None}) == "–"
