# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""The tfdist supervisor: run one task (a TF task, an HDFS daemon) in the background and keep a record of it.

The training_task module starts and stops tasks with it (start(), stop(), warm()), and it runs as a command too (the
same CLI as the former tfdist-supervise script), from a node's copy of the package tfdist:

  python -m tfdist._supervisor start --name NAME --dir TASK_DIR [--env-file FILE]
                        [--env-from-file VAR=FILE ...] [--chdir DIR]
                        [--stop-when-gone HOST:PORT] [--gone-grace SECONDS] [--end-grace SECONDS]
                        [--never-seen-timeout SECONDS] [--stop-timeout SECONDS]
                        [--announce-end PORT [--announce-for SECONDS]]
                        -- CMD ARGS...
  python -m tfdist._supervisor stop --dir TASK_DIR [--timeout SECONDS]
  python -m tfdist._supervisor status --dir TASK_DIR

(from a checkout: python -m ansible_collections.tfdist.cluster.plugins.module_utils._supervisor, with the collection
on the Python path). `start` detaches a supervisor process (double fork, new session, stdin from /dev/null) that runs
CMD in its own process group with stdout and stderr appended to TASK_DIR/task.log, and answers once CMD is running.
What it keeps in TASK_DIR, and how a status reads it, is the task-folder protocol (_task_folder). A stop sends the
task's process group SIGTERM, then SIGCONT (a task frozen by SIGSTOP or a debugger handles the SIGTERM at once), and
SIGKILL after --stop-timeout seconds.

--stop-when-gone HOST:PORT is for TF servers (ps and worker tasks), which never exit on their own. The
supervisor probes the leader's port with a TCP connect (the coordinator of ParameterServerStrategy, TF 2.21, runs a
gRPC server on its cluster-spec port from the moment it connects to the cluster until its process ends) and stops
the task:
  - once the leader has announced the end of the job (--announce-end), after --end-grace seconds: returncode 0,
    reason "chief finished". Only then: a silent port alone is no end;
  - when the port, having answered, stays silent for --gone-grace seconds (default 60; an ordinary network blip is
    shorter) with no end announced: the leader crashed, or its node or network is gone. Returncode 75
    (_task_folder.UNREACHABLE_CODE), reason "leader unreachable for Ns" (N: the seconds it was silent), which
    _task_folder.failed() counts as a failure: the task did not finish its job;
  - when the port neither answers nor announces an end within --never-seen-timeout seconds: returncode 0, reason
    "chief never seen" (the server holds nothing of a job it never saw; the leader's own record tells how that went).
The process's own exit status is exit.json's exit_status.

--announce-end PORT is for the leader. A job can be over before a probe ever saw the leader's port (a short
job, or a server launched a little later than the leader), and its servers would then wait for
--never-seen-timeout. So once the leader has exited with code 0, its supervisor answers on the leader's own
port for --announce-for seconds with the line "tfdist-finished NAME": a server's probe that reads it counts
the leader as seen and gone. The task is not running meanwhile (exit.json is written first); `stop` and a
new `start` end the announcement at once.

--end-grace SECONDS: how long a task with --stop-when-gone goes on once the leader has announced the end of the
job (without it, --gone-grace since the port last answered). 0 is for a task that only serves (a parameter server, a worker of a
ParameterServerStrategy job): the job is done, nothing it does matters any more, and its host is free at once.
An evaluator's last evaluation, or a worker that ends its own loop, keeps --gone-grace.

A warm start (_warm_start): warm() starts the supervisor of a task ahead of its launch, with the task's Python
already importing the heavy modules (TensorFlow) and waiting; the next start() of that folder hands it the task.

A task whose job folder has a network namespace (_netns: a cluster on cloud=local) runs in it with its supervisor,
whose probes of the leader's port and end announcement stay inside; the task's environment is task_environment()'s
(_task_folder): what it needs, never the starting process's credentials.

Exit codes of the command: 0 success; 1 usage error or the task could not be started (message on
stderr); `status` and `stop` always print JSON.

