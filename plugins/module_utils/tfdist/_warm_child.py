# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""The warm Python of a warm start (see _warm_start): it imports a task's heavy modules before the task is launched.

Run by the task's own Python as `python -c SOURCE ARGS` (_warm_start.child_command: the source of this file, so that
it runs wherever this package was imported from, a folder, a zip or a module's payload, and whichever Python it is):

  python -c SOURCE MODULE...
      imports MODULEs, then reads one line on stdin: the task to run (JSON: log, cwd, command, env, cold). It runs
      `python SCRIPT ARGS` in this process, as that command would (runpy), unless the task must start cold (asked
      so, an import failed, or a module changed on disk since it was imported): it then execs the command.
  python -c SOURCE --serve FD COUNT SECONDS MODULE...
      a warm host: imports MODULEs once, then forks a warm Python for each of COUNT requests on the listening Unix
      socket FD, for up to SECONDS, or until the socket's file is removed. A request carries three descriptors: the
      log, the stdin to read the task from and a pipe for the exit code. The forked Python leads its own process
      group and runs the task in a child of its own, so that it can write that child's exit code, which only a
      parent can see.

What ps and top show of these processes (set_title(), also used by _supervisor for itself): `tfdist warm MODULE...`
while waiting, `tfdist warm host MODULE...` for a warm host, `tfdist leader of a warm task` for a forked Python that
leads a task's group, and the task's own title (`tfdist CLUSTER/TASK`, sent with the task) once it runs.

Standard library only and no imports of the collection: imported (never run) by _warm_start, which reads its source.
Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import socket
import sys
import time


# A process's name (its comm, /proc/PID/comm: what top shows) holds 15 bytes at most.
COMM_BYTES = 15


def set_title(title, short=None):
    """Show this process as `title`: its command line (/proc/PID/cmdline, what ps shows) and its name (comm, what top
    shows: the last 15 bytes of `short`, or of the title). Standard library only, so no setproctitle: the title
    is written over the arguments the process was started with (Python keeps its own copy of them), as far as they
    reach; the rest of that area is blanked. Whether it worked; a title that does not fit is cut.

    Through /proc/self files, not ctypes: it runs in a fork of a process that may have other threads (a module's
    Python, a test runner), where loading a library (dlopen) can wait forever on a lock another thread held.
    """
    try:
        with open("/proc/self/comm", "wb") as handle:
            handle.write((short or title).encode()[-COMM_BYTES:])
        # arg_start and arg_end (fields 48 and 49 of proc(5)): where the arguments lie in this process's memory.
        with open("/proc/self/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        start, end = int(fields[45]), int(fields[46])
        if end - start < 2:
            return False
        data = title.encode()[:end - start - 1] + b"\0"
        # The area's last byte not a NUL: the kernel shows the arguments up to the first NUL, the title alone.
        with open("/proc/self/mem", "r+b", buffering=0) as memory:
            memory.seek(start)
            memory.write(data + b" " * (end - start - len(data)))
        return True
    except (OSError, ValueError, IndexError):
        return False


def stamps(names):
    """{module: [inode, size, mtime]} of the imported modules' files, to tell a module changed on disk."""
    found = {}
    for name in names:
        try:
            info = os.stat(sys.modules[name].__file__)
            found[name] = [info.st_ino, info.st_size, info.st_mtime_ns]
        except (KeyError, AttributeError, TypeError, OSError):
            found[name] = None
    return found


def import_all(names):
    """Import each module; whether all of them imported (a failure is said on stderr, the task then starts cold)."""
    imported = True
    for name in names:
        try:
            __import__(name)
        except BaseException as error:
            imported = False
            sys.stderr.write("warm import of %s failed: %r\n" % (name, error))
    return imported


def run(names, imported, before):
    """Read the task on stdin and run it in this process (or exec it, cold); a closed stdin ends this Python."""
    line = sys.stdin.readline()
    if not line:
        os._exit(0)
    go = json.loads(line)
    sys.stdout.flush()
    sys.stderr.flush()
    os.umask(0o077)  # the task's files are its user's alone, as a supervised task's (_files.PRIVATE_UMASK)
    fd = os.open(go["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    fd = os.open(os.devnull, os.O_RDONLY)
    os.dup2(fd, 0)
    os.close(fd)
    os.chdir(go["cwd"])
    command, env = go["command"], go["env"]
    if go["cold"] or not imported or stamps(names) != before:
        os.execvpe(command[0], command, env)
    # Not one more anonymous `python -c ...`: ps and top tell the tasks apart (a cold start shows its command).
    if go.get("title"):
        set_title(go["title"], go.get("name"))
    os.environ.clear()
    os.environ.update(env)
    if "tempfile" in sys.modules:
        sys.modules["tempfile"].tempdir = None  # the task's TMPDIR, not the one the imports may have fixed
    sys.argv = command[1:]
    sys.path[0] = os.path.dirname(os.path.realpath(command[1]))
    runpy.run_path(command[1], run_name="__main__")


def lead(log, stdin, status):
    """In a warm Python forked by a warm host: lead a process group, fork the task's Python, report its exit code.

    Returns in that child only (which then runs the task); the leader leaves once it has written the code."""
    os.setpgid(0, 0)
    set_title("tfdist leader of a warm task", "tfdist leader")  # its child runs the task and takes the task's title
    os.dup2(stdin, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(stdin)
    os.close(log)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    task = os.fork()
    if task == 0:
        os.close(status)
        return
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, signal.SIG_IGN)
    code = os.waitstatus_to_exitcode(os.waitpid(task, 0)[1])
    try:
        os.write(status, b"%d\n" % code)
    finally:
        os._exit(0)


def serve(listener, count, seconds):
    """A warm host: fork a warm Python for each request on listener. Returns in a forked Python only."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    listener.settimeout(0.5)
    path, deadline = listener.getsockname(), time.monotonic() + seconds
    while count > 0 and time.monotonic() < deadline and os.path.exists(path):
        try:
            connection = listener.accept()[0]
            connection.settimeout(10.0)
            fds = socket.recv_fds(connection, 4096, 3)[1]
        except OSError:
            continue
        if len(fds) != 3:
            connection.close()
            for fd in fds:
                os.close(fd)
            continue
        count -= 1
        pid = os.fork()
        if pid == 0:
            listener.close()
            connection.close()
            lead(*fds)
            return
        for fd in fds:
            os.close(fd)
        try:
            connection.sendall(json.dumps({"pid": pid}).encode())
        except OSError:
            pass
        connection.close()
    try:
        os.remove(path)
    except OSError:
        pass
    os._exit(0)


def main(argv):
    """argv: the arguments after `python -c SOURCE` (see the description)."""
    host = argv[:1] == ["--serve"]
    names = argv[4:] if host else argv
    set_title("tfdist warm %s%s" % ("host " if host else "", " ".join(names)), "tfdist warm")
    imported = import_all(names)
    before = stamps(names)
    if host:
        serve(socket.socket(fileno=int(argv[1])), int(argv[2]), float(argv[3]))
    run(names, imported, before)


if __name__ == "__main__":
    main(sys.argv[1:])
