"""Warm starts (_warm_start) of the supervisor (_supervisor.warm, then start): real processes, with a standard-library
module standing in for TensorFlow. The task must look exactly like a cold start to whoever reads its folder: log, pid, return code."""

import json
import os
import signal
import subprocess
import sys

import pytest

from processes import alive, wait_until

from ansible_collections.tfdist.cluster.plugins.module_utils import _package
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import (
    _files, _json_files, _supervisor, _task_folder, _warm_start)

# What the script prints: enough to tell that it ran as `python SCRIPT ARGS` would, and in which process.
SCRIPT = """
import os, sys
print("report " + __import__("json").dumps({
    "argv": sys.argv, "cwd": os.getcwd(), "path0": sys.path[0], "name": __name__,
    "tf_config": os.environ.get("TF_CONFIG"), "color": os.environ.get("COLOR"),
    "tfdist_color": os.environ.get("TFDIST_COLOR"),
    "warm_module_loaded": "decimal" in sys.modules, "tmp": __import__("tempfile").gettempdir()}))
if len(sys.argv) > 2:
    raise RuntimeError(sys.argv[2])
sys.exit(int(sys.argv[1]))
"""


@pytest.fixture
def job(tmp_path):
    """(task folder, script, TF_CONFIG file); whatever runs there is ended afterwards."""
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "tf_config.json").write_text('{"task": {"type": "chief", "index": 0}}\n')
    task_dir = str(tmp_path / "tasks" / "chief-0")
    yield task_dir, str(tmp_path / "train.py"), str(tmp_path / "tf_config.json")
    _warm_start.stop_warm(task_dir)
    _supervisor.stop(task_dir)


def report(task_dir):
    log = open(os.path.join(task_dir, "task.log")).read()
    lines = [line for line in log.splitlines() if line.startswith("report ")]
    assert len(lines) == 1, log
    return json.loads(lines[0][len("report "):]), log


def ended(task_dir):
    assert wait_until(lambda: not _task_folder.task_status(task_dir)["running"], timeout=30)
    return _task_folder.task_status(task_dir)


def warm_ready(task_dir):
    """Start a warm Python that imports `decimal` (not loaded by a bare interpreter) and wait until it has."""
    warm = _supervisor.warm(task_dir, sys.executable, modules=["decimal"], env={"COLOR": "blue"})
    assert os.path.isfile(os.path.join(task_dir, _warm_start.WARM_FILE))
    return warm


def test_a_warm_start_runs_the_script_in_the_python_that_imported_the_modules(job):
    task_dir, script, tf_config = job
    warm = warm_ready(task_dir)

    started = _supervisor.start(task_dir, "job/chief-0", [sys.executable, script, "3"], env={"COLOR": "blue"},
                                env_from_files={"TF_CONFIG": tf_config})

    assert started["pid"] == warm["pid"]  # no second process: the warm one runs the task
    status = ended(task_dir)
    assert (status["returncode"], status["reason"], status["pid"]) == (3, "exited", warm["pid"])
    seen, log = report(task_dir)
    assert seen == {"argv": [script, "3"], "cwd": task_dir, "path0": os.path.dirname(script), "name": "__main__",
                    "tf_config": '{"task": {"type": "chief", "index": 0}}', "color": "blue", "tfdist_color": None,
                    "warm_module_loaded": True, "tmp": os.path.join(task_dir, "tmp")}
    assert "warm start: decimal imported since" in log and "task ended: returncode 3 (exited)" in log
    assert not os.path.exists(os.path.join(task_dir, _warm_start.WARM_FILE))
    assert not os.path.exists(os.path.join(task_dir, _warm_start.WARM_SOCKET))


def test_a_script_that_raises_fails_as_it_would_cold(job):
    task_dir, script, tf_config = job
    warm_ready(task_dir)
    _supervisor.start(task_dir, "job/chief-0", [sys.executable, script, "0", "bad data"], env={"COLOR": "blue"},
                      env_from_files={"TF_CONFIG": tf_config})
    status = ended(task_dir)
    assert (status["returncode"], status["reason"]) == (1, "exited")
    assert "RuntimeError: bad data" in _task_folder.log_tail(task_dir)
    assert _task_folder.failed(status)


