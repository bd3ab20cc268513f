# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""A local cluster's network namespace: loopback only, so that nothing outside the cluster reaches its TF tasks.

TensorFlow's gRPC server listens on every interface whatever the cluster spec says, with no authentication. On
cloud=local every task of a cluster therefore runs in one network namespace of the cluster's, held by one process
(_netns_holder) started by ensure() in the job folder, which keeps the record network.json there. The tasks reach
each other on 127.0.0.1 inside it; no other process of this machine, and nothing outside it, reaches them.

Which processes join it is the job folder's to say: _supervisor's start() and warm() of a task folder (JOB/tasks/NAME)
and _warm_start's warm host (JOB/warm-host-N.sock) join the namespace whose record is in their job folder (enter()),
before they start anything. The supervisor's probes of the leader's port and its end announcement run inside it too;
the warm starts' Unix sockets are files, reached from anywhere. Other clouds' job folders hold no record: nothing
changes there.

Standard library only, imports relative to its package: it is shipped to the nodes with the package tfdist.
Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import time

from . import _netns_holder
from ._files import FILE_MODE, PRIVATE_UMASK
from ._json_files import read_json, remove
from ._task_folder import SupervisorError, alive, wait_gone

RECORD = _netns_holder.RECORD
LOG = "network.log"
# How far above a folder its job folder may be: JOB itself, JOB/warm-host-N.sock's folder, JOB/tasks/NAME.
JOB_LEVELS = 3


class NamespaceError(Exception):
    """No namespace could be made here (port None), or a port to forward is taken: the message says why."""

    def __init__(self, message, port=None):
        super().__init__(message)
        self.port = port


@functools.lru_cache(maxsize=None)
def holder_program():
    """The source of _netns_holder, read through its loader (see _warm_start.child_program)."""
    source = _netns_holder.__loader__.get_source(_netns_holder.__name__)
    return source.decode("utf-8") if isinstance(source, bytes) else source


def record_of(job_dir):
    """The namespace record of a job folder, with `running` (whether its holder still runs); None without one."""
    record = read_json(os.path.join(job_dir, RECORD))
    if not isinstance(record, dict) or not record.get("pid"):
        return None
    return dict(record, running=alive(record["pid"], record.get("starttime")))


def job_folder_of(folder):
    """The folder at or above `folder` (up to two levels) that holds a namespace record; None when none does."""
    folder = os.path.abspath(folder)
    for dummy in range(JOB_LEVELS):
        if os.path.isfile(os.path.join(folder, RECORD)):
            return folder
        folder = os.path.dirname(folder)
    return None


def namespace_of(folder):
    """The record of the namespace that folder's processes run in (its job folder's), None when it has none. Raises
    SupervisorError when its holder has ended: a task started outside would listen on every interface."""
    job_dir = job_folder_of(folder)
    record = job_dir and record_of(job_dir)
    if record and not record["running"]:
        raise SupervisorError("the cluster's network namespace is gone (its holder, pid %s, has ended; record %s): "
                              "run the deploy again" % (record["pid"], os.path.join(job_dir, RECORD)))
    return record or None


def join(record):
    """Move this process (single-threaded: a child after fork) into the namespace of record."""
    try:
        _netns_holder.join(record["pid"], record["kind"])
    except OSError as error:
        raise SupervisorError("cannot join the cluster's network namespace (holder pid %s): %s"
                              % (record["pid"], error)) from error


def enter(folder):
    """join() the namespace of folder's job folder, if it has one (see namespace_of())."""
    record = namespace_of(folder)
    if record:
        join(record)
    return record


def holders(job_dir):
    """Pids of the holders working in job_dir (its own, and one whose record is gone: it is ending)."""
    job_dir = os.path.abspath(job_dir)
    found = []
    for entry in os.listdir("/proc"):
        try:
            if not entry.isdigit() or os.readlink("/proc/%s/cwd" % entry) not in (job_dir, job_dir + " (deleted)"):
                continue
            with open("/proc/%s/cmdline" % entry, "rb") as handle:
                if _netns_holder.MARKER.encode() in handle.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def remove_namespace(job_dir, check_mode=False, timeout=10.0):
    """End the holders of job_dir and remove its record; whether there was anything to end or remove."""
    pids = holders(job_dir)
    path = os.path.join(job_dir, RECORD)
    found = bool(pids) or os.path.exists(path)
    if check_mode or not found:
        return found
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    wait_gone(lambda: any(alive(pid) for pid in pids), time.monotonic() + timeout)
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
    remove(path)
    return True


def ensure(job_dir, forward=(), python=None, check_mode=False, timeout=30.0):
    """Make sure a holder keeps the job folder's namespace, forwarding `forward` (ports of this machine's loopback to
    the same ports inside). Returns (changed, record); raises NamespaceError when none can be made on this machine."""
    forward = sorted(int(port) for port in forward)
    record = record_of(job_dir)
    if record and record["running"] and record.get("forward") == forward:
        return False, record
    if check_mode:
        return True, None
    remove_namespace(job_dir)
    os.makedirs(job_dir, mode=0o700, exist_ok=True)
    command = [python or sys.executable, "-c", holder_program(), _netns_holder.MARKER] + [str(port) for port in forward]
    # Its log and record are the job's user's alone, as the job's other files (_files).
    log_path = os.path.join(job_dir, LOG)
    with os.fdopen(os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE), "a") as log:
        # pylint: disable-next=ansible-bad-function  # no AnsibleModule here: no run_command
        holder = subprocess.Popen(command, cwd=job_dir, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                                  start_new_session=True, close_fds=True, umask=PRIVATE_UMASK)
    try:
        answer = holder.stdout.readline()
    finally:
        holder.stdout.close()
    try:
        said = json.loads(answer)
    except ValueError:
        holder.kill()
        said = {"error": "the holder ended without an answer (see %s)" % os.path.join(job_dir, LOG)}
    if "error" in said:
        holder.wait(timeout)
        raise NamespaceError(said["error"], said.get("port"))
    return True, dict(said, running=True)
