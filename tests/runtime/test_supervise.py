"""The supervisor (plugins/module_utils/tfdist/_supervisor.py run as a command, `python -m`) with real processes and a fake chief
port (no TensorFlow)."""

import json
import os
import re
import signal
import socket
import stat
import sys
import time

import pytest

from local_cluster import run_supervisor
from processes import alive, free_port_block, wait_until


def supervise(*args, check=True):
    out = run_supervisor(*args, timeout=60)
    if check:
        assert out.returncode == 0, out.stderr
    return out


def status(task_dir):
    return json.loads(supervise("status", "--dir", task_dir).stdout)


@pytest.fixture
def task_dir(tmp_path):
    path = str(tmp_path / "task")
    yield path
    supervise("stop", "--dir", path, check=False)


@pytest.fixture
def chief_port():
    """A listening socket standing in for the chief's gRPC port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    yield listener
    listener.close()


def test_server_task_is_stopped_as_failed_once_the_chief_port_is_silent_for_the_grace(task_dir, chief_port):
    address = "127.0.0.1:%d" % chief_port.getsockname()[1]
    started = json.loads(supervise("start", "--name", "ps-0", "--dir", task_dir, "--stop-when-gone", address,
                                   "--gone-grace", "1", "--probe-interval", "0.2", "--", "sleep", "120").stdout)
    log = os.path.join(task_dir, "task.log")
    assert wait_until(lambda: "answers" in open(log).read())
    assert status(task_dir)["running"] is True

    chief_port.close()  # the chief's process ended, and announced no end of the job: it crashed

    assert wait_until(lambda: not status(task_dir)["running"])
    final = status(task_dir)
    assert final["returncode"] == 75 and re.fullmatch(r"leader unreachable for [1-3]s", final["reason"]), final
    assert not alive(started["pid"]) and not alive(started["supervisor_pid"])
    exit_record = json.load(open(os.path.join(task_dir, "exit.json")))
    assert exit_record["returncode"] == 75 and exit_record["finished_at"] > 0
    assert "chief finished" not in open(log).read()


def test_server_task_is_stopped_when_the_chief_never_answers(task_dir):
    unused = socket.socket()
    unused.bind(("127.0.0.1", 0))  # bound but not listening: refuses connections
    address = "127.0.0.1:%d" % unused.getsockname()[1]
    try:
        supervise("start", "--name", "worker-0", "--dir", task_dir, "--stop-when-gone", address,
                  "--never-seen-timeout", "1", "--probe-interval", "0.2", "--", "sleep", "120")
        assert wait_until(lambda: not status(task_dir)["running"])
    finally:
        unused.close()
    assert status(task_dir)["reason"] == "chief never seen"


def can_bind(port):
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("", port))
            return True
        except OSError:
            return False


def test_servers_stop_when_the_leader_ended_before_they_ever_saw_it(tmp_path):
    leader_dir, ps_dir = str(tmp_path / "worker-0"), str(tmp_path / "ps-0")
    port = free_port_block(1)
    try:
        # A job so short that no probe could see the leader's port: it ends before the server starts.
        supervise("start", "--name", "job/worker-0", "--dir", leader_dir, "--announce-end", str(port),
                  "--announce-for", "30", "--", "true")
        assert wait_until(lambda: not status(leader_dir)["running"])
        leader = status(leader_dir)
        assert (leader["returncode"], leader["supervisor_running"]) == (0, True)  # ended, and announcing it

        supervise("start", "--name", "job/ps-0", "--dir", ps_dir, "--stop-when-gone", "127.0.0.1:%d" % port,
                  "--gone-grace", "1", "--probe-interval", "0.2", "--never-seen-timeout", "600", "--",
                  "sleep", "600")
        assert wait_until(lambda: not status(ps_dir)["running"], timeout=20)
        assert (status(ps_dir)["returncode"], status(ps_dir)["reason"]) == (0, "chief finished")
        assert "announces the end of the job" in open(os.path.join(ps_dir, "task.log")).read()

        # stop ends the announcement at once: the port is free for the next run.
        stopped = json.loads(supervise("stop", "--dir", leader_dir).stdout)
        assert stopped["stopped"] is False and stopped["returncode"] == 0
        assert not status(leader_dir)["supervisor_running"]
        assert wait_until(lambda: can_bind(port), timeout=5)
    finally:
        supervise("stop", "--dir", ps_dir, check=False)
        supervise("stop", "--dir", leader_dir, check=False)


def test_a_new_run_of_the_leader_takes_its_port_back_from_the_announcement(task_dir):
    port = free_port_block(1)
    supervise("start", "--name", "chief-0", "--dir", task_dir, "--announce-end", str(port), "--", "true")
    assert wait_until(lambda: status(task_dir)["supervisor_running"] and can_bind(port) is False)

    listen = "import socket, time; s = socket.create_server(('', %d)); print('bound', flush=True); time.sleep(60)" % port
    supervise("start", "--name", "chief-0", "--dir", task_dir, "--announce-end", str(port), "--",
              sys.executable, "-c", listen)
    assert wait_until(lambda: "bound" in open(os.path.join(task_dir, "task.log")).read())
    assert status(task_dir)["running"] is True


def test_a_failed_leader_announces_nothing(task_dir):
    port = free_port_block(1)
    supervise("start", "--name", "chief-0", "--dir", task_dir, "--announce-end", str(port), "--", "false")
    assert wait_until(lambda: not status(task_dir)["supervisor_running"])
    assert status(task_dir)["returncode"] == 1
    assert can_bind(port)


def test_output_goes_to_the_log_and_the_exit_code_is_recorded(task_dir):
    supervise("start", "--name", "chief-0", "--dir", task_dir, "--", "sh", "-c",
              "echo out; echo err >&2; mkdir made; echo x > made/file; exit 7")
    assert wait_until(lambda: not status(task_dir)["running"])

    final = status(task_dir)
    assert (final["returncode"], final["reason"]) == (7, "exited")
    log = open(os.path.join(task_dir, "task.log")).read()
    assert "out\n" in log and "err\n" in log
    # The log, the records and whatever the task writes are its user's alone.
    for name in ("task.log", "exit.json", "task.json", "made/file"):
        assert stat.S_IMODE(os.stat(os.path.join(task_dir, name)).st_mode) == 0o600, name
    assert stat.S_IMODE(os.stat(os.path.join(task_dir, "made")).st_mode) == 0o700


def test_start_refuses_a_running_task_and_a_missing_program(task_dir, tmp_path):
    supervise("start", "--name", "w", "--dir", task_dir, "--", "sleep", "60")
    again = supervise("start", "--name", "w", "--dir", task_dir, "--", "sleep", "60", check=False)
    assert again.returncode == 1 and "already running" in again.stderr

    missing = supervise("start", "--name", "x", "--dir", str(tmp_path / "other"), "--", "/no/such/program",
                        check=False)
    assert missing.returncode == 1 and "/no/such/program" in missing.stderr


def test_stop_kills_a_task_that_ignores_sigterm(task_dir):
    started = json.loads(supervise("start", "--name", "w", "--dir", task_dir, "--stop-timeout", "1", "--",
                                   "sh", "-c", "trap '' TERM; sleep 60").stdout)
    t0 = time.time()
    stopped = json.loads(supervise("stop", "--dir", task_dir).stdout)

    assert stopped["stopped"] is True and stopped["running"] is False and stopped["reason"] == "stopped"
    assert time.time() - t0 < 10
    assert not alive(started["pid"])
    assert json.loads(supervise("stop", "--dir", task_dir).stdout)["stopped"] is False  # idempotent


def test_stop_ends_a_task_frozen_by_sigstop_at_once(task_dir):
    # The task handles SIGTERM, as a training program that checkpoints on it may: a frozen process runs no handler.
    serve = "import signal, sys, time; signal.signal(signal.SIGTERM, lambda *a: sys.exit(0)); print('serving', flush=True); time.sleep(300)"
    started = json.loads(supervise("start", "--name", "w", "--dir", task_dir, "--stop-timeout", "30", "--",
                                   sys.executable, "-c", serve).stdout)
    assert wait_until(lambda: "serving" in open(os.path.join(task_dir, "task.log")).read())
    os.killpg(started["pid"], signal.SIGSTOP)  # a debugger, or a user's kill -STOP
    assert status(task_dir)["running"] is True

    t0 = time.monotonic()
    stopped = json.loads(supervise("stop", "--dir", task_dir, "--timeout", "60").stdout)

    # Well before the stop timeout's SIGKILL (30 s): the SIGCONT after the SIGTERM let its handler run at once.
    assert time.monotonic() - t0 < 10
    assert (stopped["stopped"], stopped["running"], stopped["reason"]) == (True, False, "stopped")
    assert not alive(started["pid"])
    assert "did not stop" not in open(os.path.join(task_dir, "task.log")).read()


def test_env_file_and_env_from_file_reach_the_task(task_dir, tmp_path):
    env_file = tmp_path / "env"
    env_file.write_text("# comment\nMODE=fast=yes\n\nexport OTHER=x\n")
    tf_config = tmp_path / "tf_config.json"
    tf_config.write_text('{"task": {"type": "ps", "index": 0}}\n')
    supervise("start", "--name", "w", "--dir", task_dir, "--env-file", str(env_file),
              "--env-from-file", "TF_CONFIG=%s" % tf_config, "--",
              "sh", "-c", 'echo "$MODE|$OTHER|$TF_CONFIG"')
    assert wait_until(lambda: not status(task_dir)["running"])
    assert 'fast=yes|x|{"task": {"type": "ps", "index": 0}}' in open(os.path.join(task_dir, "task.log")).read()


# A Python that leaves by os._exit, as the training program does, skips the clean-up of its temporary files:
# TensorFlow writes one for each function it converts, which piled up in the node's /tmp at every run.
LEAVE_A_TEMPORARY_FILE = "import os, tempfile; print('made ' + tempfile.mkstemp()[1], flush=True); os._exit(0)"


def made_file(task_dir):
    log = open(os.path.join(task_dir, "task.log")).read()
    return [line for line in log.splitlines() if line.startswith("made ")][0][len("made "):]


def test_a_task_has_a_temporary_folder_of_its_own_that_goes_when_it_ends(task_dir):
    supervise("start", "--name", "chief-0", "--dir", task_dir, "--", sys.executable, "-c", LEAVE_A_TEMPORARY_FILE)
    assert wait_until(lambda: not status(task_dir)["running"])

    made = made_file(task_dir)
    assert os.path.dirname(made) == os.path.join(task_dir, "tmp")
    assert not os.path.exists(made) and not os.path.exists(os.path.dirname(made))


def test_a_temporary_folder_you_set_is_the_tasks_and_left_as_it_is(task_dir, tmp_path):
    own = tmp_path / "own-tmp"
    own.mkdir()
    (tmp_path / "env").write_text("TMPDIR=%s\n" % own)
    supervise("start", "--name", "chief-0", "--dir", task_dir, "--env-file", str(tmp_path / "env"), "--",
              sys.executable, "-c", LEAVE_A_TEMPORARY_FILE)
    assert wait_until(lambda: not status(task_dir)["running"])

    made = made_file(task_dir)
    assert os.path.dirname(made) == str(own) and os.path.exists(made)


def test_status_of_an_empty_directory_says_not_started(tmp_path):
    st = status(str(tmp_path))
    assert st["running"] is False and st["reason"] == "not started"
