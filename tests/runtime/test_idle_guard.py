"""The idle guard as a real background process (started as the idle_guard module starts it), with a power-off
command of its own that leaves a mark instead of halting this machine."""

import json
import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import (
    _idle_guard, _node_run, _supervisor, _task_folder)
from ansible_collections.tfdist.cluster.plugins.module_utils._package import CHECKSUMS, package_files, package_zip
from file_modes import loose_modes
from processes import alive, wait_until

IDLE_SECONDS = 2.0


@pytest.fixture
def guard(tmp_path):
    """start(idle_seconds) -> the module's result, folder, tasks_dir, mark (the power-off's file): the guard in a folder
    of its own, stopped afterwards."""
    folder = str(tmp_path / "guard")
    tasks_dir = str(tmp_path / "job" / "tasks")
    mark = str(tmp_path / "powered-off")
    # Written whole then renamed: a test that sees the mark must read its time, never an empty file.
    command = [sys.executable, "-c", "import os, sys, time; open(sys.argv[1] + '.part', 'w').write(str(time.time()));"
               " os.replace(sys.argv[1] + '.part', sys.argv[1])", mark]

    def start(idle_seconds=IDLE_SECONDS, check_mode=False, quiet_seconds=0):
        params = {"idle_minutes": idle_seconds / 60.0, "tasks_dir": tasks_dir, "poweroff_command": command,
                  "quiet_seconds": quiet_seconds}
        return _idle_guard.ensure_started(params, folder, check_mode, package_files)

    if os.getpid() in _idle_guard.ssh_work(_idle_guard.read_processes()):
        pytest.skip("pytest runs in an SSH session: the rule under test keeps every guard of this machine up")

    yield SimpleNamespace(start=start, folder=folder, tasks_dir=tasks_dir, mark=mark)
    if os.path.isdir(folder):
        _supervisor.stop(folder)
    for name in os.listdir(tasks_dir) if os.path.isdir(tasks_dir) else []:
        _supervisor.stop(os.path.join(tasks_dir, name))


def powered_off_at(mark):
    with open(mark) as handle:
        return float(handle.read())


def log_of(folder):
    with open(os.path.join(folder, "task.log")) as handle:
        return handle.read()


@pytest.fixture
def sshd(tmp_path):
    """connect(line) -> Popen of an SSH connection's stand-in: a listener that runs a connection process that runs
    the shell line, both named sshd (/proc/PID/comm) as OpenSSH's are; open() -> one with nothing running in it.
    Ended afterwards."""
    for name, target in (("sh", "/bin/sh"), ("sleep", "/bin/sleep")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "sshd").symlink_to(target)
    shell, sleeper = str(tmp_path / "sh" / "sshd"), str(tmp_path / "sleep" / "sshd")
    started = []

    def spawn(*argv):
        started.append(subprocess.Popen(argv, start_new_session=True))
        return started[-1]

    def connect(line):
        # "; true": no shell may replace itself with its last command.
        return spawn(shell, "-c", '"$0" -c "$1"; true', shell, line + "; true")

    def open_idle():
        return spawn(shell, "-c", '"$0" 60; true', sleeper)

    yield SimpleNamespace(connect=connect, open=open_idle)
    for process in started:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # with what it left behind
        except ProcessLookupError:
            pass
        process.wait()


def children(processes, pid):
    return [child for child, (ppid, _name) in processes.items() if ppid == pid]


def run_task(tasks_dir, name):
    _supervisor.start(os.path.join(tasks_dir, name), name, ["sleep", "120"])


def test_an_idle_node_with_a_silent_controller_powers_off_after_the_timeout(guard):
    began = time.time()
    result = guard.start()
    assert result["changed"] and result["started"] and alive(result["pid"])
    assert wait_until(lambda: os.path.exists(guard.mark), timeout=15), log_of(guard.folder)
    waited = powered_off_at(guard.mark) - began
    assert IDLE_SECONDS <= waited <= IDLE_SECONDS + 3, waited
    log = log_of(guard.folder)
    assert "powering off: no TF task runs in" in log and "the timeout, tf_idle_minutes, is 2s" in log, log
    # Its job done, the guard ends (a real power-off ends everything anyway).
    assert wait_until(lambda: not alive(result["pid"]), timeout=10)


