# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""A task's folder: the files the tfdist supervisor (_supervisor) keeps there, and what they say of the task.

One home for the task-folder protocol. The supervisor writes these files; the training_status module, the watch
(_job_state), the training_task module's plan (_task_plan) and the idle guard read them with task_status(). Files
in a task's folder:

  task.log        output of the task (and of the supervisor, lines "[tfdist-supervise] ...")
  task.pid        pid of the task (its process group id too)
  supervisor.pid  pid of the supervisor process
  task.json       name, command, pids (with their kernel start times, to tell a pid
                  reused by another process), started_at
  exit.json       written when the task has ended: returncode, finished_at, reason
  tmp/            the task's TMPDIR (unless its environment sets one), removed when it ends: a Python that leaves
                  by os._exit or a kill skips the clean-up of its temporary files (TensorFlow writes one for each
                  function it converts), which would otherwise pile up in the node's /tmp at every run

(and while a warm start waits for the task's launch, its own files: see _warm_start). Times are seconds since the
epoch (UTC). A record is read checked against the live processes (/proc): a task whose pid now names another process
has ended. process_state() tells whether the processes of a running task are frozen (stopped) or stuck in the kernel.

Standard library only, imports relative to its package: it is shipped to the nodes with the package tfdist.
Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import json
import os
import signal
import time

from ._json_files import read_json

LOG_NAME = "task.log"
PID_FILE = "task.pid"
SUPERVISOR_PID_FILE = "supervisor.pid"
TASK_FILE = "task.json"
EXIT_FILE = "exit.json"
TMP_DIR = "tmp"
# What a status says of a task that is not running (besides exited / killed by signal N).
NOT_STARTED = "not started"
DIED = "died without exit record"
STOPPED = "stopped"
# ... and of a server the supervisor stopped for its leader (_supervisor's --stop-when-gone): the leader announced the
# end of the job (returncode 0); it never answered (returncode 0); it went silent without announcing any end, the
# reason then ends with " for Ns" (returncode UNREACHABLE_CODE: a failure, the task did not finish its job).
CHIEF_FINISHED = "chief finished"
CHIEF_NEVER_SEEN = "chief never seen"
LEADER_UNREACHABLE = "leader unreachable"
UNREACHABLE_CODE = 75  # EX_TEMPFAIL of sysexits.h: a connection failed, a later run may do
# What process_state() says of a task's processes.
PROCESSES_STOPPED = "stopped"
PROCESSES_UNINTERRUPTIBLE = "uninterruptible"
PROCESSES_RUNNING = "running"


class SupervisorError(Exception):
    """A task that cannot be started; the message says why."""


# ---------------------------------------------------------------- processes


def proc_stat(pid):
    """The fields of /proc/PID/stat after the command's name (state, ppid, pgrp, ...), None when it cannot be read."""
    try:
        with open("/proc/%s/stat" % pid) as handle:
            stat = handle.read()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and brackets: split after it.
    return stat.rsplit(")", 1)[1].split()


def proc_starttime(pid):
    """Kernel start time of pid (clock ticks since boot), None if it does not run (or is a zombie)."""
    fields = proc_stat(int(pid))
    if fields is None:
        if not os.path.isdir("/proc/self"):
            # No procfs (not Linux): fall back to a plain existence check.
            try:
                os.kill(int(pid), 0)
                return 0
            except ProcessLookupError:
                return None
            except PermissionError:
                return 0
        return None
    if fields[0] == "Z":  # zombie: already dead, only not reaped yet
        return None
    return int(fields[19])


def alive(pid, starttime=None):
    """True if pid runs and is the same process as recorded (not a reused pid)."""
    if not pid:
        return False
    current = proc_starttime(int(pid))
    if current is None:
        return False
    return starttime is None or current == 0 or current == starttime


def groups_states(pgids):
    """{pgid: the states (/proc/PID/stat: R, S, D, T, t...) of its processes that have not ended} for each of pgids, in
    one pass over /proc; None without /proc.

    A zombie has ended: it only waits for a parent to reap it, which an orphan's init may do late (seconds, where PID 1
    is not a reaping init)."""
    try:
        entries = [entry for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return None
    found = {pgid: [] for pgid in pgids}
    for entry in entries:
        fields = proc_stat(entry)  # None: gone meanwhile
        if fields and fields[0] != "Z" and int(fields[2]) in found:
            found[int(fields[2])].append(fields[0])
    return found


def group_states(pgid):
    """The states of the group's processes that have not ended (see groups_states()); None without /proc."""
    found = groups_states([pgid])
    return None if found is None else found[pgid]


def group_alive(pgid):
    """Whether a process of the group still runs (a zombie does not, see group_states())."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    states = group_states(pgid)
    return True if states is None else bool(states)  # no /proc to tell a zombie from a process


def process_states(pgids):
    """{pgid: whether the processes of that task (pgid: its process group, the task's pid) can go on}, in one pass over
    /proc: PROCESSES_STOPPED when one of them is stopped (SIGSTOP, a debugger: state T or t), PROCESSES_UNINTERRUPTIBLE
    when one waits in the kernel where no signal reaches it (state D: a hung disk, NFS mount or device), else
    PROCESSES_RUNNING; None when none runs (or there is no /proc to tell). The whole group: a task of a warm host runs
    in a child of the group's leader."""
    found = groups_states([pgid for pgid in pgids if pgid]) or {}
    return {pgid: kernel_hold(found.get(pgid)) for pgid in pgids}


def kernel_hold(states):
    if not states:
        return None
    if any(state in "Tt" for state in states):
        return PROCESSES_STOPPED
    if "D" in states:
        return PROCESSES_UNINTERRUPTIBLE
    return PROCESSES_RUNNING


def process_state(pgid):
    """process_states() of one task."""
    return process_states([pgid])[pgid]


def signal_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def terminate_group(pgid):
    """SIGTERM to the group, then SIGCONT: a process frozen by SIGSTOP (or a debugger) handles the SIGTERM at once
    instead of at the SIGKILL that follows a stop's timeout."""
    signal_group(pgid, signal.SIGTERM)
    signal_group(pgid, signal.SIGCONT)


def wait_gone(running, deadline, every=0.05):
    """Wait until running() is false or time.monotonic() passes deadline; whether it is gone. A signal is sent, not
    waited for: a stop returns once what it signalled is gone (its memory, its port, its GPU)."""
    while running() and time.monotonic() < deadline:
        time.sleep(every)
    return not running()


# ---------------------------------------------------------------- what the folder says


def task_status(task_dir):
    """What the files in task_dir say, checked against the live processes."""
    meta = read_json(os.path.join(task_dir, TASK_FILE)) or {}
    exit_info = read_json(os.path.join(task_dir, EXIT_FILE))
    pid = meta.get("pid")
    sup_pid = meta.get("supervisor_pid")
    task_running = alive(pid, meta.get("pid_starttime"))
    sup_running = alive(sup_pid, meta.get("supervisor_starttime"))
    status = {
        "name": meta.get("name"),
        # A supervisor that has written exit.json only announces the end (see _supervisor's --announce-end).
        "running": task_running or (sup_running and exit_info is None),
        "task_running": task_running,
        "supervisor_running": sup_running,
        "pid": pid,
        "supervisor_pid": sup_pid,
        "started_at": meta.get("started_at"),
        "returncode": None,
        "reason": None,
        "finished_at": None,
    }
    if status["running"]:
        return status
    if exit_info is not None:
        status.update(
            returncode=exit_info.get("returncode"),
            reason=exit_info.get("reason"),
            finished_at=exit_info.get("finished_at"),
        )
    elif meta:
        status["reason"] = DIED
    else:
        status["reason"] = NOT_STARTED
    return status


def failed(status):
    """A task that ended with a non-zero code or died without a record (stopped on purpose is no failure)."""
    if status["running"] or status["reason"] in (NOT_STARTED, STOPPED):
        return False
    return status["reason"] == DIED or status["returncode"] != 0


def read_log_end(task_dir, size):
    """(text, end): the last `size` bytes of a task's task.log and the byte they end at (the end of a long log, read
    alone); OSError when it cannot be read."""
    with open(os.path.join(task_dir, LOG_NAME), "rb") as handle:
        end = handle.seek(0, os.SEEK_END)
        handle.seek(max(0, end - size))
        return handle.read(end - handle.tell()).decode(errors="replace"), end


def log_end(task_dir, size):
    """The last `size` bytes of a task's task.log as text, '' when it cannot be read."""
    try:
        return read_log_end(task_dir, size)[0]
    except OSError:
        return ""


def tail_bytes(lines):
    """How much of a log's end to read for its last `lines` lines (long lines aside)."""
    return 256 * max(lines, 1) + 4096


def log_tail(task_dir, lines=30):
    """The last lines of a task's task.log, reading only the end of a long log."""
    return "\n".join(log_end(task_dir, tail_bytes(lines)).splitlines()[-lines:])


# ---------------------------------------------------------------- what a task runs with


def read_env_file(path):
    """KEY=VALUE lines; blank lines and lines starting with # are skipped.

    The value is everything after the first '=' (no quoting, no expansion).
    """
    env = {}
    with open(path) as handle:
        for number, line in enumerate(handle, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            key, sep, value = line.partition("=")
            key = key.strip()
            if key.startswith("export "):
                key = key[len("export "):].strip()
            if not sep or not key:
                raise ValueError("%s:%d: expected KEY=VALUE" % (path, number))
            env[key] = value
    return env


def task_tmp(task_dir):
    """The task's own folder for temporary files, its TMPDIR unless its environment sets one."""
    return os.path.join(task_dir, TMP_DIR)


# What a task (and its warm start) inherits from the process that starts it: where its programs, libraries and GPUs
# are, who and where it is, its locale, and the TF and tfdist variables. Nothing else: the controller's cloud
# credentials (AWS_*, GOOGLE_*, AZURE_*, OS_*...) on cloud=local, a login session's variables (sudo's SUDO_COMMAND
# names Ansible's temporary module file: it would differ between two tasks). A task gets more through its own
# environment (training_env: the training_task module's env, and its env_file).
INHERITED_VARIABLES = frozenset(("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "LD_LIBRARY_PATH"))
INHERITED_PREFIXES = ("LC_", "TF_", "TFDIST_", "CUDA_")
# TF_ is Terraform's prefix too, and its tokens are credentials (TF_TOKEN_app_terraform_io).
TERRAFORM_PREFIXES = ("TF_VAR_", "TF_TOKEN_", "TF_CLI_", "TF_LOG", "TF_WORKSPACE", "TF_DATA_DIR", "TF_IN_AUTOMATION",
                      "TF_INPUT", "TF_REGISTRY_", "TF_PLUGIN_")


def inherited(name):
    """Whether a task inherits the variable `name` from the process that starts it (see INHERITED_VARIABLES)."""
    if name.startswith(TERRAFORM_PREFIXES):
        return False
    return name in INHERITED_VARIABLES or name.startswith(INHERITED_PREFIXES)


def extra_environment(value):
    """The tasks' extra environment (the modules' env option) as a mapping of strings.

    It comes as a mapping, or as the JSON text of one: the training role passes JSON, so that no_log hides that whole
    text in a module's results, not each value on its own (a value such as 1 would be masked in every name, number
    and time of the result). ValueError when it is neither.
    """
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else {}
    if not isinstance(value, dict):
        raise ValueError("env: must be a mapping of variable names to values (or its JSON), got %s"
                         % type(value).__name__)
    return {str(key): str(item) for key, item in value.items()}


def inherited_environment():
    """The environment a task (and its warm start) inherits from this process: the variables inherited() names."""
    return {key: value for key, value in os.environ.items() if inherited(key)}


def task_environment(task_dir, env=None, env_file=None):
    """A task's environment but for the variables read from files: inherited_environment(), the task's own folder for
    temporary files, then env, then env_file. The same for a task's warm start and its start (see _supervisor)."""
    task_env = dict(inherited_environment(), TMPDIR=task_tmp(task_dir))
    task_env.update({str(key): str(value) for key, value in (env or {}).items()})
    try:
        if env_file:
            task_env.update(read_env_file(env_file))
    except (OSError, ValueError) as e:
        raise SupervisorError(str(e))
    task_env.setdefault("PYTHONUNBUFFERED", "1")  # task.log shows Python output as it happens
    return task_env
