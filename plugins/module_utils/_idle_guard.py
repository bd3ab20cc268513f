# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""The idle guard: a cloud node whose job is not running and that has not heard from the controller for a while
powers itself off, so that a lost controller (Ctrl-C, a closed laptop) does not leave machines running up a bill.

One home for the idea: the heartbeat that every tfdist node module refreshes (heartbeat()), the rule (idle_for),
how a node powers itself off (power_off), and the guard's loop (run). The idle_guard module lays this file down
with the node package tfdist in GUARD_DIR/lib and runs it under the tfdist supervisor:

  python -m tfdist._idle_guard --dir GUARD_DIR

Files in GUARD_DIR (~/.tfdist/idle-guard of the user Ansible connects as):

  heartbeat      touched by every call of a tfdist node module: the controller was heard from then
  settings.json  idle_seconds, tasks_dir, poweroff_command; read again at every check, so a change needs no restart
  task.log       the guard's log (with the supervisor's task.json, exit.json, ...): why it powered the node off

The node is idle while no TF task (a folder chief-N, worker-N, ps-N or evaluator-N of tasks_dir whose supervisor
says it runs) runs. It powers off once it has been idle, with the controller silent, for idle_seconds, counted
from the latest of the last heartbeat, the guard's start and the last moment a TF task ran: a job that ends while
nobody watches leaves the controller idle_seconds to come back for its results.

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
from ._files import PACKAGE_NAME, holds_checksums, lay_down, package_root
from ._json_files import read_json, write_json
from ._supervisor import start, stop
from ._task_folder import task_status

HEARTBEAT = "heartbeat"
SETTINGS = "settings.json"
NAME = "idle-guard"
# The folders of tasks_dir that hold TF tasks (TensorBoard and the HDFS daemons do not keep a node up).
TF_TASK_RE = re.compile(r"^(%s)-[0-9]+$" % "|".join(TASK_TYPES))
# Seconds between SIGTERM to PID 1 and SIGKILL to every other process, in a container.
PID1_GRACE = 15.0


# The guard's folder under its user's home (guard_dir); the idle_guard action's quick look starts there.
HOME_FOLDER = ".tfdist/" + NAME
# The guard's copy of the package tfdist is in this folder of its own (the looks of _look run it too).
LIB = "lib"


def guard_dir():
    """The guard's folder of the user this process runs as (its passwd home, whatever $HOME says)."""
    return os.path.join(pwd.getpwuid(os.geteuid()).pw_dir, HOME_FOLDER)


def ensure_started(options, folder, check_mode, package_files):
    """The idle_guard module's state=started: the guard runs in folder with the settings of options (the module's,
    tasks_dir expanded) and the package of package_files() (a callable: {path: content}, SHA256SUMS included).
    Returns the module's result. Raises OSError or SupervisorError when it cannot start.

    The module runs it with the package of its payload; on a fresh node the idle_guard action runs it from the
    package it sends on stdin (_look's "start-guard"), with no module run.
    """
    settings = settings_for(options["idle_minutes"], options["tasks_dir"], options.get("poweroff_command"))
    status = task_status(folder) if os.path.isdir(folder) else {"running": False, "pid": None}
    lib = os.path.join(folder, LIB)
    new_settings = read_json(os.path.join(folder, SETTINGS)) != settings
    if not check_mode:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        heartbeat(folder)
    written = lay_down(package_root(lib), package_files(), check_mode)[0]
    # New code (another version of the collection) needs a new process; new settings are read by the running one.
    restart = not status["running"] or bool(written)
    result = dict(changed=new_settings or restart, dir=folder, started=restart, running=True, settings=settings,
                  pid=None if restart else status["pid"])
    if check_mode:
        return result
    if new_settings:
        write_json(os.path.join(folder, SETTINGS), settings)
    if restart:
        if status["running"]:
            stop(folder)
        launched = start(folder, NAME, [sys.executable, "-m", "%s._idle_guard" % PACKAGE_NAME, "--dir", folder],
                         chdir=lib)
        result["pid"] = launched["pid"]
    return result


def ensure_absent(folder, check_mode):
    """The idle_guard module's state=absent: the guard stopped and its folder removed."""
    exists = os.path.isdir(folder)
    if exists and not check_mode:
        stop(folder)
        shutil.rmtree(folder)
    return dict(changed=exists, dir=folder, started=False, running=False, pid=None)


