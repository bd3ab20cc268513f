"""What a task's folder says about a task never started, running, exited or dead (module_utils/_task_folder.py).

Real processes (sleep, sh) started in-process with the supervisor's start(), as the training_task module does: the
supervisor writes the records, the task-folder protocol reads them.
"""

import os
import signal
import sys

import pytest

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _json_files, _supervisor, _task_folder
from processes import wait_until


def test_a_folder_without_records_is_a_task_never_started(tmp_path):
    status = _task_folder.task_status(str(tmp_path / "nowhere"))

    assert status["running"] is False and status["reason"] == _task_folder.NOT_STARTED == "not started"
    assert status["pid"] is None and status["returncode"] is None
    assert _task_folder.failed(status) is False
    assert _task_folder.log_tail(str(tmp_path / "nowhere")) == ""


def test_a_running_task_is_running_with_its_pids(task_dir):
    started = _supervisor.start(task_dir, "worker-0", ["sleep", "60"])

    status = _task_folder.task_status(task_dir)
    assert (status["running"], status["task_running"], status["supervisor_running"]) == (True, True, True)
    assert (status["name"], status["pid"], status["reason"]) == ("worker-0", started["pid"], None)
    assert status["supervisor_pid"] == started["supervisor_pid"]
    assert status["started_at"] > 0 and _task_folder.failed(status) is False
    with open(os.path.join(task_dir, _task_folder.PID_FILE)) as f:
        assert int(f.read()) == started["pid"]
    with open(os.path.join(task_dir, _task_folder.SUPERVISOR_PID_FILE)) as f:
        assert int(f.read()) == started["supervisor_pid"]


def test_an_exited_task_has_its_return_code_reason_and_log(task_dir, task_ended):
    _supervisor.start(task_dir, "chief-0", ["sh", "-c", "echo to-out; echo to-err >&2; exit 3"])
    assert wait_until(task_ended)

    status = _task_folder.task_status(task_dir)
    assert (status["returncode"], status["reason"]) == (3, "exited")
    assert status["finished_at"] >= status["started_at"]
    assert _task_folder.failed(status) is True
    tail = _task_folder.log_tail(task_dir, 50)
    assert "to-out" in tail and "to-err" in tail and "[tfdist-supervise]" in tail
    assert _task_folder.log_tail(task_dir, 1).splitlines() == [tail.splitlines()[-1]]


def test_a_task_that_exits_cleanly_is_no_failure(task_dir, task_ended):
    _supervisor.start(task_dir, "worker-0", ["true"])
    assert wait_until(task_ended)

    status = _task_folder.task_status(task_dir)
    assert (status["returncode"], status["reason"], _task_folder.failed(status)) == (0, "exited", False)


def test_a_task_that_died_with_its_supervisor_has_no_exit_record(task_dir, task_ended):
    started = _supervisor.start(task_dir, "ps-0", ["sleep", "60"])
    os.kill(started["supervisor_pid"], signal.SIGKILL)  # e.g. the OOM killer: no exit.json gets written
    os.killpg(started["pid"], signal.SIGKILL)
    assert wait_until(task_ended)

    status = _task_folder.task_status(task_dir)
    assert status["reason"] == _task_folder.DIED == "died without exit record" and status["returncode"] is None
    assert _task_folder.failed(status) is True


def test_a_killed_task_is_recorded_with_its_signal(task_dir, task_ended):
    started = _supervisor.start(task_dir, "worker-1", ["sleep", "60"])
    os.kill(started["pid"], signal.SIGKILL)
    assert wait_until(task_ended)

    status = _task_folder.task_status(task_dir)
    assert (status["returncode"], status["reason"]) == (-9, "killed by signal 9")
    assert _task_folder.failed(status) is True


def test_a_pid_reused_by_another_process_does_not_count_as_the_task(task_dir):
    os.makedirs(task_dir)
    # Our own pid with another start time: a record left over from before a reboot.
    _json_files.write_json(os.path.join(task_dir, _task_folder.TASK_FILE),
                           {"name": "w", "pid": os.getpid(), "pid_starttime": 1, "supervisor_pid": None})

    status = _task_folder.task_status(task_dir)
    assert status["running"] is False and status["reason"] == "died without exit record"


def test_a_bad_env_file_line_is_named(tmp_path):
    env_file = tmp_path / "env"
    env_file.write_text("GOOD=1\nno equals sign\n")
    with pytest.raises(ValueError, match="env:2: expected KEY=VALUE"):
        _task_folder.read_env_file(str(env_file))


def test_a_tasks_environment_has_its_own_temporary_folder_then_env_then_the_env_file(tmp_path):
    env_file = tmp_path / "env"
    env_file.write_text("# comment\nMODE=from-file=yes\nexport OTHER=x\n\n")
    task_dir = str(tmp_path / "worker-0")

    env = _task_folder.task_environment(task_dir, {"MODE": "overridden", "COUNT": 3}, str(env_file))

    assert env["TMPDIR"] == _task_folder.task_tmp(task_dir) == os.path.join(task_dir, "tmp")
    assert (env["MODE"], env["OTHER"], env["COUNT"], env["PYTHONUNBUFFERED"]) == ("from-file=yes", "x", "3", "1")
    with pytest.raises(_task_folder.SupervisorError, match="No such file"):
        _task_folder.task_environment(task_dir, env_file=str(tmp_path / "missing"))