Standard library only, imports relative to its package: it is shipped to the nodes with the package tfdist.
Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

from ._files import DIR_MODE, PRIVATE_UMASK
from ._json_files import now, read_json, remove, write_json, write_text
from ._netns import enter
from ._task_folder import (CHIEF_FINISHED, CHIEF_NEVER_SEEN, EXIT_FILE, LEADER_UNREACHABLE, LOG_NAME, PID_FILE,
                           STOPPED, SUPERVISOR_PID_FILE, TASK_FILE, UNREACHABLE_CODE, SupervisorError, alive,
                           group_alive, proc_starttime, signal_group, task_environment, task_status, task_tmp,
                           terminate_group, wait_gone)
from ._warm_child import set_title
from ._warm_start import (HOSTED_PID_WAIT, WARM_FILE, WARM_FOR, WARM_LOG, WARM_SOCKET, HostedChild, child_command,
                          claim, stop_warm)

PROG = "tfdist-supervise"
# Seconds the leader's port may stay silent before a server stops (--gone-grace): longer than a network blip.
GONE_GRACE = 60.0
# Seconds a task waits for a leader that never answered at all (--never-seen-timeout): a slow first install.
NEVER_SEEN_TIMEOUT = 1800.0
# Seconds a finished leader's supervisor keeps announcing the end to the servers (--announce-for).
ANNOUNCE_FOR = 60.0
# The first bytes a leader's supervisor sends once the job has finished (see --announce-end).
FINISHED = b"tfdist-finished"
# What ps and top show of a supervisor (its name, in top, is 15 bytes at most).
SUPERVISOR_COMM = PROG[:15]


def task_title(name):
    """What ps shows of a warm-started task (a cold one shows its command): `tfdist demo/worker-1`."""
    return "tfdist %s" % name


def supervisor_title(name):
    return "%s %s" % (PROG, name)


# ---------------------------------------------------------------- the leader's port


def tcp_answers(host, port, timeout=2.0):
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def probe_leader(host, port, timeout=2.0):
    """'up' (the port answers), 'finished' (the leader's supervisor announces the end) or 'down'."""
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as connection:
            # A TF server sends nothing we know, or nothing at all; the announcement comes as soon as the leader's
            # supervisor gets the CPU, which on a loaded host can take a while: read as "up", it would keep the
            # servers running until the announcement ends.
            connection.settimeout(timeout)
            try:
                return "finished" if connection.recv(len(FINISHED)).startswith(FINISHED) else "up"
            except OSError:
                return "up"
    except (OSError, ValueError):
        return "down"


def parse_host_port(value):
    """(host, port) of HOST:PORT ([v6]:PORT too); ValueError otherwise."""
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError("expected HOST:PORT, got %r" % value)
    return host.strip("[]"), int(port)


# ---------------------------------------------------------------- the supervisor process


def log_line(log, message):
    log.write("[%s] %s %s\n" % (PROG, time.strftime("%Y-%m-%dT%H:%M:%S%z"), message))
    log.flush()


