# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Warm starts: the Python of a task started ahead of its launch, with its heavy modules (TensorFlow) imported.

_supervisor.warm() starts the supervisor of a task ahead of its launch, with the task's Python (child_command(): the
program _warm_child) already importing the heavy modules and waiting. Its files in the task's folder:

  warm.json  the warm start's record: python, modules, pids (with their kernel start times), started_at, host
  warm.log   the output of the warm Python (and of its supervisor) until it is claimed
  warm.sock  where start() claims it (claim())

The next _supervisor.start() of that folder hands it the task instead of starting a new process; it then runs the
script in-process as `python SCRIPT ARGS` would, under the same record (task.log, task.json, exit.json) as a cold
start. When the warm Python cannot stand for a cold start (another interpreter, not a script, another environment,
modules changed on disk since they were imported), it execs the command itself. One not claimed within --warm-for
seconds ends; stop_warm() ends one at once.

A warm host: warm_host() starts one Python that imports the modules for several tasks of a host, and
_supervisor.warm(..., host=SOCKET) has it fork the task's Python (HostedChild), so that four tasks on one machine pay
one TensorFlow import instead of four. The forked Python leads the task's process group and runs the task in a child
of its own, whose exit code it passes to the supervisor: the record is a cold start's. TensorFlow's own log lines
show the host's pid, which TensorFlow noted when it was imported. The tasks stay in the warm host's session: Linux's
autogroup scheduler shares the CPU between sessions, not processes, and four TF tasks in four sessions of a 2-core
machine trained about 5 % slower than in one (as a shell that starts them by hand has them).

Standard library only, imports relative to its package: it is shipped to the nodes with the package tfdist.
Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import socket
import subprocess
import time

from . import _warm_child
from ._files import FILE_MODE
from ._json_files import read_json, remove
from ._netns import join, namespace_of
from ._task_folder import SupervisorError, alive, inherited_environment, signal_group, wait_gone

WARM_FILE = "warm.json"
WARM_LOG = "warm.log"
WARM_SOCKET = "warm.sock"
WARM_FOR = 300.0
# How long a claim waits for a warm host that is still importing to fork the task's Python.
HOSTED_PID_WAIT = 25.0


@functools.lru_cache(maxsize=None)
def child_program():
    """The source of _warm_child, which a warm Python runs with `python -c`. Read through its loader: this package may
    be imported from a folder, a zip or a module's payload that is gone by the time a warm start is claimed."""
    source = _warm_child.__loader__.get_source(_warm_child.__name__)
    if isinstance(source, bytes):  # Ansible's collection loader gives bytes
        source = source.decode("utf-8")
    if not source:
        raise SupervisorError("the source of %s cannot be read" % _warm_child.__name__)
    return source


def child_command(python, *args):
    """The command line of a warm Python (args: _warm_child's, e.g. the modules to import)."""
    return [python, "-c", child_program()] + [str(arg) for arg in args]


def warm_host(socket_path, python, count, modules=("tensorflow",), env=None, warm_for=WARM_FOR):
    """Start one Python that imports modules for `count` tasks of this host: _supervisor.warm(..., host=socket_path)
    forks it.

    Tasks on one host then pay one import instead of one each (a fork shares the imported modules). env: the
    environment it imports with; the tasks' own variables must only be read after their imports (see
    _supervisor.warm()). Its output goes to socket_path's name with .log. It ends once it has forked `count` Pythons,
    after warm_for seconds, or when its socket is removed. Returns its pid; raises SupervisorError when it cannot start.
    """
    socket_path = os.path.abspath(socket_path)
    remove(socket_path)
    namespace = namespace_of(os.path.dirname(socket_path))  # its tasks run in their job folder's (see _netns)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    host_env = inherited_environment()
    host_env.update({str(key): str(value) for key, value in (env or {}).items()})
    host_env.setdefault("PYTHONUNBUFFERED", "1")
    try:
        listener.bind(socket_path)  # OSError for a path too long for a socket
        os.chmod(socket_path, 0o600)
        listener.listen(count + 4)
        command = child_command(os.path.abspath(python), "--serve", listener.fileno(), int(count), float(warm_for),
                                *modules)
        # Its log is private as the tasks' files are (_files; the tasks it forks set their umask: _warm_child.run).
        log_path = os.path.splitext(socket_path)[0] + ".log"
        with os.fdopen(os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE), "w") as log:
            # pylint: disable-next=ansible-bad-function  # no AnsibleModule here: no run_command
            host = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    cwd=os.path.dirname(socket_path), env=host_env, start_new_session=True,
                                    pass_fds=[listener.fileno()],
                                    preexec_fn=(lambda: join(namespace)) if namespace else None)
    except (OSError, subprocess.SubprocessError) as e:
        remove(socket_path)
        raise SupervisorError("cannot start a warm host at %s: %s" % (socket_path, e))
    finally:
        listener.close()
    return host.pid


