"""`hf_icl.run_locks` and the sweep's use of it: a point held by a live sweep process is skipped, a lock left by a
dead process of this host is taken over, one from another host is respected, and the lock is gone afterwards."""

import json
import os
import socket
import subprocess
import sys

from hf_icl import sweep
from hf_icl.run_locks import claimed, holder_is_gone


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def write_lock(path, host, pid):
    path.write_text(json.dumps({"host": host, "pid": pid}))


def test_a_lock_is_held_inside_the_block_and_removed_after(tmp_path):
    lock = tmp_path / "point.lock"
    with claimed(lock) as held:
        assert held
        assert json.loads(lock.read_text()) == {"host": socket.gethostname(), "pid": os.getpid()}
        with claimed(lock) as second:  # the holder (this process) is alive: a second claim fails
            assert not second
        assert lock.exists()  # the failed claim did not remove the holder's lock
    assert not lock.exists()


def test_a_dead_holder_on_this_host_is_taken_over(tmp_path):
    lock = tmp_path / "point.lock"
    write_lock(lock, socket.gethostname(), dead_pid())
    assert holder_is_gone(lock)
    with claimed(lock) as held:
        assert held
        assert json.loads(lock.read_text())["pid"] == os.getpid()  # rewritten by the new holder
    assert not lock.exists()


def test_a_holder_on_another_host_is_respected(tmp_path):
    lock = tmp_path / "point.lock"
    write_lock(lock, socket.gethostname() + "-elsewhere", dead_pid())
    assert not holder_is_gone(lock)
    with claimed(lock) as held:
        assert not held
    assert lock.exists()


def test_an_unreadable_lock_counts_as_held(tmp_path):
    lock = tmp_path / "point.lock"
    lock.write_text("")  # its holder is still writing it
    with claimed(lock) as held:
        assert not held


def test_the_sweep_skips_a_point_another_process_holds_and_trains_after_it_is_released(tmp_path, monkeypatch):
    spec = sweep.SweepSpec(output_root=str(tmp_path / "sweep"), base={"task": "regbench", "preset": "tiny"},
                           grid={"seed": [0]})  # fmt: skip
    (point,) = sweep.expand(spec)
    trained = []

    def fake_train(spec, point):
        assert (tmp_path / "sweep" / f"{point.name}.lock").exists()  # held while training
        trained.append(point.name)
        return {"name": point.name, "status": "trained", "returncode": 0, "seconds": 0}

    monkeypatch.setattr(sweep, "train_point", fake_train)
    (tmp_path / "sweep").mkdir()
    with claimed(tmp_path / "sweep" / f"{point.name}.lock"):  # another worker of this host holds it
        result = sweep.run_point(spec, point)
    assert result["returncode"] == 0 and result["status"].startswith("skipped: another sweep process")
    assert trained == []
    assert sweep.run_point(spec, point)["status"] == "trained"
    assert trained == [point.name] and not (tmp_path / "sweep" / f"{point.name}.lock").exists()