def test_another_environment_starts_the_task_cold_in_the_same_process(job):
    task_dir, script, tf_config = job
    warm = warm_ready(task_dir)
    started = _supervisor.start(task_dir, "job/chief-0", [sys.executable, script, "0"], env={"COLOR": "red"},
                                env_from_files={"TF_CONFIG": tf_config})
    assert started["pid"] == warm["pid"]
    status = ended(task_dir)
    assert (status["returncode"], status["reason"]) == (0, "exited")
    seen, log = report(task_dir)
    assert seen["color"] == "red" and seen["warm_module_loaded"] is False and seen["argv"] == [script, "0"]
    assert "the environment differs in COLOR: starting cold" in log


def test_a_command_that_is_no_script_of_that_python_ends_the_warm_start(job):
    task_dir, _script, _tf_config = job
    warm = warm_ready(task_dir)
    started = _supervisor.start(task_dir, "job/chief-0", ["sh", "-c", "echo cold; exit 4"])
    assert started["pid"] != warm["pid"]
    status = ended(task_dir)
    assert (status["returncode"], status["reason"]) == (4, "exited")
    assert "cold" in _task_folder.log_tail(task_dir)
    assert wait_until(lambda: not alive(warm["pid"]) and not alive(warm["supervisor_pid"]))


def test_a_warm_start_nobody_claims_ends_by_itself_and_stop_ends_one_at_once(job):
    task_dir, _script, _tf_config = job
    warm = _supervisor.warm(task_dir, sys.executable, modules=["decimal"], warm_for=1)
    assert wait_until(lambda: not alive(warm["pid"]) and not alive(warm["supervisor_pid"]), timeout=15)
    assert not os.path.exists(os.path.join(task_dir, _warm_start.WARM_FILE))
    assert _task_folder.task_status(task_dir)["reason"] == _task_folder.NOT_STARTED  # it never was the task

    warm = warm_ready(task_dir)
    assert _warm_start.stop_warm(task_dir) is True
    assert not alive(warm["pid"]) and not alive(warm["supervisor_pid"])
    assert _warm_start.stop_warm(task_dir) is False


def test_a_nodes_copy_of_the_package_warms_a_task_and_launches_it(job, tmp_path):
    """As on a node: the warm start from a copy of the package that is gone once it has answered (a module's payload,
    a look's zip), the launch with `python -m tfdist._supervisor` from the package laid down in a lib folder."""
    task_dir, script, tf_config = job
    files = _package.package_files()
    lib = tmp_path / "lib"
    _files.lay_down(_files.package_root(str(lib)), files)
    payload = tmp_path / "payload.zip"
    payload.write_bytes(_files.zip_package(files))
    # The same for both: no variable differs (COLOR, no variable a task inherits, reaches neither; a tfdist one does).
    env = dict(os.environ, PYTHONPATH=str(lib), COLOR="blue", TFDIST_COLOR="green")
    warm_from_zip = ("import json, sys; sys.path.insert(0, sys.argv[1]); from tfdist import _supervisor; "
                     "print(json.dumps(_supervisor.warm(sys.argv[2], sys.executable, ['decimal'])))")
    warmed = subprocess.run([sys.executable, "-c", warm_from_zip, str(payload), task_dir], env=env, capture_output=True,
                            text=True, timeout=60, check=True)
    warm = json.loads(warmed.stdout)
    payload.unlink()

    launched = subprocess.run([sys.executable, "-m", "tfdist._supervisor", "start", "--name", "job/chief-0", "--dir",
                               task_dir, "--env-from-file", "TF_CONFIG=" + tf_config, "--", sys.executable, script, "3"],
                              env=env, capture_output=True, text=True, timeout=60, check=True)

    assert json.loads(launched.stdout)["pid"] == warm["pid"]
    status = ended(task_dir)
    assert (status["returncode"], status["reason"], status["pid"]) == (3, "exited", warm["pid"])
    seen, log = report(task_dir)
    assert seen["warm_module_loaded"] is True and seen["argv"] == [script, "3"]
    assert (seen["color"], seen["tfdist_color"]) == (None, "green")
    assert "warm start: decimal imported since" in log


