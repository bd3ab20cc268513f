# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""The idle guard: a cloud node whose job is not running and that has not heard from the controller for a while
powers itself off, so that a lost controller (Ctrl-C, a closed laptop) does not leave machines running up a bill.

One home for the idea: the heartbeat that every tfdist node module refreshes (heartbeat()), what counts as the
controller at work (ssh_work), the rule (idle_for), how a node powers itself off (power_off), how the guard is run
(ensure_started: a systemd service or a supervised process) and its loop (run). The idle_guard module lays this file
down with the node package tfdist in GUARD_DIR/lib and runs:

  python -m tfdist._idle_guard --dir GUARD_DIR

as a systemd service (UNIT_NAME, enabled, Restart=on-failure: it survives a reboot) where systemd is PID 1 and the
module can write the unit (root), and otherwise as a process under the tfdist supervisor, which a reboot ends (the
deploy starts it again after the roles that may reboot a node).

Files in GUARD_DIR (~/.tfdist/idle-guard of the user Ansible connects as):

  heartbeat      touched by every call of a tfdist node module: the controller was heard from then
  quiet-until    its time is the end of a silence the controller announced (heartbeat(quiet_seconds=N): a step
                 that runs nothing on this node, such as the replacement of lost nodes): heard from until then
  settings.json  idle_seconds, tasks_dir, poweroff_command; read again at every check, so a change needs no restart
  task.log       the guard's log (with the supervisor's task.json, exit.json, ...): why it powered the node off

