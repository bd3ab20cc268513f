"""tfdist.cluster.training_task with the real supervisor (module_utils/tfdist/_supervisor.py) and real processes (sleep, sh)."""

import json
import os
import signal

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _supervisor
from ansible_collections.tfdist.cluster.plugins.modules import training_task
from processes import alive, wait_until


@pytest.fixture
def task_dir(tmp_path):
    path = tmp_path / "tasks" / "worker-1"
    yield str(path)
    # Never leave a test's process behind.
    if path.is_dir():
        _supervisor.stop(str(path))


@pytest.fixture
def run(capsys, task_dir):
    """Run the module; returns its JSON result (with `failed` on failure)."""
    def run_module(check_mode=False, **options):
        args = {} if "tasks" in options else dict(name="worker-1", dir=task_dir)
        args.update(options, _ansible_check_mode=check_mode)
        with patch_module_args(args), pytest.raises(SystemExit):
            training_task.main()
        return json.loads(capsys.readouterr().out)
    return run_module


def test_start_runs_the_command_in_the_background_and_second_start_changes_nothing(run, task_dir):
    first = run(command=["sleep", "60"])

    assert first["changed"] is True and first["started"] is True
    assert alive(first["pid"])
    assert first["status"]["running"] is True
    with open(os.path.join(task_dir, "task.pid")) as f:
        assert int(f.read()) == first["pid"]

    second = run(command=["sleep", "60"])
    assert second["changed"] is False and second["started"] is False
    assert second["pid"] == first["pid"]


def test_changed_command_restarts_the_task(run):
    first = run(command=["sleep", "60"])
    second = run(command=["sleep", "61"])

    assert second["changed"] is True and second["stopped"] is True and second["started"] is True
    assert second["pid"] != first["pid"]
    assert wait_until(lambda: not alive(first["pid"]))
    assert alive(second["pid"])


def test_changed_watched_file_restarts_and_restart_forces_it(run, tmp_path):
    script = tmp_path / "train.py"
    script.write_text("v1")
    first = run(command=["sleep", "60"], watch_files=[str(script)])
    assert run(command=["sleep", "60"], watch_files=[str(script)])["changed"] is False

    script.write_text("v2")
    second = run(command=["sleep", "60"], watch_files=[str(script)])
    assert second["changed"] is True and second["pid"] != first["pid"]

    third = run(command=["sleep", "60"], watch_files=[str(script)], restart=True)
    assert third["changed"] is True and third["pid"] != second["pid"]


def test_stop_is_idempotent_and_ends_the_process_group(run, task_dir):
    # sh starts a child: stopping must end the whole process group, not only sh. child.pid appears whole (renamed
    # once written): the test reads it as soon as it exists.
    started = run(command=["sh", "-c", "sleep 60 & echo $! > child.part && mv child.part child.pid; wait"])
    assert wait_until(lambda: os.path.exists(os.path.join(task_dir, "child.pid")))
    with open(os.path.join(task_dir, "child.pid")) as f:
        child = int(f.read())

    stopped = run(state="stopped")
    assert stopped["changed"] is True and stopped["stopped"] is True
    assert stopped["status"]["running"] is False and stopped["status"]["reason"] == "stopped"
    assert wait_until(lambda: not alive(started["pid"]) and not alive(child))

    again = run(state="stopped")
    assert again["changed"] is False


def test_check_mode_reports_the_plan_and_starts_nothing(run, task_dir):
    planned = run(check_mode=True, command=["sleep", "60"])

    assert planned["changed"] is True and planned["started"] is True
    assert planned["pid"] is None
    assert not os.path.exists(os.path.join(task_dir, "task.json"))

    real = run(command=["sleep", "60"])
    assert run(check_mode=True, state="stopped")["changed"] is True
    assert alive(real["pid"])  # check mode did not stop it


def test_finished_task_is_launched_again_unless_rerun_finished_is_false(run, task_dir):
    first = run(command=["sh", "-c", "echo run >> runs.txt"])
    assert wait_until(lambda: not run(command=["sh", "-c", "echo run >> runs.txt"], rerun_finished=False)
                      ["status"]["running"])
    # Finished with code 0, same configuration: left alone when asked.
    kept = run(command=["sh", "-c", "echo run >> runs.txt"], rerun_finished=False)
    assert kept["changed"] is False
    assert kept["status"]["returncode"] == 0

    # Default: a deploy re-run relaunches a finished job (it resumes from its checkpoint).
    again = run(command=["sh", "-c", "echo run >> runs.txt"])
    assert again["changed"] is True and again["started"] is True and again["pid"] != first["pid"]
    assert wait_until(lambda: open(os.path.join(task_dir, "runs.txt")).read().count("run") == 2)