def test_a_warm_task_is_stopped_like_a_cold_one(job, tmp_path):
    task_dir, _script, _tf_config = job
    (tmp_path / "serve.py").write_text("import time\nprint('serving', flush=True)\ntime.sleep(300)\n")
    warm = warm_ready(task_dir)
    started = _supervisor.start(task_dir, "job/ps-0", [sys.executable, str(tmp_path / "serve.py")],
                                env={"COLOR": "blue"})
    assert started["pid"] == warm["pid"]
    assert wait_until(lambda: "serving" in _task_folder.log_tail(task_dir))
    stopped = _supervisor.stop(task_dir, timeout=10)
    assert stopped["stopped"] is True and stopped["reason"] == _task_folder.STOPPED
    assert not alive(started["pid"]) and not alive(started["supervisor_pid"])


# ---------------------------------------------------------------- a warm host: one import for the tasks of a host

# It also asks for the temporary folder, which tempfile keeps from then on (as a module of TensorFlow may).
MARKER = "import os, tempfile\nPID = os.getpid()  # the process that imported it\nTMP = tempfile.gettempdir()\n"
HOSTED_SCRIPT = """
import json, os, signal, sys, tempfile, time
marker = sys.modules.get("marker")
print("report " + json.dumps({"imported_by": marker and marker.PID, "pid": os.getpid(), "task": os.environ["TFDIST_TASK"],
                             "session": os.getsid(0), "group": os.getpgid(0), "tmp": tempfile.gettempdir()}),
      flush=True)
if sys.argv[1] == "raise":
    raise RuntimeError("bad data")
if sys.argv[1] == "sleep":
    time.sleep(300)
sys.exit(int(sys.argv[1]))
"""


@pytest.fixture
def hosted(tmp_path):
    """(start a warm host for n tasks, warm a task folder through it); everything started is ended afterwards."""
    (tmp_path / "marker.py").write_text(MARKER)
    (tmp_path / "train.py").write_text(HOSTED_SCRIPT)
    env = {"PYTHONPATH": str(tmp_path)}
    socket_path = str(tmp_path / "warm-host.sock")
    folders = []

    def host(count):
        return _warm_start.warm_host(socket_path, sys.executable, count, modules=["marker"], env=env)

    def warm(name, host_socket=socket_path):
        folder = str(tmp_path / "tasks" / name)
        folders.append(folder)
        (tmp_path / ("%s.env" % name)).write_text("TFDIST_TASK=%s\n" % name)
        return folder, _supervisor.warm(folder, sys.executable, modules=["marker"], env=env,
                                        env_file=str(tmp_path / ("%s.env" % name)), host=host_socket)

    def start(folder, *args):
        name = os.path.basename(folder)
        return _supervisor.start(folder, "job/" + name, [sys.executable, str(tmp_path / "train.py"), *args], env=env,
                                 env_file=str(tmp_path / ("%s.env" % name)))

    yield host, warm, start
    for folder in folders:
        _warm_start.stop_warm(folder)
        _supervisor.stop(folder)


