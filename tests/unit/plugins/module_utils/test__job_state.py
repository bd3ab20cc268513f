"""A snapshot of a job (module_utils/_job_state.py): what the watch acts on."""

import os
import signal

import pytest

from ansible_collections.tfdist.cluster.plugins.module_utils import _job_state
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _supervisor, _task_folder
from processes import wait_until


@pytest.fixture
def chief(tmp_path):
    path = str(tmp_path / "tasks" / "chief-0")
    _supervisor.start(path, "chief-0", ["sleep", "60"])
    yield {"name": "chief-0", "dir": path}
    _supervisor.stop(path, timeout=5)


def test_a_server_silenced_by_the_leaders_end_is_seen_with_that_end(chief, monkeypatch):
    def leader_ends_then_the_server_stops(address, timeout):
        # What happens between a look's reads when a probe takes seconds (a lost host's): the leader ends, and
        # the server, told so, stops.
        _supervisor.stop(chief["dir"], timeout=5)
        return False

    monkeypatch.setattr(_job_state, "answers", leader_ends_then_the_server_stops)
    seen = _job_state.snapshot([chief], probe=["10.0.0.9:2222"])

    # The silent server and the leader's end in the same look: the watch counts no lost server.
    assert seen["unreachable"] == ["10.0.0.9:2222"]
    assert seen["tasks"][0]["running"] is False and seen["failed_tasks"] == []


def test_a_wait_answers_at_once_when_a_task_ends(chief):
    assert _job_state.watch([chief], wait=0.5, wait_interval=0.1)["tasks"][0]["running"] is True
    _supervisor.stop(chief["dir"], timeout=5)
    assert wait_until(lambda: not _task_folder.task_status(chief["dir"])["running"])
    seen = _job_state.watch([chief], wait=30, wait_interval=0.1)
    assert seen["waited"] < 1 and seen["tasks"][0]["reason"] == "stopped"


def test_an_answer_says_which_running_tasks_the_kernel_holds(chief, tmp_path):
    worker = {"name": "worker-0", "dir": str(tmp_path / "tasks" / "worker-0")}
    _supervisor.start(worker["dir"], "worker-0", ["sleep", "60"])
    try:
        pid = _task_folder.task_status(worker["dir"])["pid"]
        os.killpg(pid, signal.SIGSTOP)
        # The kernel stops the group when the signal is delivered, not when killpg returns (seen on a loaded machine).
        assert wait_until(lambda: _task_folder.process_state(pid) == _task_folder.PROCESSES_STOPPED)
        tasks = {t["name"]: t for t in _job_state.watch([chief, worker])["tasks"]}
        assert (tasks["chief-0"]["process"], tasks["worker-0"]["process"]) == ("running", "stopped")
        os.killpg(pid, signal.SIGCONT)
    finally:
        _supervisor.stop(worker["dir"], timeout=5)
    # A task that is not running is described by its end, not by its processes.
    assert "process" not in _job_state.watch([worker])["tasks"][0]