def test_failure_within_wait_fails_with_the_log_tail(run):
    result = run(command=["sh", "-c", "echo 'ImportError: no module named tensorflow' >&2; exit 3"], wait=5)

    assert result["failed"] is True
    assert result["status"]["returncode"] == 3
    assert "ImportError: no module named tensorflow" in result["log_tail"]
    assert "exited with code 3" in result["msg"]


def test_env_reaches_the_task_and_its_values_stay_out_of_the_result(run, task_dir, tmp_path):
    tf_config = tmp_path / "tf_config.json"
    tf_config.write_text('{"cluster": {"chief": ["127.0.0.1:2222"]}, "task": {"type": "chief", "index": 0}}\n')
    result = run(command=["sh", "-c", 'echo "$DATA_TOKEN|$TF_CONFIG" > env.txt; sleep 60'],
                 env={"DATA_TOKEN": "s3cr3t-t0ken"}, env_from_files={"TF_CONFIG": str(tf_config)})

    assert result["changed"] is True
    assert "s3cr3t-t0ken" not in json.dumps(result)
    env_file = os.path.join(task_dir, "env.txt")
    assert wait_until(lambda: os.path.exists(env_file) and os.path.getsize(env_file) > 0)
    token, config = open(env_file).read().strip().split("|")
    assert token == "s3cr3t-t0ken"
    assert json.loads(config)["task"]["type"] == "chief"


def test_absent_stops_and_removes_the_task_directory(run, task_dir):
    started = run(command=["sleep", "60"])
    removed = run(state="absent")

    assert removed["changed"] is True
    assert not os.path.exists(task_dir)
    assert wait_until(lambda: not alive(started["pid"]))
    assert run(state="absent")["changed"] is False


def test_task_killed_outside_the_supervisor_is_relaunched(run):
    first = run(command=["sleep", "60"])
    os.kill(first["pid"], signal.SIGKILL)
    assert wait_until(lambda: not run(command=["sleep", "60"], check_mode=True)["status"]["running"])

    again = run(command=["sleep", "60"])
    assert again["changed"] is True and alive(again["pid"])


def test_bad_options_fail_with_a_message_naming_them(run):
    assert "command" in run()["msg"]
    assert "stop_when_gone" in run(command=["sleep", "1"], stop_when_gone="chief-without-port")["msg"]


def test_tasks_of_a_host_start_in_one_call_and_a_second_call_changes_nothing(run, tmp_path):
    tasks = [{"name": name, "dir": str(tmp_path / name), "command": ["sleep", "60"]} for name in ("ps-0", "worker-0")]
    first = run(tasks=tasks)
    assert first["changed"] is True
    assert [t["name"] for t in first["tasks"]] == ["ps-0", "worker-0"]
    assert all(t["started"] and alive(t["pid"]) for t in first["tasks"])

    again = run(tasks=tasks)
    assert again["changed"] is False
    assert [t["pid"] for t in again["tasks"]] == [t["pid"] for t in first["tasks"]]

    stopped = run(tasks=[{"name": t["name"], "dir": t["dir"]} for t in tasks], state="stopped")
    assert stopped["changed"] is True and not any(alive(t["pid"]) for t in first["tasks"])


def test_one_task_failing_within_wait_names_that_task(run, tmp_path):
    tasks = [{"name": "ps-0", "dir": str(tmp_path / "ps-0"), "command": ["sleep", "60"]},
             {"name": "worker-0", "dir": str(tmp_path / "worker-0"), "command": ["sh", "-c", "echo no data >&2; exit 3"]}]
    result = run(tasks=tasks, wait=3)
    assert result["failed"] is True
    assert "worker-0 exited with code 3" in result["msg"] and "no data" in result["msg"]
    run(tasks=tasks, state="stopped")


def test_tasks_and_the_options_of_one_task_do_not_mix(run, tmp_path):
    tasks = [{"name": "ps-0", "dir": str(tmp_path / "ps-0"), "command": ["sleep", "1"]}]
    assert "tasks" in run(tasks=tasks, name="ps-0", dir=str(tmp_path / "ps-0"))["msg"]
    assert "command is required" in run(tasks=[{"name": "ps-0", "dir": str(tmp_path / "ps-0")}])["msg"]