def test_a_running_tf_task_keeps_the_node_up_and_its_end_starts_the_clock(guard):
    run_task(guard.tasks_dir, "worker-0")
    run_task(guard.tasks_dir, "tensorboard")  # not a TF task: it does not keep a node up
    guard.start()
    time.sleep(IDLE_SECONDS * 2.5)
    assert not os.path.exists(guard.mark), log_of(guard.folder)
    assert "TF tasks running: worker-0" in log_of(guard.folder)

    # The task ends somewhere inside stop(), which also waits for its supervisor's record: the clock starts at
    # that record's end time, after the call began and before it returned (on a busy machine, long before),
    # whenever the guard's next check comes.
    stopping = time.time()
    _supervisor.stop(os.path.join(guard.tasks_dir, "worker-0"))
    stopped = time.time()
    assert wait_until(lambda: os.path.exists(guard.mark), timeout=15), log_of(guard.folder)
    assert IDLE_SECONDS - 0.1 <= powered_off_at(guard.mark) - stopping
    assert powered_off_at(guard.mark) - stopped <= IDLE_SECONDS + 3


def test_heartbeats_keep_the_node_up(guard):
    guard.start()
    until = time.time() + IDLE_SECONDS * 2.5
    while time.time() < until:
        _idle_guard.heartbeat(guard.folder)  # what every tfdist module does on the node
        time.sleep(0.3)
    assert not os.path.exists(guard.mark), log_of(guard.folder)
    last = time.time()
    assert wait_until(lambda: os.path.exists(guard.mark), timeout=15)
    assert powered_off_at(guard.mark) - last >= IDLE_SECONDS - 0.5


def test_a_second_call_changes_nothing_and_new_settings_need_no_restart(guard):
    first = guard.start(idle_seconds=20)
    assert first["changed"] and first["started"]
    # Its settings, heartbeat, log and copy of the package are its user's alone.
    assert wait_until(lambda: os.path.exists(os.path.join(guard.folder, "task.log")))
    assert loose_modes(guard.folder) == []
    again = guard.start(idle_seconds=20)
    assert not again["changed"] and not again["started"] and again["pid"] == first["pid"]
    # Check mode says what would change, and changes nothing.
    planned = guard.start(idle_seconds=1, check_mode=True)
    assert planned["changed"] and not planned["started"]
    with open(os.path.join(guard.folder, _idle_guard.SETTINGS)) as handle:
        assert json.load(handle)["idle_seconds"] == 20
    # A shorter timeout is taken up by the running guard, which then powers off.
    shorter = guard.start(idle_seconds=1)
    assert shorter["changed"] and not shorter["started"] and shorter["pid"] == first["pid"]
    assert wait_until(lambda: os.path.exists(guard.mark), timeout=10), log_of(guard.folder)


def test_absent_stops_the_guard_and_removes_its_folder(guard):
    pid = guard.start(idle_seconds=600)["pid"]
    gone = _idle_guard.ensure_absent(guard.folder, False)
    assert gone["changed"] and not os.path.exists(guard.folder) and not alive(pid)
    assert not _idle_guard.ensure_absent(guard.folder, False)["changed"]
    _idle_guard.heartbeat(guard.folder)  # no guard, no heartbeat file
    assert not os.path.exists(guard.folder) and not os.path.exists(guard.mark)


