"""The supervisor (module_utils/_supervisor.py): start, stop, the leader's port, its command line.

Real processes (sleep, sh) started in-process with start(), as the training_task module does; what the task's folder
then says is read with _task_folder (its own tests: test__task_folder.py).
"""

import json
import os
import re
import socket
import threading
import time

import pytest

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _supervisor, _task_folder
from processes import alive, wait_until


def test_stop_ends_the_task_records_it_and_is_idempotent(task_dir):
    started = _supervisor.start(task_dir, "worker-0", ["sh", "-c", "trap '' TERM; sleep 60"], stop_timeout=1)

    stopped = _supervisor.stop(task_dir, timeout=10)

    assert (stopped["stopped"], stopped["running"], stopped["reason"]) == (True, False, "stopped")
    assert not alive(started["pid"]) and _task_folder.failed(stopped) is False
    assert _supervisor.stop(task_dir)["stopped"] is False


def test_start_refuses_a_running_task_and_a_missing_program(task_dir, tmp_path):
    _supervisor.start(task_dir, "w", ["sleep", "60"])
    with pytest.raises(_supervisor.SupervisorError, match="already running"):
        _supervisor.start(task_dir, "w", ["sleep", "60"])

    other = str(tmp_path / "other")
    with pytest.raises(_supervisor.SupervisorError, match="/no/such/program"):
        _supervisor.start(other, "x", ["/no/such/program"])
    assert _task_folder.task_status(other)["returncode"] == 127


def test_environment_layers_reach_the_task(task_dir, tmp_path, task_ended):
    env_file = tmp_path / "task.env"
    env_file.write_text("# comment\nMODE=from-file=yes\nexport OTHER=x\n")
    tf_config = tmp_path / "tf_config.json"
    tf_config.write_text('{"task": {"type": "ps", "index": 0}}\n')
    _supervisor.start(task_dir, "w", ["sh", "-c", 'echo "$SECRET|$MODE|$OTHER|$TF_CONFIG" > seen.txt'],
                      env={"SECRET": "s3cr3t", "MODE": "overridden by the env file"}, env_file=str(env_file),
                      env_from_files={"TF_CONFIG": str(tf_config)})
    assert wait_until(task_ended)

    with open(os.path.join(task_dir, "seen.txt")) as f:
        assert f.read().strip() == 's3cr3t|from-file=yes|x|{"task": {"type": "ps", "index": 0}}'


@pytest.mark.parametrize("value, expected", [
    ("10.0.0.5:2222", ("10.0.0.5", 2222)),
    ("[::1]:2222", ("::1", 2222)),
    ("chief.example:80", ("chief.example", 80)),
])
def test_host_port(value, expected):
    assert _supervisor.parse_host_port(value) == expected


@pytest.mark.parametrize("value", ["chief", ":2222", "chief:port"])
def test_bad_host_port_is_refused(value):
    with pytest.raises(ValueError, match="HOST:PORT"):
        _supervisor.parse_host_port(value)


def serve_once(reply, delay):
    """A port that answers one connection with `reply` after `delay` seconds (None: says nothing); its number."""
    server = socket.create_server(("127.0.0.1", 0))

    def answer():
        with server:
            connection = server.accept()[0]
            with connection:
                time.sleep(delay)
                if reply is not None:
                    connection.sendall(reply)
                time.sleep(0.2)

    threading.Thread(target=answer, daemon=True).start()
    return server.getsockname()[1]


@pytest.mark.parametrize("reply, delay, expected", [
    pytest.param(_supervisor.FINISHED + b" chief-0\n", 0.0, "finished", id="announced"),
    # A leader's supervisor short of CPU answers late: still the end of the job, not a leader that is up.
    pytest.param(_supervisor.FINISHED + b" chief-0\n", 1.0, "finished", id="announced-late"),
    pytest.param(b"\x00\x00\x06\x04", 0.0, "up", id="a-server"),
    pytest.param(None, 0.0, "up", id="a-silent-server"),
])
def test_the_leader_probe_reads_what_its_port_says(reply, delay, expected):
    assert _supervisor.probe_leader("127.0.0.1", serve_once(reply, delay), timeout=1.5) == expected


def test_a_closed_port_is_a_leader_gone():
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
    assert _supervisor.probe_leader("127.0.0.1", port, timeout=1.0) == "down"


def test_the_command_line_prints_the_same_json_as_the_functions(task_dir, capsys):
    assert _supervisor.main(["start", "--name", "w", "--dir", task_dir, "--", "sleep", "60"]) == 0
    started = json.loads(capsys.readouterr().out)
    assert _supervisor.main(["status", "--dir", task_dir]) == 0
    assert json.loads(capsys.readouterr().out)["pid"] == started["pid"]
    assert _supervisor.main(["stop", "--dir", task_dir]) == 0
    assert json.loads(capsys.readouterr().out)["stopped"] is True
    assert _supervisor.main(["start", "--name", "w", "--dir", task_dir]) == 1
    assert "no command given" in capsys.readouterr().err


