"""tfdist.cluster.training_status against real supervised processes and real files."""

import json
import os
import signal
import socket
import time

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _idle_guard, _supervisor
from ansible_collections.tfdist.cluster.plugins.modules import training_status


@pytest.fixture
def job(tmp_path):
    """A job directory; every task started in it is stopped after the test."""
    work = tmp_path / "job"
    (work / "tasks").mkdir(parents=True)

    def start(name, *command, **options):
        task_dir = str(work / "tasks" / name)
        _supervisor.start(task_dir, name, list(command), **options)
        return {"name": name, "dir": task_dir}

    start.work_dir = str(work)
    yield start
    for task_dir in (work / "tasks").iterdir():
        _supervisor.stop(str(task_dir))


@pytest.fixture
def probe(capsys):
    def run_module(check_mode=False, **options):
        with patch_module_args(dict(options, _ansible_check_mode=check_mode)), pytest.raises(SystemExit):
            training_status.main()
        return json.loads(capsys.readouterr().out)
    return run_module


def wait_for(probe, predicate, timeout=10.0, **options):
    deadline = time.time() + timeout
    while True:
        result = probe(**options)
        if predicate(result) or time.time() > deadline:
            return result
        time.sleep(0.2)


def test_running_task_is_reported_running_and_not_failed(probe, job):
    task = job("worker-0", "sleep", "60")

    result = probe(tasks=[task], work_dir=job.work_dir)

    assert result["changed"] is False
    [state] = result["tasks"]
    assert state["name"] == "worker-0" and state["running"] is True and state["returncode"] is None
    assert "log_tail" not in state
    assert result["failed_tasks"] == []
    assert result["status"] is None and result["result"] is None


def test_failed_task_is_named_with_its_return_code_and_log_tail(probe, job):
    ok = job("worker-0", "sh", "-c", "echo fine")
    bad = job("chief-0", "sh", "-c", "echo step 1; echo 'ValueError: bad learning rate' >&2; exit 3")

    result = wait_for(probe, lambda r: not any(t["running"] for t in r["tasks"]), tasks=[ok, bad], tail_lines=5)

    assert result["failed_tasks"] == ["chief-0"]
    chief = result["tasks"][1]
    assert chief["returncode"] == 3 and chief["reason"] == "exited"
    assert "ValueError: bad learning rate" in chief["log_tail"]
    assert len(chief["log_tail"].splitlines()) <= 5
    assert result["tasks"][0]["returncode"] == 0 and "fine" in result["tasks"][0]["log_tail"]


def test_task_that_died_with_its_supervisor_counts_as_failed(probe, job):
    task = job("ps-0", "sleep", "60")
    meta = json.load(open(os.path.join(task["dir"], "task.json")))
    os.kill(meta["supervisor_pid"], signal.SIGKILL)  # e.g. the OOM killer; no exit record gets written
    os.killpg(meta["pid"], signal.SIGKILL)

    result = wait_for(probe, lambda r: not r["tasks"][0]["running"], tasks=[task])

    assert result["tasks"][0]["reason"] == "died without exit record"
    assert result["failed_tasks"] == ["ps-0"]


def test_stopped_and_never_started_tasks_are_not_failures(probe, job, tmp_path):
    task = job("worker-1", "sleep", "60")
    _supervisor.stop(task["dir"])
    never = {"name": "worker-2", "dir": str(tmp_path / "nowhere")}

    result = probe(tasks=[task, never])

    assert [t["running"] for t in result["tasks"]] == [False, False]
    assert [t["reason"] for t in result["tasks"]] == ["stopped", "not started"]
    assert result["failed_tasks"] == []


def test_status_and_result_files_are_returned_parsed(probe, job):
    with open(os.path.join(job.work_dir, "status.json"), "w") as f:
        json.dump({"state": "running", "step": 120, "target_steps": 300}, f)

    running = probe(work_dir=job.work_dir)
    assert running["status"]["step"] == 120 and running["result"] is None
    assert 0 <= running["status_age"] < 60

    with open(os.path.join(job.work_dir, "result.json"), "w") as f:
        json.dump({"steps": 300, "accuracy": 0.97}, f)
    done = probe(work_dir=job.work_dir, check_mode=True)
    assert done["result"]["accuracy"] == 0.97 and done["changed"] is False


def test_probe_lists_the_ports_that_do_not_answer(probe):
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen()
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, not listening: refuses connections
    up = "127.0.0.1:%d" % listening.getsockname()[1]
    down = "127.0.0.1:%d" % closed.getsockname()[1]
    try:
        result = probe(probe=[up, down], probe_timeout=1.0)
    finally:
        listening.close()
        closed.close()

    assert result["unreachable"] == [down]
    assert result["tasks"] == [] and result["failed_tasks"] == []


def test_wait_answers_as_soon_as_a_task_ends(probe, job):
    task = job("worker-0", "sh", "-c", "sleep 1; exit 4")

    result = probe(tasks=[task], wait=30, wait_interval=0.2)

    # Seen within a look of the exit, not at the end of the wait.
    assert 0.5 < result["waited"] < 10
    assert result["failed_tasks"] == ["worker-0"] and result["tasks"][0]["returncode"] == 4


def test_wait_runs_its_course_while_the_job_only_trains(probe, job):
    task = job("chief-0", "sleep", "60")
    with open(os.path.join(job.work_dir, "status.json"), "w") as f:
        json.dump({"state": "running", "step": 10, "first_step_at": 1.0, "started_at": 0.5}, f)

    result = probe(tasks=[task], work_dir=job.work_dir, wait=1.5, wait_interval=0.3)

    assert 1.2 <= result["waited"] <= 3 and result["tasks"][0]["running"] is True


def test_wait_does_not_hold_back_a_task_that_has_already_ended(probe, job):
    task = job("ps-0", "sh", "-c", "exit 0")
    wait_for(probe, lambda r: not r["tasks"][0]["running"], tasks=[task])

    result = probe(tasks=[task], wait=30, wait_interval=0.2)

    assert result["waited"] < 1 and result["tasks"][0]["returncode"] == 0


def test_a_look_without_heartbeat_leaves_the_idle_guards_clock_alone(probe, job, tmp_path, monkeypatch):
    guard = tmp_path / "idle-guard"
    guard.mkdir()
    monkeypatch.setattr(_idle_guard, "guard_dir", lambda: str(guard))
    task = job("worker-0", "sleep", "60")

    probe(tasks=[task], work_dir=job.work_dir, heartbeat=False)
    assert not (guard / _idle_guard.HEARTBEAT).exists()
    probe(tasks=[task], work_dir=job.work_dir)
    assert (guard / _idle_guard.HEARTBEAT).exists()
