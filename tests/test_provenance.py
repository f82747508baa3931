"""`metrics.json["code"]`: the versions and the git commit of the code that trained a run (training/provenance.py),
checked against git itself on a throwaway repository, and None where git cannot say."""

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