class _Supervisor:
    """Runs in the detached process: starts the task, watches it, records its end."""

    def __init__(self, spec, env, log):
        self.spec = spec
        self.env = env
        self.log = log
        self.proc = None
        self.stop_reason = None  # set when we end the task ourselves
        self.stop_returncode = None
        self.kill_at = None
        self.quitting = False  # SIGTERM once the task has ended: leave at once

    def terminate(self, reason, returncode=None):
        """Ask the task's process group to end; SIGKILL follows after the timeout."""
        if self.stop_reason is None:
            self.stop_reason = reason
            self.stop_returncode = returncode
            self.kill_at = time.monotonic() + self.spec["stop_timeout"]
            log_line(self.log, "stopping task: %s" % reason)
            terminate_group(self.proc.pid)

    def on_sigterm(self, signum, frame):
        if self.proc.poll() is None:
            self.terminate(STOPPED, None)
        self.quitting = True

    def announce_end(self, port, seconds):
        """Answer FINISHED on the leader's port for `seconds` (see --announce-end)."""
        deadline = time.monotonic() + seconds
        server = None
        while server is None and not self.quitting and time.monotonic() < deadline:
            try:
                if socket.has_dualstack_ipv6():
                    server = socket.create_server(("", port), family=socket.AF_INET6, dualstack_ipv6=True)
                else:
                    server = socket.create_server(("", port))
            except OSError:
                time.sleep(0.5)  # the task's own server may hold the port for a moment longer
        if server is None:
            if not self.quitting:
                log_line(self.log, "could not announce the end of the job: port %d stayed busy" % port)
            return
        log_line(self.log, "announcing the end of the job on port %d for %ds" % (port, seconds))
        message = FINISHED + b" " + self.spec["name"].encode() + b"\n"
        with server:
            server.settimeout(0.5)
            while not self.quitting and time.monotonic() < deadline:
                try:
                    connection = server.accept()[0]
                except OSError:
                    continue
                with connection:
                    try:
                        connection.sendall(message)
                    except OSError:
                        pass

    def run(self, ready_fd):
        spec = self.spec
        task_dir, name, command = spec["dir"], spec["name"], spec["command"]
        log_line(self.log, "starting %s: %s" % (name, " ".join(command)))
        try:
            # pylint: disable-next=ansible-bad-function  # no AnsibleModule here: no run_command
            self.proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=self.log,
                stderr=subprocess.STDOUT,
                cwd=spec["chdir"] or task_dir,
                env=self.env,
                start_new_session=True,  # own process group: stop kills its children too
            )
        except OSError as e:
            log_line(self.log, "cannot start %s: %s" % (command[0], e))
            write_json(os.path.join(task_dir, EXIT_FILE),
                       {"returncode": 127, "finished_at": now(), "reason": "could not start: %s" % e})
            os.write(ready_fd, ("error: cannot start %s: %s" % (command[0], e)).encode())
            os.close(ready_fd)
            return 127

        def answer(message):
            os.write(ready_fd, message)
            os.close(ready_fd)

        self.record(answer)
        return self.watch()

    def record(self, answer, go=None):
        """Write the record of the running task, then (a warm start) let it go, then answer the caller."""
        spec = self.spec
        task_dir, name, command = spec["dir"], spec["name"], spec["command"]
        meta = {
            "name": name,
            "command": command,
            "pid": self.proc.pid,
            "pid_starttime": proc_starttime(self.proc.pid),
            "supervisor_pid": os.getpid(),
            "supervisor_starttime": proc_starttime(os.getpid()),
            "started_at": now(),
            "stop_when_gone": spec["stop_when_gone"],
        }
        write_text(os.path.join(task_dir, PID_FILE), "%d\n" % self.proc.pid)
        write_text(os.path.join(task_dir, SUPERVISOR_PID_FILE), "%d\n" % os.getpid())
        write_json(os.path.join(task_dir, TASK_FILE), meta)
        log_line(self.log, "%s runs as pid %d" % (name, self.proc.pid))
        if go is not None:
            go()
        answer(json.dumps({"started": True, "name": name, "pid": self.proc.pid,
                           "supervisor_pid": os.getpid()}).encode())

    def run_warm(self, ready_fd):
        """A warm start: the task's Python imports its modules and waits until start() hands it the task."""
        task_dir, warm = self.spec["dir"], self.spec["warm"]
        socket_path = os.path.join(task_dir, WARM_SOCKET)
        remove(socket_path)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            server.bind(socket_path)  # OSError for a folder path too long for a socket: no warm start there
            os.chmod(socket_path, 0o600)  # only this user may hand it a command
            server.listen(4)
            server.settimeout(0.5)
            self.proc = None
            if warm.get("host"):
                try:
                    self.proc = HostedChild(warm["host"], self.log)
                except OSError as e:
                    log_line(self.log, "warm host %s not reached (%s): importing here" % (warm["host"], e))
            if self.proc is None:
                # pylint: disable-next=ansible-bad-function  # no AnsibleModule here: no run_command
                self.proc = subprocess.Popen(warm["command"], stdin=subprocess.PIPE, stdout=self.log,
                                             stderr=subprocess.STDOUT, cwd=task_dir, env=self.env,
                                             start_new_session=True)
        except OSError as e:
            server.close()
            remove(socket_path)
            os.write(ready_fd, ("error: cannot start a warm %s: %s" % (warm["python"], e)).encode())
            os.close(ready_fd)
            return 1
        started = now()
        hosted = isinstance(self.proc, HostedChild)
        pid = None if hosted else self.proc.pid  # a hosted one has none until its host has imported the modules
        write_json(os.path.join(task_dir, WARM_FILE), {
            "python": warm["python"], "modules": list(warm["modules"]), "started_at": started,
            "pid": pid, "pid_starttime": pid and proc_starttime(pid), "host": warm.get("host") if hosted else None,
            "supervisor_pid": os.getpid(), "supervisor_starttime": proc_starttime(os.getpid())})
        os.write(ready_fd, json.dumps({"warm": True, "pid": pid, "supervisor_pid": os.getpid(),
                                       "hosted": hosted}).encode())
        os.close(ready_fd)

        def quit_warm(signum, frame):
            self.quitting = True

        signal.signal(signal.SIGTERM, quit_warm)
        signal.signal(signal.SIGINT, quit_warm)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        deadline = time.monotonic() + warm["for"]
        claimed = False
        try:
            while not claimed and not self.quitting and time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    connection = server.accept()[0]
                except OSError:
                    continue
                with connection:
                    claimed = self.hand_over(connection, started)
        finally:
            server.close()
            remove(socket_path)
            remove(os.path.join(task_dir, WARM_FILE))
            if not claimed and hosted:
                self.proc.abandon()
            elif not claimed:
                signal_group(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        return self.watch() if claimed else 0

    def hand_over(self, connection, warm_since):
        """start()'s request on the warm socket: become that task's supervisor. True once it runs."""
        connection.settimeout(10.0)
        request = b""
        while not request.endswith(b"\n"):
            chunk = connection.recv(65536)
            if not chunk:
                return False
            request += chunk
        request = json.loads(request.decode())
        spec, env = request["spec"], request["env"]
        modules = self.spec["warm"]["modules"]
        if isinstance(self.proc, HostedChild) and self.proc.wait_pid(HOSTED_PID_WAIT) is None:
            connection.sendall(b"error: the warm host did not start the task's Python")
            return False
        if self.proc.poll() is not None:
            connection.sendall(b"error: the warm Python has ended")
            return False
        # The environment the modules were imported with must be the task's, but for what the task reads later.
        differs = sorted(key for key in set(env) | set(self.env)
                         if key not in request["late"] and env.get(key) != self.env.get(key))
        self.spec, self.env = spec, env
        self.log = open(os.path.join(spec["dir"], LOG_NAME), "a", buffering=1)
        os.dup2(self.log.fileno(), 1)
        os.dup2(self.log.fileno(), 2)
        log_line(self.log, "starting %s: %s" % (spec["name"], " ".join(spec["command"])))
        if differs:
            log_line(self.log, "warm start not used, the environment differs in %s: starting cold" % ", ".join(differs))
        else:
            log_line(self.log, "warm start: %s imported since %.1fs" % (", ".join(modules), now() - warm_since))
        set_title(supervisor_title(spec["name"]), SUPERVISOR_COMM)
        go = json.dumps({"log": os.path.join(spec["dir"], LOG_NAME), "cwd": spec["chdir"] or spec["dir"],
                         "command": spec["command"], "env": env, "cold": bool(differs),
                         "title": task_title(spec["name"]), "name": spec["name"]}).encode() + b"\n"

        def let_go():
            try:
                self.proc.stdin.write(go)
                self.proc.stdin.close()
            except OSError:
                pass  # it has just ended: watch() records how

        self.record(connection.sendall, let_go)
        return True

    def watch(self):
        """Follow the running task to its end and record it (see --stop-when-gone and --announce-end)."""
        spec = self.spec
        task_dir = spec["dir"]
        if self.quitting:  # asked to stop while a warm start was being handed its task
            self.terminate(STOPPED, None)
        signal.signal(signal.SIGTERM, self.on_sigterm)
        signal.signal(signal.SIGINT, self.on_sigterm)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

        chief = parse_host_port(spec["stop_when_gone"]) if spec["stop_when_gone"] else None
        probe_interval = spec["probe_interval"]
        started = time.monotonic()
        seen_at = None  # last time the chief's port answered
        finished = False  # the chief's supervisor announced the end of the job
        end_at = None  # when a task with an end grace stops, once the end is announced
        next_probe = started
        while True:
            returncode = self.proc.poll()
            if returncode is not None:
                break
            moment = time.monotonic()
            if self.stop_reason is not None:
                if moment >= self.kill_at:
                    log_line(self.log, "task did not stop in %ss, sending SIGKILL" % spec["stop_timeout"])
                    signal_group(self.proc.pid, signal.SIGKILL)
                    self.kill_at = moment + 3600
            elif chief and moment >= next_probe:
                next_probe = moment + probe_interval
                answer = probe_leader(chief[0], chief[1], timeout=min(2.0, probe_interval))
                if answer == "finished" and not finished:
                    # Seen, and gone: the grace runs from now (or since it last answered).
                    log_line(self.log, "chief %s announces the end of the job" % spec["stop_when_gone"])
                    finished = True
                    # The end grace only for an end heard after the chief answered in this run: an announcement
                    # heard first may be the last run's, still on the port until the chief's relaunch ends it.
                    if spec.get("end_grace") is not None and seen_at is not None:
                        end_at = moment + spec["end_grace"]
                    seen_at = seen_at or moment
                if end_at is not None and moment >= end_at:
                    self.terminate(CHIEF_FINISHED, 0)
                elif answer == "up":
                    finished = False  # a chief that runs again (a relaunch): its end is still to come
                    if seen_at is None:
                        log_line(self.log, "chief %s answers" % spec["stop_when_gone"])
                    seen_at = time.monotonic()
                elif seen_at is not None and moment - seen_at >= spec["gone_grace"]:
                    if finished:
                        self.terminate(CHIEF_FINISHED, 0)
                    else:  # silent, and no end announced: a leader lost, not a job done
                        self.terminate("%s for %ds" % (LEADER_UNREACHABLE, round(moment - seen_at)), UNREACHABLE_CODE)
                elif seen_at is None and moment - started >= spec["never_seen_timeout"]:
                    self.terminate(CHIEF_NEVER_SEEN, 0)
            time.sleep(0.2)

        # Leftover children of the task (same process group) go too.
        if group_alive(self.proc.pid):
            terminate_group(self.proc.pid)
            wait_gone(lambda: group_alive(self.proc.pid), time.monotonic() + spec["stop_timeout"], every=0.1)
            signal_group(self.proc.pid, signal.SIGKILL)
        if spec.get("tmp"):
            shutil.rmtree(spec["tmp"], ignore_errors=True)

        if self.stop_reason is not None:
            reason = self.stop_reason
            recorded = self.stop_returncode if self.stop_returncode is not None else returncode
        elif returncode < 0:
            reason, recorded = "killed by signal %d" % abs(returncode), returncode
        else:
            reason, recorded = "exited", returncode
        # The log's last line before exit.json: whoever sees the task ended reads its whole log.
        log_line(self.log, "task ended: returncode %s (%s)" % (recorded, reason))
        write_json(os.path.join(task_dir, EXIT_FILE),
                   {"returncode": recorded, "exit_status": returncode, "finished_at": now(), "reason": reason})
        if spec["announce_end"] and reason == "exited" and recorded == 0:
            self.announce_end(spec["announce_end"], spec["announce_for"])
        return 0


def _daemonize_and_run(spec, env):
    """Double fork; the grandchild supervises. Returns its JSON answer in the calling process only."""
    sys.stdout.flush()
    sys.stderr.flush()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid > 0:
        os.close(write_fd)
        os.waitpid(pid, 0)
        chunks = []
        while True:
            chunk = os.read(read_fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(read_fd)
        message = b"".join(chunks).decode(errors="replace")
        if message.startswith("{"):
            return json.loads(message)
        message = message or "error: the supervisor exited before starting the task"
        raise SupervisorError(message[len("error: "):] if message.startswith("error: ") else message)

    # First child: into the cluster's network namespace if it has one (_netns: single-threaded, as a child after a fork
    # is), new session, then fork again so the supervisor can never get a terminal.
    os.close(read_fd)
    try:
        enter(spec["dir"])
    except SupervisorError as e:
        os.write(write_fd, ("error: %s" % e).encode())
        os._exit(1)
    os.setsid()
    if os.fork() > 0:
        os._exit(0)

    code = 1
    try:
        os.chdir("/")
        os.umask(PRIVATE_UMASK)  # what the task writes is its user's alone (_files)
        warm = spec.get("warm")
        log = open(os.path.join(spec["dir"], WARM_LOG if warm else LOG_NAME), "w" if warm else "a", buffering=1)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        # Close every inherited descriptor (e.g. Ansible's pipes) so callers do not wait on us.
        keep = {0, 1, 2, log.fileno(), write_fd}
        for fd in range(3, 1024):
            if fd not in keep:
                try:
                    os.close(fd)
                except OSError:
                    pass
        # A fork of the process that called start() or warm() (an Ansible module's Python): named for what it is now.
        set_title(supervisor_title(spec.get("name") or "warm %s" % spec["dir"]), SUPERVISOR_COMM)
        supervisor = _Supervisor(spec, env, log)
        code = supervisor.run_warm(write_fd) if warm else supervisor.run(write_fd)
    except BaseException as e:  # report anything to the waiting parent, then leave
        try:
            os.write(write_fd, ("error: supervisor failed: %r" % e).encode())
        except OSError:
            pass
    finally:
        os._exit(code)


# ---------------------------------------------------------------- what callers use


def start(task_dir, name, command, env=None, env_file=None, env_from_files=None, chdir=None, stop_when_gone=None,
          gone_grace=GONE_GRACE, never_seen_timeout=NEVER_SEEN_TIMEOUT, probe_interval=2.0, stop_timeout=10.0, announce_end=None,
          announce_for=ANNOUNCE_FOR, end_grace=None):
    """Start command under a detached supervisor; returns {started, name, pid, supervisor_pid}.

    The task's environment is this process's, then TMPDIR (the task's tmp folder, removed when it ends), then env
    (values never written anywhere), then env_file, then env_from_files ({VAR: FILE}, e.g. TF_CONFIG from
    tf_config.json). stop_when_gone: the leader's HOST:PORT, for a server (see the module's description); gone_grace:
    seconds its port may stay silent, no end announced, before the task is stopped as a failure. announce_end: a port
    to announce the end of the job on once the task has exited with code 0. end_grace: seconds the task goes on once
    the leader announced that end (None: gone_grace). Raises SupervisorError when the task runs already or cannot be
    started.
    """
    if not command:
        raise SupervisorError("no command given (put it after --)")
    if stop_when_gone:
        parse_host_port(stop_when_gone)
    os.makedirs(task_dir, exist_ok=True)
    task_dir = os.path.abspath(task_dir)
    current = task_status(task_dir)
    if current["running"]:
        raise SupervisorError("task %s in %s is already running (pid %s); stop it first"
                              % (current["name"], task_dir, current["pid"]))
    if current["supervisor_running"]:
        stop(task_dir)  # the last run's supervisor still announces its end, on the port this run needs

    task_env = task_environment(task_dir, env, env_file)
    try:
        for var, path in (env_from_files or {}).items():
            with open(path) as handle:
                task_env[var] = handle.read().strip()
    except OSError as e:
        raise SupervisorError(str(e))
    own_tmp = task_env["TMPDIR"] == task_tmp(task_dir)
    if own_tmp:  # emptied: what a killed run left there
        shutil.rmtree(task_env["TMPDIR"], ignore_errors=True)
        os.makedirs(task_env["TMPDIR"], mode=DIR_MODE)

    # A fresh record: stale files from the previous run must not describe this one.
    for file_name in (EXIT_FILE, TASK_FILE, PID_FILE, SUPERVISOR_PID_FILE):
        remove(os.path.join(task_dir, file_name))
    spec = {"dir": task_dir, "name": name, "command": list(command), "chdir": chdir,
            "stop_when_gone": stop_when_gone or None, "gone_grace": float(gone_grace),
            "end_grace": None if end_grace is None else float(end_grace),
            "never_seen_timeout": float(never_seen_timeout), "probe_interval": float(probe_interval),
            "stop_timeout": float(stop_timeout), "announce_end": int(announce_end) if announce_end else None,
            "announce_for": float(announce_for), "tmp": task_env["TMPDIR"] if own_tmp else None}
    claimed = claim(spec, task_env, late=sorted(env_from_files or {}))
    return claimed if claimed is not None else _daemonize_and_run(spec, task_env)


def warm(task_dir, python, modules=("tensorflow",), env=None, env_file=None, warm_for=WARM_FOR, host=None):
    """Start the Python of a task that is about to be launched, importing modules ahead of the launch.

    The next start() in task_dir with the command `python SCRIPT ARGS` (python: this very path) runs SCRIPT in that
    process (see _warm_start). env and env_file as in start(); the variables that start() sets from files
    (env_from_files, such as TF_CONFIG) may differ, as the task reads them after its imports.
    host: the socket of a warm host (_warm_start.warm_host()) that forks this Python with its modules imported
    already; one that cannot be reached is replaced by a Python of the task's own.
    Returns {warm, pid, supervisor_pid, hosted}; raises SupervisorError when it cannot start.
    """
    os.makedirs(task_dir, exist_ok=True)
    task_dir = os.path.abspath(task_dir)
    stop_warm(task_dir)
    warm_env = task_environment(task_dir, env, env_file)
    python = os.path.abspath(python)
    spec = {"dir": task_dir, "warm": {"python": python, "modules": list(modules), "for": float(warm_for),
                                      "host": host, "command": child_command(python, *modules)}}
    return _daemonize_and_run(spec, warm_env)


def stop(task_dir, timeout=15.0):
    """Stop the task and its supervisor (idempotent); returns the status after, with `stopped`.

    A task that has ended may still have its supervisor announcing the end of the job: that ends too.
    """
    task_dir = os.path.abspath(task_dir)
    meta = read_json(os.path.join(task_dir, TASK_FILE)) or {}
    before = task_status(task_dir)
    sup_pid, sup_starttime, pid = meta.get("supervisor_pid"), meta.get("supervisor_starttime"), meta.get("pid")
    deadline = time.monotonic() + timeout
    if alive(sup_pid, sup_starttime):
        os.kill(sup_pid, signal.SIGTERM)  # it stops the task and writes exit.json, or ends its announcement
        wait_gone(lambda: alive(sup_pid, sup_starttime), deadline, every=0.1)
    if before["running"] and pid and group_alive(pid):
        # No supervisor left (or it did not manage): end the process group ourselves.
        terminate_group(pid)
        wait_gone(lambda: group_alive(pid), deadline + 5, every=0.1)
        signal_group(pid, signal.SIGKILL)
    if alive(sup_pid, sup_starttime):
        os.kill(sup_pid, signal.SIGKILL)
    if not before["running"]:
        before["stopped"] = False
        return before
    time.sleep(0.05)
    if read_json(os.path.join(task_dir, EXIT_FILE)) is None:
        write_json(os.path.join(task_dir, EXIT_FILE), {"returncode": None, "finished_at": now(), "reason": STOPPED})
    after = task_status(task_dir)
    after["stopped"] = True
    return after


# ---------------------------------------------------------------- command line


def _print_json(data):
    sys.stdout.write(json.dumps(data, sort_keys=True) + "\n")
    sys.stdout.flush()


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    command = []
    if "--" in argv:
        split = argv.index("--")
        argv, command = argv[:split], argv[split + 1:]

    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n", 1)[0])
    sub = parser.add_subparsers(dest="action")
    sub.required = True
    start_parser = sub.add_parser("start", help="start a task in the background")
    start_parser.add_argument("--name", required=True)
    start_parser.add_argument("--dir", required=True, help="task directory (logs, pids, exit record)")
    start_parser.add_argument("--env-file", help="KEY=VALUE lines added to the task's environment")
    start_parser.add_argument("--env-from-file", action="append", default=[], metavar="VAR=FILE",
                              help="set VAR to the contents of FILE (e.g. TF_CONFIG=tf_config.json)")
    start_parser.add_argument("--chdir", help="working directory of the task (default: --dir)")
    start_parser.add_argument("--stop-when-gone", metavar="HOST:PORT", dest="stop_when_gone",
                              help="stop the task once this port answered and then stopped answering")
    start_parser.add_argument("--gone-grace", type=float, default=GONE_GRACE, metavar="SECONDS",
                              help="seconds the leader's port may stay silent, no end announced, before the task is "
                                   "stopped (reason 'leader unreachable for Ns')")
    start_parser.add_argument("--end-grace", type=float, metavar="SECONDS",
                              help="seconds the task goes on once the leader announced the end (default: --gone-grace)")
    start_parser.add_argument("--never-seen-timeout", type=float, default=NEVER_SEEN_TIMEOUT)
    start_parser.add_argument("--probe-interval", type=float, default=2.0)
    start_parser.add_argument("--stop-timeout", type=float, default=10.0,
                              help="seconds between SIGTERM (and SIGCONT, for a frozen task) and SIGKILL")
    start_parser.add_argument("--announce-end", type=int, metavar="PORT",
                              help="once the task exited with code 0, tell probes of this port the job finished")
    start_parser.add_argument("--announce-for", type=float, default=ANNOUNCE_FOR, metavar="SECONDS")
    stop_parser = sub.add_parser("stop", help="stop the task and its supervisor (idempotent)")
    stop_parser.add_argument("--dir", required=True)
    stop_parser.add_argument("--timeout", type=float, default=15.0)
    status_parser = sub.add_parser("status", help="print the task's state as JSON")
    status_parser.add_argument("--dir", required=True)

    args = parser.parse_args(argv)
    if args.action != "start":
        if command:
            parser.error("only start takes a command")
        if args.action == "stop":
            _print_json(stop(args.dir, args.timeout))
        else:
            _print_json(task_status(os.path.abspath(args.dir)))
        return 0

    if args.stop_when_gone:
        try:
            parse_host_port(args.stop_when_gone)
        except ValueError as e:
            parser.error(str(e))
    env_from_files = {}
    for item in args.env_from_file:
        var, sep, path = item.partition("=")
        if not sep or not var:
            sys.stderr.write("error: --env-from-file expects VAR=FILE, got %r\n" % item)
            return 1
        env_from_files[var] = path
    try:
        started = start(args.dir, args.name, command, env_file=args.env_file, env_from_files=env_from_files,
                        chdir=args.chdir, stop_when_gone=args.stop_when_gone, gone_grace=args.gone_grace,
                        never_seen_timeout=args.never_seen_timeout, probe_interval=args.probe_interval,
                        stop_timeout=args.stop_timeout, announce_end=args.announce_end,
                        announce_for=args.announce_for, end_grace=args.end_grace)
    except SupervisorError as e:
        sys.stderr.write("error: %s\n" % e)
        return 1
    _print_json(started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
