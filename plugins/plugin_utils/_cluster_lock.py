# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""One deploy or destroy of a cluster at a time on a controller: an flock on a file beside its inventory source.

Ansible runs each task in a worker process that ends with the task, so a lock taken there would go with it. The
lock is held instead by a small process of its own (this file, run as a script: standard library only) for the
ansible-playbook process that asked, the worker's parent: it takes the flock, writes who holds it into the file,
then waits for that playbook's process to end, and ends with it. The kernel releases an flock when the last
descriptor of it closes, so the lock goes with the playbook however that ends (done, failed, killed), and with the
holder if it is killed itself. A second task of the same playbook (a deploy's teardown runs destroy's tasks) finds
its own playbook named in the file and goes on.

A destroyed cluster leaves no lock file: once its playbook has ended, the holder removes the file, still holding the
lock, when nothing matches `keep_with` (the cluster's inventory source). A run that was waiting on that file finds it
gone once it gets the lock, and takes the lock of the path anew.

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import fcntl
import glob
import json
import os
import select
import subprocess
import sys
import time

POLL = 0.2
# The holder answers within this many seconds after its wait (a fresh Python's start is a few tenths).
ANSWER_GRACE = 30
COMMAND_CHARS = 300


def command_of(pid):
    """The command line of process `pid` as one string ('' where it cannot be read)."""
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as handle:
            words = handle.read().split(b'\0')
        text = ' '.join(word.decode(errors='replace') for word in words if word)
    except OSError:
        try:
            text = subprocess.run(['ps', '-o', 'command=', '-p', str(pid)], capture_output=True, text=True,
                                  check=False).stdout.strip()
        except OSError:
            text = ''
    return text if len(text) <= COMMAND_CHARS else text[:COMMAND_CHARS] + '...'


def read_holder(path):
    """Who holds (or last held) the lock, as its holder wrote it: {pid, command, holder_pid, since}; {} if unknown."""
    try:
        with open(path, encoding='utf-8') as handle:
            holder = json.loads(handle.read() or '{}')
    except (OSError, ValueError):
        return {}
    return holder if isinstance(holder, dict) else {}


# _task_folder.alive's rule (a zombie has ended), written again: this file also runs as the lock holder's own script
# (python _cluster_lock.py ...), with the standard library only and no collection loader to import it through.
def alive(pid):
    """Whether process `pid` still runs (a zombie, ended but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open('/proc/%d/stat' % pid, encoding='ascii', errors='replace') as handle:
            return handle.read().rpartition(')')[2].split()[0] != 'Z'
    except (OSError, IndexError):
        return True


def wait_for_end(pid):
    """Return once process `pid` has ended: at once through a pidfd where the kernel has them, else by polling."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    while alive(pid):
        if pidfd is not None:
            select.select([pidfd], [], [], 5)
        else:
            time.sleep(POLL)


def still_there(fd, path):
    """Whether the open file `fd` is still the one at `path` (a holder removes the file of a destroyed cluster)."""
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def hold(path, playbook_pid, wait, answer, keep_with=''):
    """Take the lock at `path` for process `playbook_pid`, waiting up to `wait` seconds; write one JSON answer to the
    file object `answer` ({state: locked, held (by this playbook already) or busy, holder}), then, once locked, hold
    the lock until that process ends, and remove the file if nothing then matches the pattern `keep_with`."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if still_there(fd, path):
                break
            os.close(fd)  # removed by the holder it waited for: the lock of the path is a new file's
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except BlockingIOError:
            holder = read_holder(path)
            state = 'held' if holder.get('pid') == playbook_pid else 'busy' if time.monotonic() >= deadline else None
            if state:
                answer.write(json.dumps({'state': state, 'holder': holder}) + '\n')
                return
            time.sleep(POLL)
    holder = {'pid': playbook_pid, 'command': command_of(playbook_pid), 'holder_pid': os.getpid(), 'since': time.time()}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(holder).encode(), 0)
    answer.write(json.dumps({'state': 'locked', 'holder': holder}) + '\n')
    answer.close()
    wait_for_end(playbook_pid)
    if keep_with and not glob.glob(keep_with):
        os.unlink(path)


def take(path, playbook_pid, wait, keep_with=''):
    """{state: locked, held or busy, holder}: the lock at `path` taken for process `playbook_pid` by a holder process
    of its own (hold), waiting up to `wait` seconds for another playbook to release it; the file is removed after
    that playbook if nothing matches the pattern `keep_with` then (hold)."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    reader, writer = os.pipe()
    with open(os.devnull, 'rb') as null_in, open(os.devnull, 'wb') as null_out:
        # A session of its own: the holder outlives this worker and takes no signal meant for its terminal.
        subprocess.Popen([sys.executable, os.path.abspath(__file__), path, str(playbook_pid), str(wait), str(writer),
                          keep_with],
                         stdin=null_in, stdout=null_out, stderr=null_out, pass_fds=(writer,), start_new_session=True,
                         close_fds=True)
    os.close(writer)
    with os.fdopen(reader, encoding='utf-8') as answers:
        ready = select.select([answers], [], [], wait + ANSWER_GRACE)[0]
        line = answers.readline() if ready else ''
    try:
        return json.loads(line)
    except ValueError:
        raise RuntimeError('the lock holder for %s gave no answer' % path) from None


def main(argv):
    path, playbook_pid, wait, answer_fd, keep_with = argv[1], int(argv[2]), float(argv[3]), int(argv[4]), argv[5]
    with os.fdopen(answer_fd, 'w', encoding='utf-8') as answer:
        hold(path, playbook_pid, wait, answer, keep_with)


if __name__ == '__main__':
    main(sys.argv)