def leader_port(ends_first):
    """A leader's port whose answers change after a second, as its supervisor's and its TF server's do: the end of the
    job announced, or nothing said (a TF server). ends_first: the announcement comes first (the last run's, before
    a relaunch), else after (a chief that trains, then ends). Yields its number."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    done = threading.Event()
    turn_at = time.monotonic() + 1.0

    def answer():
        while not done.is_set():
            try:
                connection = server.accept()[0]
            except OSError:
                continue
            with connection:
                if (time.monotonic() < turn_at) == ends_first:
                    connection.sendall(_supervisor.FINISHED + b" chief-0\n")
                else:
                    time.sleep(0.3)  # a TF server: it says nothing
        server.close()

    threading.Thread(target=answer, daemon=True).start()
    yield server.getsockname()[1]
    done.set()


@pytest.fixture
def finished_leader():
    """A chief that trains for a second, then ends: its port's number."""
    yield from leader_port(ends_first=False)


@pytest.mark.parametrize("end_grace, stops", [(0, True), (None, False)], ids=["a-server", "with-gone-grace"])
def test_a_server_stops_at_the_announced_end_with_no_end_grace(task_dir, finished_leader, end_grace, stops, task_ended):
    _supervisor.start(task_dir, "ps-0", ["sleep", "60"], stop_when_gone="127.0.0.1:%d" % finished_leader,
                      gone_grace=30, probe_interval=0.2, end_grace=end_grace)

    # A server is done once the leader says so; another task keeps its gone_grace (30 s here).
    assert wait_until(task_ended, timeout=5) is stops
    if stops:
        status = _task_folder.task_status(task_dir)
        assert (status["returncode"], status["reason"], _task_folder.failed(status)) == (0, "chief finished", False)


@pytest.fixture
def relaunched_leader():
    """The last run's end still announced for a second, then a relaunched chief: its port's number."""
    yield from leader_port(ends_first=True)


def test_a_server_launched_before_the_chief_outlives_the_last_runs_announcement(task_dir, relaunched_leader, task_ended):
    _supervisor.start(task_dir, "ps-0", ["sleep", "60"], stop_when_gone="127.0.0.1:%d" % relaunched_leader,
                      gone_grace=3, probe_interval=0.2, end_grace=0)

    # The end it hears first is the last run's: the chief comes back within the grace, and the server serves it.
    assert wait_until(task_ended, timeout=4) is False
    assert "announces the end" in _task_folder.log_tail(task_dir, 20)


def test_an_announced_end_is_the_end_after_the_gone_grace_too(task_dir, finished_leader, task_ended):
    _supervisor.start(task_dir, "evaluator-0", ["sleep", "60"], stop_when_gone="127.0.0.1:%d" % finished_leader,
                      gone_grace=2, probe_interval=0.2)

    assert wait_until(task_ended, timeout=10)
    status = _task_folder.task_status(task_dir)
    assert (status["returncode"], status["reason"], _task_folder.failed(status)) == (0, "chief finished", False)


@pytest.fixture
def silent_leader():
    """silent_leader(after, seconds): a leader's port (a TF server: it says nothing) that stops answering `after`
    seconds from now for `seconds` (None: for good), as a leader cut off by the network, then comes back on the same
    port; its number."""
    done = threading.Event()

    def serve(after, seconds):
        server = socket.create_server(("127.0.0.1", 0))
        port = server.getsockname()[1]

        def answer():
            nonlocal server
            silent_at = time.monotonic() + after
            while not done.is_set():
                if server is not None and time.monotonic() >= silent_at:
                    server.close()  # connections refused, as from a node the network has lost
                    server = None
                    if seconds is not None:
                        time.sleep(seconds)
                        server = socket.create_server(("127.0.0.1", port))
                        silent_at = float("inf")
                if server is None:
                    time.sleep(0.1)
                    continue
                server.settimeout(0.1)
                try:
                    server.accept()[0].close()
                except OSError:
                    pass
            if server is not None:
                server.close()

        threading.Thread(target=answer, daemon=True).start()
        return port

    yield serve
    done.set()


def test_a_server_serves_through_a_silence_of_its_leader_shorter_than_the_grace(task_dir, silent_leader, task_ended):
    port = silent_leader(after=1.0, seconds=1.5)
    _supervisor.start(task_dir, "ps-0", ["sleep", "60"], stop_when_gone="127.0.0.1:%d" % port, gone_grace=3,
                      probe_interval=0.2, end_grace=0)

    # A network blip: the leader answers again within the grace, and the server goes on serving it.
    assert wait_until(task_ended, timeout=6) is False
    assert "stopping task" not in _task_folder.log_tail(task_dir, 20)


def test_a_server_whose_leader_stays_silent_is_stopped_as_failed_not_as_finished(task_dir, silent_leader, task_ended):
    port = silent_leader(after=1.0, seconds=None)
    _supervisor.start(task_dir, "ps-0", ["sleep", "60"], stop_when_gone="127.0.0.1:%d" % port, gone_grace=2,
                      probe_interval=0.2, end_grace=0)

    assert wait_until(task_ended, timeout=10)
    status = _task_folder.task_status(task_dir)
    silent = re.fullmatch(r"leader unreachable for (\d+)s", status["reason"])
    assert silent and 2 <= int(silent.group(1)) <= 4, status["reason"]
    # Not a clean end: the watch counts the server as failed (no end of the job was announced).
    assert (status["returncode"], _task_folder.failed(status)) == (_task_folder.UNREACHABLE_CODE, True)
    assert "chief finished" not in _task_folder.log_tail(task_dir, 20)
