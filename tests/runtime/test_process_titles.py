"""What ps and top show of supervised tasks (_warm_child.set_title): real processes, read in /proc as ps reads them.

A warm-started task is no anonymous `python -c <program>` but `tfdist <cluster>/<task>`, its supervisor
`tfdist-supervise <cluster>/<task>`; top's name (comm, 15 bytes) ends with the task's name.
"""

import contextlib
import os
import subprocess
import sys

import pytest

from processes import wait_until

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _supervisor, _task_folder, _warm_start

# Runs until the file named by its argument exists.
SCRIPT = """
import os, sys, time
while not os.path.exists(sys.argv[1]):
    time.sleep(0.05)
"""


def shown(pid):
    """(name, command line) of pid as ps shows them (its COMMAND columns)."""
    out = subprocess.run(["ps", "-o", "comm=", "-o", "args=", "-p", str(pid)], capture_output=True, text=True,
                         check=True).stdout
    with open("/proc/%d/comm" % pid) as handle:
        comm = handle.read().rstrip("\n")
    return comm, out[len(comm):].strip()


@pytest.fixture
def job(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    task_dir = str(tmp_path / "tasks" / "worker-1")
    stop_file = str(tmp_path / "stop")
    yield task_dir, str(tmp_path / "train.py"), stop_file
    _warm_start.stop_warm(task_dir)
    _supervisor.stop(task_dir)


def test_a_warm_started_task_and_its_supervisor_show_their_names(job):
    task_dir, script, stop_file = job
    warm = _supervisor.warm(task_dir, sys.executable, modules=["decimal"])
    # Named once its Python has started.
    assert wait_until(lambda: shown(warm["pid"]) == ("tfdist warm", "tfdist warm decimal")), shown(warm["pid"])
    # A supervisor is a fork of the process that started it: its title is cut to that process's arguments' room.
    supervisor = shown(warm["supervisor_pid"])[1]
    assert supervisor.startswith("tfdist-supervise warm /") and ("tfdist-supervise warm " + task_dir).startswith(
        supervisor), supervisor

    started = _supervisor.start(task_dir, "demo/worker-1", [sys.executable, script, stop_file])

    assert started["pid"] == warm["pid"]  # the warm Python runs it
    assert shown(started["pid"]) == ("demo/worker-1", "tfdist demo/worker-1")
    assert shown(started["supervisor_pid"]) == ("tfdist-supervis", "tfdist-supervise demo/worker-1")
    # The program sees its own arguments as ever.
    open(stop_file, "w").close()
    assert wait_until(lambda: not _task_folder.task_status(task_dir)["running"], timeout=30)
    assert _task_folder.task_status(task_dir)["returncode"] == 0


def test_a_task_forked_by_a_warm_host_shows_its_name(job, tmp_path):
    task_dir, script, stop_file = job
    host_pid = _warm_start.warm_host(str(tmp_path / "warm-host.sock"), sys.executable, 1, modules=["decimal"])
    try:
        assert wait_until(lambda: shown(host_pid)[1] == "tfdist warm host decimal", timeout=30)
        _supervisor.warm(task_dir, sys.executable, modules=["decimal"], host=str(tmp_path / "warm-host.sock"))
        started = _supervisor.start(task_dir, "demo/worker-1", [sys.executable, script, stop_file])

        # The task runs in a child of its group's leader (see _warm_start): the child has the task's name.
        leader = started["pid"]
        assert shown(leader)[0] == "tfdist leader"
        task = ("demo/worker-1", "tfdist demo/worker-1")
        assert wait_until(lambda: [shown(pid) for pid in children(leader)] == [task])
    finally:
        open(stop_file, "w").close()
        with contextlib.suppress(FileNotFoundError):  # a warm host whose socket is gone ends
            os.remove(str(tmp_path / "warm-host.sock"))


def children(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as handle:
        return [int(child) for child in handle.read().split()]