def test_the_tasks_of_a_host_share_one_import_and_keep_their_own_records(hosted, tmp_path):
    host, warm, start = hosted
    host_pid = host(3)
    folders = [warm(name)[0] for name in ("ps-0", "worker-0", "chief-0")]
    records = [_json_files.read_json(os.path.join(folder, _warm_start.WARM_FILE)) for folder in folders]
    assert [record["host"] for record in records] == [str(tmp_path / "warm-host.sock")] * 3

    started = [start(folders[0], "0"), start(folders[1], "raise"), start(folders[2], "3")]

    statuses = [ended(folder) for folder in folders]
    assert [(status["returncode"], status["reason"]) for status in statuses] == [(0, "exited"), (1, "exited"),
                                                                                 (3, "exited")]
    assert [status["pid"] for status in statuses] == [answer["pid"] for answer in started]
    reports = [report(folder)[0] for folder in folders]
    # One import, by the host, for all three: each task ran in a fork of it, under its own environment.
    assert [seen["imported_by"] for seen in reports] == [host_pid] * 3
    assert [seen["task"] for seen in reports] == ["ps-0", "worker-0", "chief-0"]
    # Each has its own temporary folder, though the host's import fixed another one, and it went with the task.
    assert [seen["tmp"] for seen in reports] == [os.path.join(folder, "tmp") for folder in folders]
    assert not any(os.path.exists(os.path.join(folder, "tmp")) for folder in folders)
    assert len({seen["pid"] for seen in reports}) == 3
    # Each task is a process group of its own (a stop signals the group), all in the host's one session: the
    # scheduler shares the CPU between sessions, and tasks in sessions of their own trained about 5 % slower.
    assert [seen["group"] for seen in reports] == [status["pid"] for status in statuses]
    assert {seen["session"] for seen in reports} == {host_pid}
    assert "RuntimeError: bad data" in _task_folder.log_tail(folders[1])
    # The host ends once it has forked the Pythons it was started for, and takes its socket along.
    assert wait_until(lambda: not alive(host_pid) and not (tmp_path / "warm-host.sock").exists())


def test_a_hosted_task_is_stopped_or_killed_as_a_cold_one_would_be(hosted):
    host, warm, start = hosted
    host(2)
    served, killed = warm("ps-0")[0], warm("worker-0")[0]
    start(served, "sleep")
    start(killed, "sleep")
    assert wait_until(lambda: "report" in _task_folder.log_tail(served) and "report" in _task_folder.log_tail(killed))

    stopped = _supervisor.stop(served, timeout=10)
    assert stopped["stopped"] is True and stopped["reason"] == _task_folder.STOPPED
    assert not alive(stopped["pid"]) and not alive(stopped["supervisor_pid"])

    os.kill(report(killed)[0]["pid"], signal.SIGKILL)  # the task's Python itself, as the OOM killer would
    status = ended(killed)
    assert (status["returncode"], status["reason"]) == (-9, "killed by signal 9")
    assert _task_folder.failed(status)


def test_a_hosted_task_frozen_by_sigstop_is_seen_stopped_and_stops_at_once(hosted):
    host, warm, start = hosted
    host(1)
    folder = warm("chief-0")[0]
    started = start(folder, "sleep")
    assert wait_until(lambda: "report" in _task_folder.log_tail(folder))
    assert _task_folder.process_state(started["pid"]) == "running"

    # The task's Python only, a child of the process that leads its group (and waits for it).
    os.kill(report(folder)[0]["pid"], signal.SIGSTOP)
    assert wait_until(lambda: _task_folder.process_state(started["pid"]) == "stopped", timeout=5)

    stopped = _supervisor.stop(folder, timeout=60)
    assert stopped["stopped"] is True and stopped["reason"] == _task_folder.STOPPED
    assert "did not stop" not in _task_folder.log_tail(folder)  # no SIGKILL after the stop timeout was needed
    assert _task_folder.process_state(started["pid"]) is None


def test_a_task_whose_warm_host_is_gone_imports_on_its_own(hosted, tmp_path):
    _host, warm, start = hosted
    folder, answer = warm("chief-0", host_socket=str(tmp_path / "no-host.sock"))
    assert answer["hosted"] is False and alive(answer["pid"])
    start(folder, "0")
    status = ended(folder)
    assert (status["returncode"], status["reason"], status["pid"]) == (0, "exited", answer["pid"])
    seen, log = report(folder)
    assert seen["imported_by"] == answer["pid"] and "warm host" in open(os.path.join(folder, "warm.log")).read()