def run_on_node(guard, options, lib=None, checksums=None, package=b"", env=None):
    """(exit code, result or stderr) of the idle_guard action's raw command: the node's python3 runs the module's work
    (_node_run's "idle_guard") for the guard of guard.folder, from the copy in lib or the package's zip."""
    done = subprocess.run(_node_run.COMMAND, shell=True, capture_output=True, env=env, check=False, timeout=60,
                          input=_node_run.request("idle_guard", options, lib, checksums, guard.folder) + package)
    return done.returncode, json.loads(done.stdout.splitlines()[-1]) if done.returncode == 0 else done.stderr


def test_a_rerun_is_answered_by_the_guards_own_copy_as_the_module_would_and_only_by_this_version(guard):
    """What the idle_guard action's raw command runs on a re-run: the module's work from the guard's copy of the
    package, which answers only when that copy is this version's, intact (the module runs otherwise)."""
    checksums = package_files()[CHECKSUMS].decode()
    lib = os.path.join(guard.folder, "lib")
    started = guard.start(idle_seconds=600)
    options = {"idle_minutes": 10.0, "tasks_dir": guard.tasks_dir,
               "poweroff_command": started["settings"]["poweroff_command"]}
    heard = _idle_guard.last_heard(guard.folder)
    time.sleep(0.05)
    rc, found = run_on_node(guard, options, lib, checksums)
    assert rc == 0, found
    assert found == {"changed": False, "started": False, "running": True, "pid": started["pid"], "dir": guard.folder,
                     "settings": started["settings"], "service": None}
    assert _idle_guard.last_heard(guard.folder) > heard  # the run is word from the controller

    assert run_on_node(guard, options, lib, checksums.replace("0", "1", 1))[0] != 0  # other code: the module's turn
    program = os.path.join(lib, "tfdist", "_idle_guard.py")
    with open(program, "a") as handle:
        handle.write("# changed on the node\n")
    assert run_on_node(guard, options, lib, checksums)[0] != 0
    assert guard.start(idle_seconds=600)["started"]  # the module lays the file down again, and restarts the guard
    rc, found = run_on_node(guard, options, lib, checksums)
    assert rc == 0 and found["pid"] is not None and not found["changed"]
    # Other settings and a stopped guard: the module's work, done by the copy (the running guard reads new settings).
    rc, longer = run_on_node(guard, dict(options, idle_minutes=20.0), lib, checksums)
    assert rc == 0 and longer["changed"] and not longer["started"] and longer["pid"] == found["pid"]
    _supervisor.stop(guard.folder)
    rc, again = run_on_node(guard, options, lib, checksums)
    assert rc == 0 and again["started"] and alive(again["pid"])


def test_on_a_fresh_node_the_package_on_stdin_starts_the_guard_as_the_module_would(guard, tmp_path):
    """The idle_guard action's second raw command, where the guard's copy did not answer: the node's python3 runs the
    module's work from the package zip on stdin, which it lays down as the guard's copy, and leaves no zip behind."""
    options = {"idle_minutes": 10.0, "tasks_dir": guard.tasks_dir, "poweroff_command": ["true"]}
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = dict(os.environ, TMPDIR=str(temp))

    assert run_on_node(guard, options, package=b"not a zip", env=env)[0] != 0  # the module's turn
    assert not os.path.exists(os.path.join(guard.folder, _idle_guard.SETTINGS))
    rc, started = run_on_node(guard, options, package=package_zip(), env=env)
    assert rc == 0, started
    assert started["changed"] and started["started"] and started["settings"]["idle_seconds"] == 600
    time.sleep(0.5)  # the zip it ran from is gone: the guard must not need it
    assert alive(started["pid"]) and not os.listdir(temp)
    # The guard's processes keep no option on their command lines (the tasks folder names the job).
    status = _task_folder.task_status(guard.folder)
    assert status["supervisor_pid"]
    for pid in (started["pid"], status["supervisor_pid"]):
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            assert guard.tasks_dir.encode() not in handle.read()
    # What the module leaves: this version's copy, intact (the re-run's copy answers), nothing for the module.
    rc, found = run_on_node(guard, options, os.path.join(guard.folder, "lib"), package_files()[CHECKSUMS].decode())
    assert rc == 0 and found["pid"] == started["pid"] and not found["changed"]
    params = {"idle_minutes": 10.0, "tasks_dir": guard.tasks_dir, "poweroff_command": ["true"]}
    again = _idle_guard.ensure_started(params, guard.folder, False, package_files)
    assert not again["changed"] and again["pid"] == started["pid"]


