"""`load_dataset` never returns stale rows (issue 55, item 3): `datasets` keys the cache of a local folder on the
card's `configs:` entries, not on the files, so every export writes each config's content fingerprint there; a
re-export with other options loads the new rows without `download_mode="force_redownload"`."""

from __future__ import annotations

import datasets
import yaml

from hf_icl.export import main as export_main

SMALL = ["--n-train", "10", "--n-test", "5", "--n-validation", "5", "--input-seq-len", "16", "--num-kv-pairs", "2"]


def export(folder, cache, vocab: int) -> None:
    argv = ["mqar", "--output", str(folder), "--replace-configs", "--cache-dir", str(cache / "build"), *SMALL]
    export_main([*argv, "--vocab-size", str(vocab)])


def highest_token(folder, cache) -> int:
    rows = datasets.load_dataset(str(folder), "mqar", cache_dir=str(cache / "load"))
    return max(max(map(ord, text)) for text in rows["train"]["text"]) - 0x4E00  # token i is chr(0x4E00 + i)


def fingerprint(folder) -> str:
    front = yaml.safe_load((folder / "README.md").read_text(encoding="utf-8").split("---\n")[1])
    (entry,) = [c for c in front["configs"] if c["config_name"] == "mqar"]
    return entry["description"]


def test_a_re_export_with_other_options_loads_the_new_rows(tmp_path):
    folder = tmp_path / "export"
    export(folder, tmp_path, 64)
    assert highest_token(folder, tmp_path) < 64
    first = fingerprint(folder)
    export(folder, tmp_path, 1024)
    assert fingerprint(folder) != first and fingerprint(folder).startswith("content fingerprint ")
    assert highest_token(folder, tmp_path) >= 64  # the new rows, from the same cache_dir, no download_mode
    export(folder, tmp_path, 64)
    assert fingerprint(folder) == first  # the same rows: the same fingerprint, so the first cache serves again
    assert highest_token(folder, tmp_path) < 64