def test_a_task_inherits_only_what_it_needs_never_cloud_credentials_nor_the_login_session(tmp_path, monkeypatch):
    for name in [name for name in os.environ if name not in ("PATH", "HOME")]:
        monkeypatch.delenv(name)  # only what this test sets
    # On cloud=local the controller's cloud credentials are in its environment: a task must never see them.
    for name in ("AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "GOOGLE_APPLICATION_CREDENTIALS", "GCE_CREDENTIALS_FILE",
                 "AZURE_SECRET", "OS_PASSWORD", "HTTPS_PROXY", "TRAINING_FLAG", "TF_TOKEN_app_terraform_io",
                 "TF_VAR_db_password"):
        monkeypatch.setenv(name, "from-the-controller")
    # Under become, sudo names Ansible's temporary module file in SUDO_COMMAND: a task's warm start, prepared by one
    # module run, would never match the task started by the next one.
    monkeypatch.setenv("SUDO_COMMAND", "/bin/sh -c python3 /home/debian/.ansible/tmp/ansible-tmp-1/AnsiballZ_x.py")
    monkeypatch.setenv("SSH_CONNECTION", "10.0.0.1 50022 10.0.0.2 22")
    kept = {"PATH": "/opt/tfdist/venv/bin:/usr/bin", "HOME": "/home/me", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
            "TF_CPP_MIN_LOG_LEVEL": "2", "TFDIST_HOME": "/srv/tfdist", "CUDA_VISIBLE_DEVICES": "1",
            "LD_LIBRARY_PATH": "/usr/local/cuda/lib64"}
    for name, value in kept.items():
        monkeypatch.setenv(name, value)

    env = _task_folder.task_environment(str(tmp_path / "worker-0"), {"AWS_ACCESS_KEY_ID": "the job's own"})

    assert sorted(set(env) - set(kept)) == ["AWS_ACCESS_KEY_ID", "PYTHONUNBUFFERED", "TMPDIR"]
    assert env["AWS_ACCESS_KEY_ID"] == "the job's own"  # training_env, given on purpose
    assert all(env[name] == value for name, value in kept.items())


def test_a_group_of_zombies_is_no_longer_alive():
    leader = os.fork()
    if leader == 0:
        os.setsid()
        os._exit(0)
    # Not reaped yet: a zombie, as a task's group leader is until a slow init reaps it.
    assert wait_until(lambda: open("/proc/%d/stat" % leader).read().split(") ")[1][0] == "Z", timeout=5)
    try:
        assert _task_folder.group_alive(leader) is False
    finally:
        os.waitpid(leader, 0)
    assert _task_folder.group_alive(leader) is False


def test_a_running_group_is_alive(task_dir):
    started = _supervisor.start(task_dir, "ps-0", ["sleep", "60"])
    assert _task_folder.group_alive(started["pid"]) is True


def test_the_state_of_a_tasks_processes_is_read_across_its_whole_group(task_dir):
    # A leader that waits for a child, as a task of a warm host runs in a child of the process that leads its group.
    # child.pid appears whole (renamed once written): the test reads it as soon as it exists.
    started = _supervisor.start(task_dir, "ps-0",
                                ["sh", "-c", "sleep 60 & echo $! > child.part && mv child.part child.pid; wait"])
    assert wait_until(lambda: os.path.exists(os.path.join(task_dir, "child.pid")))
    with open(os.path.join(task_dir, "child.pid")) as f:
        child = int(f.read())
    assert _task_folder.process_state(started["pid"]) == _task_folder.PROCESSES_RUNNING == "running"

    os.kill(child, signal.SIGSTOP)  # the child only: its leader still sleeps in wait
    assert wait_until(lambda: _task_folder.process_state(started["pid"]) == "stopped", timeout=5)
    os.kill(child, signal.SIGCONT)
    assert wait_until(lambda: _task_folder.process_state(started["pid"]) == "running", timeout=5)

    _supervisor.stop(task_dir, timeout=10)
    assert _task_folder.process_state(started["pid"]) is None


# A process that waits in the kernel, where no signal but SIGKILL reaches it: a parent in vfork() until its child
# (stopped, in a group of its own) runs a program or ends. Its state is D, as on a hung disk or NFS mount.
IN_THE_KERNEL = """
import ctypes, signal
libc = ctypes.CDLL(None)
if libc.vfork() == 0:
    libc.setpgid(0, 0)
    libc.kill(libc.getpid(), signal.SIGSTOP)
    libc._exit(0)
"""


def children(pid):
    return [int(entry) for entry in os.listdir("/proc")
            if entry.isdigit() and int((_task_folder.proc_stat(entry) or [0, 0])[1]) == pid]


def test_a_task_waiting_in_the_kernel_is_uninterruptible(task_dir):
    started = _supervisor.start(task_dir, "worker-0", [sys.executable, "-c", IN_THE_KERNEL])
    try:
        assert wait_until(lambda: _task_folder.process_state(started["pid"]) == "uninterruptible", timeout=10)
    finally:
        for pid in children(started["pid"]) + [started["pid"]]:  # the stopped child is in a group of its own
            os.kill(pid, signal.SIGKILL)