def test_the_process_table_shows_what_runs_in_ssh_sessions_and_nothing_else(sshd, tmp_path):
    working = sshd.connect("sleep 60")
    idle = sshd.open()
    detached_pid_file = tmp_path / "detached.pid"
    # What the supervisor does for the guard and the TF tasks: a process left to PID 1 by a session that goes on.
    leaving = sshd.connect("sleep 60 >/dev/null 2>&1 & echo $! > %s" % detached_pid_file)
    assert leaving.wait(timeout=10) == 0
    detached = int(detached_pid_file.read_text())

    def tree(listener):
        processes = _idle_guard.read_processes()
        connections = children(processes, listener.pid)
        return processes, connections, [pid for pid in connections for pid in children(processes, pid)]

    assert wait_until(lambda: tree(working)[2] and tree(idle)[1])
    processes, connections, commands = tree(working)
    work = _idle_guard.ssh_work(processes)
    assert [processes[pid][1] for pid in commands] == ["sleep"] and set(commands) <= set(work)
    assert working.pid not in work and not set(connections) & set(work)  # sshd's own processes are not work
    idle_connections, idle_commands = tree(idle)[1:]
    assert idle_commands == [] and not {idle.pid, *idle_connections} & set(work)
    assert alive(detached) and detached not in work


def test_process_names_with_spaces_and_brackets_are_read_whole(tmp_path):
    odd = tmp_path / "a) (b c"
    odd.symlink_to("/bin/sleep")
    process = subprocess.Popen([str(odd), "30"])
    try:
        assert wait_until(lambda: _idle_guard.read_processes().get(process.pid) == (os.getpid(), "a) (b c"))
    finally:
        process.kill()
        process.wait()


def test_a_command_in_an_ssh_session_keeps_the_node_up_and_its_end_starts_the_clock(guard, sshd):
    guard.start()
    session = sshd.connect("sleep %d" % (IDLE_SECONDS * 3))  # an install that takes longer than the timeout
    assert session.wait(timeout=30) == 0
    ended = time.time()
    assert not os.path.exists(guard.mark), log_of(guard.folder)
    assert "SSH sessions at work: sleep" in log_of(guard.folder)
    assert wait_until(lambda: os.path.exists(guard.mark), timeout=15), log_of(guard.folder)
    # The guard's last check that saw the command came at most one check (1 s here) before it ended.
    assert powered_off_at(guard.mark) - ended >= IDLE_SECONDS - 1.0
    assert "no SSH session runs a command" in log_of(guard.folder)


def test_an_open_connection_with_nothing_in_it_does_not_keep_the_node_up(guard, sshd):
    sshd.open()  # Ansible's ControlPersist between two tasks
    began = time.time()
    guard.start()
    assert wait_until(lambda: os.path.exists(guard.mark), timeout=15), log_of(guard.folder)
    assert powered_off_at(guard.mark) - began <= IDLE_SECONDS + 3


def test_an_announced_silence_puts_the_power_off_at_its_end_plus_the_timeout(guard):
    began = time.time()
    quiet = 4
    result = guard.start(quiet_seconds=quiet)
    assert result["started"] and not result["service"]  # a test's guard is never the machine's service
    assert wait_until(lambda: os.path.exists(guard.mark), timeout=quiet + 15), log_of(guard.folder)
    assert powered_off_at(guard.mark) - began >= quiet + IDLE_SECONDS
    assert "after a silence it announced that ended" in log_of(guard.folder)