def settings_for(idle_minutes, tasks_dir, poweroff_command):
    """settings.json for the idle_guard module's options."""
    return {"idle_seconds": round(float(idle_minutes) * 60, 3), "tasks_dir": tasks_dir,
            "poweroff_command": poweroff_command or None}


def node_options(options):
    """The idle_guard module's options as its module reads them on the node: tasks_dir with ~ and $VARS expanded."""
    return dict(options, tasks_dir=os.path.expanduser(os.path.expandvars(options["tasks_dir"])))


def quick_look(options, checksums, folder=None):
    """{pid, dir, settings} of this user's guard when it runs with the settings of options (the idle_guard module's)
    and the package whose SHA256SUMS reads checksums, each of its files intact; the controller is then heard from.
    None when the module has something to do (the idle_guard action's look before it, on a re-run).
    """
    folder = folder or guard_dir()
    options = node_options(options)
    settings = settings_for(options["idle_minutes"], options["tasks_dir"], options.get("poweroff_command"))
    if read_json(os.path.join(folder, SETTINGS)) != settings:
        return None
    if not holds_checksums(package_root(os.path.join(folder, LIB)), checksums):
        return None
    status = task_status(folder)
    if not status["running"]:
        return None
    heartbeat(folder)
    return {"pid": status["pid"], "dir": folder, "settings": settings}


def heartbeat(folder=None):
    """The controller is heard from now: touch the heartbeat where a guard is set up (anywhere else, nothing)."""
    folder = folder or guard_dir()
    if not os.path.isdir(folder):
        return
    try:
        with open(os.path.join(folder, HEARTBEAT), "a"):
            pass
        os.utime(os.path.join(folder, HEARTBEAT))
    except OSError:
        pass  # a heartbeat that cannot be written must never fail the module that sends it


def last_heard(folder):
    """Time of the last heartbeat (seconds since the epoch), None without one."""
    try:
        return os.path.getmtime(os.path.join(folder, HEARTBEAT))
    except OSError:
        return None


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


def idle_for(now, started, heard=None, busy=None):
    """Seconds the node has been idle with the controller silent: since the latest of the guard's start, the last
    heartbeat and the last moment a TF task ran."""
    return now - max(moment for moment in (started, heard, busy) if moment is not None)


def check_interval(idle_seconds):
    """Seconds between two checks: a tenth of the timeout, between 1 and 30."""
    return min(30.0, max(1.0, idle_seconds / 10.0))


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
        subprocess.run(["logger", "-t", "tfdist-idle-guard", message], check=False, timeout=10)


def end_pid_one():
    """Stop the container: SIGTERM to PID 1, then, if it is still there, SIGKILL to every other process."""
    if os.geteuid() == 0:
        os.kill(1, signal.SIGTERM)
    else:
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
    return subprocess.run(command, check=False, timeout=120).returncode


def run(folder):
    """Check every few seconds; power off once the node has been idle with the controller silent for the timeout.

    Returns when it has powered off (or run the settings' poweroff_command), or when its settings are gone.
    """
    started = time.time()
    busy_at = None
    was_busy = None
    while True:
        settings = read_json(os.path.join(folder, SETTINGS))
        if not settings:
            log("no settings in %s: the guard ends" % folder)
            return 0
        idle_seconds = float(settings["idle_seconds"])
        running, ended_at = tf_tasks(settings["tasks_dir"])
        now = time.time()
        # The clock starts when the last task ended (its supervisor's record), not at the check that saw it end.
        busy_at = now if running else max(busy_at or 0.0, ended_at or 0.0)
        if bool(running) != was_busy:
            log("TF tasks running: %s" % (", ".join(running) if running else "none"))
            was_busy = bool(running)
        heard = last_heard(folder)
        if not running and idle_for(now, started, heard, busy_at) >= idle_seconds:
            message = ("powering off: no TF task runs in %s and the controller was %s (the timeout, tf_idle_minutes, "
                       "is %gs)" % (settings["tasks_dir"], "last heard from %ds ago" % (now - heard) if heard
                                    else "never heard from", idle_seconds))
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
    log("watching: power off after %ss without a TF task running in %s and without word from the controller"
        % (settings.get("idle_seconds"), settings.get("tasks_dir")))
    return run(folder)


if __name__ == "__main__":
    raise SystemExit(main())
