"""`hf_icl.utils.run_locks` and the sweep's use of it: a point held by a live sweep process is skipped, a lock left by a
dead process of this host is taken over (also when its PID was reused or the host rebooted since), one from another
host is respected, and the lock is gone afterwards."""

import json
import os
import socket
import subprocess
import sys

import pytest

from hf_icl import sweep
from hf_icl.utils.run_locks import boot_id, claimed, holder_is_gone, holder_record, process_start_time


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def write_lock(path, host, pid, **fields):
    path.write_text(json.dumps({"host": host, "pid": pid, **fields}))


needs_proc = pytest.mark.skipif(
    boot_id() is None or process_start_time(os.getpid()) is None, reason="needs Linux /proc"
)


def test_a_lock_is_held_inside_the_block_and_removed_after(tmp_path):
    lock = tmp_path / "point.lock"
    with claimed(lock) as held:
        assert held
        assert json.loads(lock.read_text()) == holder_record()
        assert holder_record()["host"] == socket.gethostname() and holder_record()["pid"] == os.getpid()
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


@needs_proc
def test_a_live_holder_is_respected_and_a_reused_pid_or_an_earlier_boot_is_not(tmp_path):
    lock = tmp_path / "point.lock"
    me = holder_record()
    write_lock(lock, **me)
    assert not holder_is_gone(lock)
    write_lock(lock, **{**me, "boot_id": None, "start_time": None})  # an older lock without the fields: PID only
    assert not holder_is_gone(lock)
    write_lock(lock, **{**me, "start_time": me["start_time"] - 1})  # this PID now runs another process
    assert holder_is_gone(lock)
    write_lock(lock, **{**me, "boot_id": "an-earlier-boot"})  # the host rebooted since; the PID may be anyone's
    assert holder_is_gone(lock)
    with claimed(lock) as held:
        assert held and json.loads(lock.read_text()) == me


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