def claim(spec, env, late):
    """Hand the task (start()'s spec and environment; late: the variables it reads after its imports) to the warm start
    waiting in its folder; the supervisor's answer, or None to start it cold (the warm start is then ended)."""
    task_dir, command = spec["dir"], spec["command"]
    record = read_json(os.path.join(task_dir, WARM_FILE))
    if record is None:
        return None
    cwd = spec["chdir"] or task_dir
    usable = (alive(record.get("supervisor_pid"), record.get("supervisor_starttime")) and len(command) > 1
              and os.path.isabs(command[0]) and os.path.abspath(command[0]) == record.get("python")
              and not command[1].startswith("-") and os.path.isdir(cwd)
              and os.path.isfile(os.path.join(cwd, command[1])))
    answer = None
    if usable:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
                connection.settimeout(30.0)
                connection.connect(os.path.join(task_dir, WARM_SOCKET))
                connection.sendall(json.dumps({"spec": spec, "env": env, "late": late}).encode() + b"\n")
                chunks = []
                while True:
                    chunk = connection.recv(65536)
                    if not chunk:
                        break
                    chunks.append(chunk)
            reply = b"".join(chunks).decode(errors="replace")
            answer = json.loads(reply) if reply.startswith("{") else None
        except (OSError, ValueError):
            answer = None
    if answer is None:
        stop_warm(task_dir)
    return answer


def stop_warm(task_dir, timeout=10.0):
    """End the warm start waiting in task_dir, if any; True when there was one."""
    path = os.path.join(os.path.abspath(task_dir), WARM_FILE)
    record = read_json(path)
    if record is None:
        return False
    sup_pid, sup_starttime = record.get("supervisor_pid"), record.get("supervisor_starttime")
    if alive(sup_pid, sup_starttime):
        os.kill(sup_pid, signal.SIGTERM)  # it ends its Python and removes its files
        if not wait_gone(lambda: alive(sup_pid, sup_starttime), time.monotonic() + timeout):
            os.kill(sup_pid, signal.SIGKILL)
    pid, pid_starttime = record.get("pid"), record.get("pid_starttime")
    if alive(pid, pid_starttime):
        signal_group(pid, signal.SIGKILL)
        wait_gone(lambda: alive(pid, pid_starttime), time.monotonic() + timeout)
    remove(path)
    remove(os.path.join(os.path.dirname(path), WARM_SOCKET))
    return True


class HostedChild:
    """A warm Python forked by a warm host (see warm_host()), with what the supervisor uses of a Popen.

    Its pid is known once the host has imported its modules and forked it; poll() reads the exit code it reports.
    """

    def __init__(self, socket_path, log):
        stdin_read, stdin_write = os.pipe()
        status_read, status_write = os.pipe()
        self.connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.connection.connect(socket_path)
            socket.send_fds(self.connection, [b"warm"], [log.fileno(), stdin_read, status_write])
        except OSError:
            self.connection.close()
            os.close(stdin_write)
            os.close(status_read)
            raise
        finally:
            os.close(stdin_read)
            os.close(status_write)
        self.stdin = os.fdopen(stdin_write, "wb", buffering=0)
        self.status = status_read
        os.set_blocking(self.status, False)
        self.known_pid = None
        self.returncode = None
        self.reported = b""

    def wait_pid(self, timeout):
        """The pid, waiting up to timeout seconds for the host to fork it; None when it did not."""
        if self.known_pid is None and self.connection is not None:
            self.connection.settimeout(timeout)
            reply = b""
            try:
                while True:
                    chunk = self.connection.recv(256)
                    if not chunk:
                        break
                    reply += chunk
                self.known_pid = json.loads(reply.decode())["pid"]
            except (OSError, ValueError, KeyError):
                pass
            self.connection.close()
            self.connection = None
        return self.known_pid

    @property
    def pid(self):
        return self.wait_pid(HOSTED_PID_WAIT)

    def poll(self):
        if self.returncode is None:
            try:
                while True:
                    chunk = os.read(self.status, 64)
                    if not chunk:  # it has ended: a leader killed with its group (SIGKILL) wrote nothing
                        self.returncode = int(self.reported) if self.reported.strip() else -signal.SIGKILL
                        os.close(self.status)
                        break
                    self.reported += chunk
            except BlockingIOError:
                pass
        return self.returncode

    def wait(self):
        while self.poll() is None:
            time.sleep(0.05)
        return self.returncode

    def abandon(self):
        """End it without waiting: one not forked yet reads no task and ends by itself."""
        if self.known_pid is not None:
            signal_group(self.known_pid, signal.SIGKILL)
        self.stdin.close()
        if self.connection is not None:
            self.connection.close()