The node is idle while no TF task (a folder chief-N, worker-N, ps-N or evaluator-N of tasks_dir whose supervisor
says it runs) runs. The controller is at work while an SSH session runs a command: any process that descends from
an sshd process of a connection (an sshd whose parent is an sshd: the listener has none above it) counts, whoever
it runs as (become and sudo included), whatever it is (a module, an apt or pip install, a sleep, a user's login
shell). An SSH connection kept open with nothing running in it (Ansible's ControlPersist) does not count, nor does
a process detached from its session and left to PID 1 (the guard itself, the TF tasks and daemons that the
supervisor starts, an Ansible async task): what the guard sees is what runs while it looks, every check. A command
whose controller vanished counts until sshd notices that the connection is gone.

It powers off once it has been idle, with the controller silent, for idle_seconds, counted from the latest of the
last heartbeat, the end of an announced silence, the last check that saw the controller at work, the guard's start
and the last moment a TF task ran: a job that ends while nobody watches leaves the controller idle_seconds to come
back for its results, and a controller that dies during an announced silence still gets the node powered off,
idle_seconds after that silence ends.

Powering off: `systemctl poweroff` where systemd runs, SIGTERM to PID 1 in a container without it (ending PID 1
stops the container), `shutdown -h now` elsewhere; through `sudo -n` when not root. The reason goes to task.log,
the kernel log (/dev/kmsg: a VM's console output) and PID 1's output (a container's `docker logs`).

Standard library only, imports relative to its package: it runs on the nodes as part of the package tfdist.
Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import argparse
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import time

from ._cluster import TASK_TYPES
from ._files import FILE_MODE, PACKAGE_NAME, lay_down, make_folder, package_root, write_file
from ._json_files import read_json, write_json
from ._supervisor import start, stop
from ._task_folder import task_status

HEARTBEAT = "heartbeat"
QUIET = "quiet-until"
SETTINGS = "settings.json"
NAME = "idle-guard"
# The folders of tasks_dir that hold TF tasks (TensorBoard and the HDFS daemons do not keep a node up).
TF_TASK_RE = re.compile(r"^(%s)-[0-9]+$" % "|".join(TASK_TYPES))
# Seconds between SIGTERM to PID 1 and SIGKILL to every other process, in a container.
PID1_GRACE = 15.0
# The longest silence the controller may announce (heartbeat's quiet_seconds): a day.
MAX_QUIET_SECONDS = 86400
# The names (/proc/PID/comm) of OpenSSH's server processes: the listener and, for each connection, sshd itself
# (its privileged and user parts) before OpenSSH 9.8, sshd-session (and sshd-auth) since.
SSHD_NAMES = frozenset(("sshd", "sshd-session", "sshd-auth"))
# Where systemd runs as PID 1 and the guard is root's: its service.
UNIT_NAME = "tfdist-idle-guard.service"
UNIT_DIR = "/etc/systemd/system"
# The guard's log in its folder: the supervisor's task.log, or the service's output.
LOG = "task.log"


# The guard's folder under its user's home (guard_dir).
HOME_FOLDER = ".tfdist/" + NAME
# The guard's copy of the package tfdist is in this folder of its own (the node runs of _node_run use it too).
LIB = "lib"


def guard_dir():
    """The guard's folder of the user this process runs as (its passwd home, whatever $HOME says)."""
    return os.path.join(pwd.getpwuid(os.geteuid()).pw_dir, HOME_FOLDER)


# ---------------------------------------------------------------- how the guard runs: a service or a process


def as_service(folder):
    """Whether the guard of folder runs as a systemd service here: systemd is PID 1, this process may write the unit
    (root), and folder is this user's guard_dir() (one service per machine; a guard elsewhere, a test's, does not
    touch it). Otherwise it runs under the tfdist supervisor, as its user's process."""
    return (os.path.isdir("/run/systemd/system") and os.access(UNIT_DIR, os.W_OK) and bool(shutil.which("systemctl"))
            and os.path.abspath(folder) == guard_dir())


def unit_text(python, folder):
    """The guard's systemd unit: the guard of folder, run by python from its copy of the package, started at boot,
    started again when it fails (not when it ends: it powered the node off, or its settings are gone)."""
    command = " ".join(_unit_word(word) for word in (python, "-m", "%s._idle_guard" % PACKAGE_NAME, "--dir", folder))
    return ("# Written by the tfdist.cluster.idle_guard module; state=absent removes it.\n"
            "[Unit]\n"
            "Description=tfdist idle guard: power off when no job runs and the controller has gone quiet\n"
            "\n"
            "[Service]\n"
            "Type=simple\n"
            "ExecStart=%s\n"
            "WorkingDirectory=%s\n"
            "StandardOutput=append:%s\n"
            "StandardError=inherit\n"
            "UMask=0077\n"
            "Restart=on-failure\n"
            "RestartSec=10\n"
            "\n"
            "[Install]\n"
            "WantedBy=multi-user.target\n"
            % (command, os.path.join(folder, LIB), os.path.join(folder, LOG)))


def _unit_word(word):
    # One word of a unit's command line, quoted as systemd reads it ("%" starts a specifier there).
    return '"%s"' % word.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")


def unit_path():
    return os.path.join(UNIT_DIR, UNIT_NAME)


def systemctl(*args):
    """Run systemctl; raises OSError with its message when it fails."""
    # pylint: disable-next=ansible-bad-function  # no AnsibleModule here: no run_command
    done = subprocess.run(["systemctl"] + list(args), capture_output=True, text=True, check=False, timeout=120)
    if done.returncode != 0:
        raise OSError("systemctl %s: %s" % (" ".join(args), (done.stderr or done.stdout).strip()))
    return done.stdout


def service_status():
    """{running, enabled, pid} of the guard's service."""
    # pylint: disable-next=ansible-bad-function  # no AnsibleModule here: no run_command
    shown = subprocess.run(["systemctl", "show", "--property=ActiveState,UnitFileState,MainPID", UNIT_NAME],
                           capture_output=True, text=True, check=False, timeout=120).stdout
    values = dict(line.split("=", 1) for line in shown.splitlines() if "=" in line)
    pid = int(values.get("MainPID") or 0)
    return {"running": values.get("ActiveState") == "active" and pid > 0,
            "enabled": values.get("UnitFileState") == "enabled", "pid": pid or None}


def read_text(path):
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return None


def guard_status(folder, unit):
    """{running, pid} of the guard of folder as it should run: unit (its unit's text) for a service, None for a
    process. A service counts only enabled, with that very unit, and with no supervised guard left beside it."""
    process = task_status(folder) if os.path.isdir(folder) else {"running": False, "pid": None}
    if unit is None:
        return {"running": process["running"], "pid": process["pid"]}
    service = service_status()
    as_asked = service["running"] and service["enabled"] and read_text(unit_path()) == unit and not process["running"]
    return {"running": as_asked, "pid": service["pid"]}


def ensure_started(options, folder, check_mode, package_files):
    """The idle_guard module's state=started: the guard runs in folder with the settings of options (the module's,
    tasks_dir expanded) and the package of package_files() (a callable: {path: content}, SHA256SUMS included), and
    the controller is heard from (for options' quiet_seconds more). Returns the module's result. Raises OSError or
    SupervisorError when it cannot start.

    The module runs it with the package of its payload; the idle_guard action has the node's python3 run it
    (_node_run's "idle_guard") with the guard's own copy of the package, or on a fresh node with the package it sends
    on stdin: no module run.
    """
    settings = settings_for(options["idle_minutes"], options["tasks_dir"], options.get("poweroff_command"))
    unit = unit_text(sys.executable, folder) if as_service(folder) else None
    status = guard_status(folder, unit)
    lib = os.path.join(folder, LIB)
    new_settings = read_json(os.path.join(folder, SETTINGS)) != settings
    if not check_mode:
        make_folder(folder)  # its user's alone, ~/.tfdist too
        heartbeat(folder, options.get("quiet_seconds") or 0)
    written = lay_down(package_root(lib), package_files(), check_mode)[0]
    # New code (another version of the collection) needs a new process; new settings are read by the running one.
    restart = not status["running"] or bool(written)
    result = dict(changed=new_settings or restart, dir=folder, started=restart, running=True, settings=settings,
                  pid=None if restart else status["pid"], service=UNIT_NAME if unit else None)
    if check_mode:
        return result
    if new_settings:
        write_json(os.path.join(folder, SETTINGS), settings)
    if restart:
        result["pid"] = start_service(folder, unit) if unit else start_process(folder)
    return result


def start_process(folder):
    """(Re)start the guard under the tfdist supervisor; its pid."""
    if task_status(folder)["running"]:
        stop(folder)
    launched = start(folder, NAME, [sys.executable, "-m", "%s._idle_guard" % PACKAGE_NAME, "--dir", folder],
                     chdir=os.path.join(folder, LIB))
    return launched["pid"]


def start_service(folder, unit):
    """(Re)start the guard as the service of unit, enabled; its pid. A supervised guard of an earlier run ends."""
    stop(folder)
    written = read_text(unit_path()) != unit
    if written:
        write_file(unit_path(), unit.encode(), mode=0o644)  # systemd's configuration: readable, as its own units
    if not service_status()["enabled"]:
        systemctl("enable", UNIT_NAME)  # reloads systemd's configuration itself: one reload (0.3 to 0.6 s), not two
    elif written:
        systemctl("daemon-reload")
    systemctl("restart", UNIT_NAME)
    return service_status()["pid"]


def ensure_absent(folder, check_mode):
    """The idle_guard module's state=absent: the guard stopped, its service (if any, and if this user may) and its
    folder removed."""
    unit = as_service(folder) and os.path.exists(unit_path())
    exists = os.path.isdir(folder) or unit
    if exists and not check_mode:
        if unit:
            systemctl("disable", "--now", UNIT_NAME)
            os.remove(unit_path())
            systemctl("daemon-reload")
        if os.path.isdir(folder):
            stop(folder)
            shutil.rmtree(folder)
    return dict(changed=exists, dir=folder, started=False, running=False, pid=None, service=None)


def settings_for(idle_minutes, tasks_dir, poweroff_command):
    """settings.json for the idle_guard module's options."""
    return {"idle_seconds": round(float(idle_minutes) * 60, 3), "tasks_dir": tasks_dir,
            "poweroff_command": poweroff_command or None}


def node_options(options):
    """The idle_guard module's options as its module reads them on the node: tasks_dir with ~ and $VARS expanded."""
    return dict(options, tasks_dir=os.path.expanduser(os.path.expandvars(options["tasks_dir"])))


# ---------------------------------------------------------------- the controller: heard from, at work


def heartbeat(folder=None, quiet_seconds=0):
    """The controller is heard from now, and, with quiet_seconds, until that many seconds from now (it announces a
    silence: a step that runs nothing on this node). Nothing where no guard is set up. A later heartbeat never
    shortens an announced silence."""
    folder = folder or guard_dir()
    if not os.path.isdir(folder):
        return
    try:
        touch(os.path.join(folder, HEARTBEAT))
        if quiet_seconds > 0 and (quiet_until(folder) or 0.0) < time.time() + quiet_seconds:
            touch(os.path.join(folder, QUIET), time.time() + quiet_seconds)
    except OSError:
        pass  # a heartbeat that cannot be written must never fail the module that sends it


def touch(path, moment=None):
    """Give path (made if missing) the time moment (None: now)."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE))
    os.utime(path, None if moment is None else (moment, moment))


def last_heard(folder):
    """Time of the last heartbeat (seconds since the epoch), None without one."""
    return _mtime(os.path.join(folder, HEARTBEAT))


def quiet_until(folder):
    """The end of the silences the controller announced (seconds since the epoch), None without one."""
    return _mtime(os.path.join(folder, QUIET))


def _mtime(path):
    try:
        return os.path.getmtime(path)
    except OSError:
        return None


def read_processes():
    """{pid: (ppid, name)} of the processes this one can see (name: /proc/PID/comm, as the kernel keeps it), without
    the zombies (ended, not reaped yet)."""
    processes = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, "rb") as handle:
                stat = handle.read().decode(errors="replace")
        except OSError:
            continue  # ended meanwhile
        # The name (field 2) is in brackets and may contain spaces and brackets itself.
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 1:].split()
        if fields[0] != "Z":
            processes[int(entry)] = (int(fields[1]), name)
    return processes


def ssh_session(pid, processes):
    """Whether pid is the process of an SSH connection: an sshd (or sshd-session) whose parent is one too. The
    listener, whose parent is not (PID 1, or none where sshd is PID 1 in a container), is no connection."""
    ppid, name = processes[pid]
    return name in SSHD_NAMES and ppid in processes and processes[ppid][1] in SSHD_NAMES


def ssh_work(processes):
    """The pids of the processes that run in an SSH session (of read_processes()): the controller at work, or a
    user logged in. sshd's own processes are not work: a connection kept open with nothing in it is idle."""
    work = []
    for pid, (ppid, name) in processes.items():
        if name in SSHD_NAMES:
            continue
        ancestor, steps = ppid, 0
        while ancestor in processes and steps < len(processes):  # steps: a table read while pids were reused
            if ssh_session(ancestor, processes):
                work.append(pid)
                break
            ancestor, steps = processes[ancestor][0], steps + 1
    return sorted(work)


def describe_work(processes, work, most=6):
    """What the processes of work are, for the log: their names, the first few."""
    names = [processes[pid][1] for pid in work]
    return ", ".join(names[:most]) + (" and %d more" % (len(names) - most) if len(names) > most else "")


# ---------------------------------------------------------------- the rule


def tf_tasks(tasks_dir):
    """(names of the TF tasks under tasks_dir that run now, the time the last ended one ended or None)."""
    try:
        names = sorted(name for name in os.listdir(tasks_dir) if TF_TASK_RE.match(name))
    except OSError:
        return [], None
    running, ended = [], []
    for name in names:
        status = task_status(os.path.join(tasks_dir, name))
        if status["running"]:
            running.append(name)
        elif status["finished_at"] is not None:
            ended.append(status["finished_at"])
    return running, max(ended) if ended else None


def latest(*moments):
    """The latest of moments (seconds since the epoch; None: never), None when there is none."""
    return max((moment for moment in moments if moment is not None), default=None)


def idle_for(now, started, *moments):
    """Seconds the node has been idle with the controller silent: since the latest of the guard's start and moments
    (the last heartbeat, the end of an announced silence, the last time the controller was seen at work or a TF task
    ran; None: never). Negative while an announced silence lasts."""
    return now - latest(started, *moments)


def check_interval(idle_seconds):
    """Seconds between two checks: a tenth of the timeout, between 1 and 30."""
    return min(30.0, max(1.0, idle_seconds / 10.0))


# ---------------------------------------------------------------- powering off


def in_container():
    if os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv"):
        return True
    try:
        with open("/proc/1/environ", "rb") as handle:
            return b"container=" in handle.read()
    except OSError:
        return False


def power_off_command():
    """The command that halts this machine, or None in a container without systemd (end PID 1 instead)."""
    if os.path.isdir("/run/systemd/system"):
        command = ["systemctl", "poweroff"]
    elif in_container():
        return None
    else:
        command = ["shutdown", "-h", "now"]
    return command if os.geteuid() == 0 else ["sudo", "-n"] + command


def log(message):
    sys.stdout.write("[tfdist-idle-guard] %s %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%S%z"), message))
    sys.stdout.flush()


def announce(message):
    """Say why the node powers off wherever someone may look after it is gone (the guard's log, the kernel log,
    PID 1's output, syslog)."""
    log(message)
    line = "tfdist idle guard: %s\n" % message
    for path in ("/dev/kmsg", "/proc/1/fd/1"):
        try:
            with open(path, "w") as handle:
                handle.write(line)
        except OSError:
            pass
    if shutil.which("logger"):
        # pylint: disable-next=ansible-bad-function  # no AnsibleModule here: no run_command
        subprocess.run(["logger", "-t", "tfdist-idle-guard", message], check=False, timeout=10)


def end_pid_one():
    """Stop the container: SIGTERM to PID 1, then, if it is still there, SIGKILL to every other process."""
    if os.geteuid() == 0:
        os.kill(1, signal.SIGTERM)
    else:
        # pylint: disable-next=ansible-bad-function  # no AnsibleModule here: no run_command
        subprocess.run(["sudo", "-n", "kill", "-TERM", "1"], check=False, timeout=30)
    time.sleep(PID1_GRACE)
    log("PID 1 is still there after %ds: ending every process" % PID1_GRACE)
    os.kill(-1, signal.SIGKILL)


def power_off(command=None):
    """Run `command` (a list) or halt the machine; returns the command's exit code (None when PID 1 was ended)."""
    command = command or power_off_command()
    if command is None:
        end_pid_one()
        return None
    log("running %s" % " ".join(command))
    # pylint: disable-next=ansible-bad-function  # no AnsibleModule here: no run_command
    return subprocess.run(command, check=False, timeout=120).returncode


# ---------------------------------------------------------------- the guard


def why(now, settings, heard, quiet):
    """The reason for powering off, in the log."""
    silent = "last heard from %ds ago" % (now - heard) if heard else "never heard from"
    if quiet and (heard is None or quiet > heard):
        silent += ", after a silence it announced that ended %ds ago" % (now - quiet)
    return ("powering off: no TF task runs in %s, no SSH session runs a command, and the controller was %s (the "
            "timeout, tf_idle_minutes, is %gs)" % (settings["tasks_dir"], silent, float(settings["idle_seconds"])))


def run(folder):
    """Check every few seconds; power off once the node has been idle with the controller silent for the timeout.

    Returns when it has powered off (or run the settings' poweroff_command), or when its settings are gone.
    """
    started = time.time()
    busy_at = None  # the last moment a TF task ran
    worked_at = None  # the last check that saw an SSH session at work
    was_busy = was_working = None
    while True:
        settings = read_json(os.path.join(folder, SETTINGS))
        if not settings:
            log("no settings in %s: the guard ends" % folder)
            return 0
        idle_seconds = float(settings["idle_seconds"])
        running, ended_at = tf_tasks(settings["tasks_dir"])
        processes = read_processes()
        work = ssh_work(processes)
        now = time.time()
        # The clock starts when the last task ended (its supervisor's record), not at the check that saw it end.
        busy_at = now if running else max(busy_at or 0.0, ended_at or 0.0)
        worked_at = now if work else worked_at
        if bool(running) != was_busy:
            log("TF tasks running: %s" % (", ".join(running) if running else "none"))
            was_busy = bool(running)
        if bool(work) != was_working:
            log("SSH sessions at work: %s" % (describe_work(processes, work) if work else "none"))
            was_working = bool(work)
        heard = latest(last_heard(folder), worked_at)
        quiet = quiet_until(folder)
        if not running and idle_for(now, started, heard, quiet, busy_at) >= idle_seconds:
            message = why(now, settings, heard, quiet)
            # A command of one's own (a test's, a cloud call) gets the log line; halting the machine, every log.
            (log if settings.get("poweroff_command") else announce)(message)
            code = power_off(settings.get("poweroff_command"))
            log("power-off command ended: %s" % code)
            return 0
        time.sleep(check_interval(idle_seconds))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="tfdist-idle-guard", description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--dir", default=None, help="the guard's folder (default: ~/.tfdist/idle-guard)")
    args = parser.parse_args(argv)
    folder = os.path.abspath(args.dir or guard_dir())
    settings = read_json(os.path.join(folder, SETTINGS)) or {}
    log("watching: power off after %ss without a TF task running in %s, without an SSH session at work and without "
        "word from the controller" % (settings.get("idle_seconds"), settings.get("tasks_dir")))
    return run(folder)


if __name__ == "__main__":
    raise SystemExit(main())
