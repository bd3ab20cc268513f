# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""The holder of a local cluster's network namespace (see _netns), and the system calls that make and join one.

Run by _netns.ensure() as `python -c SOURCE tfdist-network-holder PORT...` (the source of this file, as a warm Python
runs _warm_child: the module's payload it came from is gone while it runs), in the cluster's job folder:

  - it listens on 127.0.0.1:PORT in this machine's network for each PORT (TensorBoard's), before anything else;
  - it makes a network namespace with loopback only: as root a network namespace alone (the tasks keep root's
    powers), else, or where root may not make one (a container without CAP_SYS_ADMIN), a user namespace too that
    maps the user to itself (the tasks keep their uid and files);
  - it writes the record network.json in the job folder (pid, kernel start time, kind, ports) and prints it;
  - it relays every connection to a PORT to 127.0.0.1:PORT inside the namespace;
  - it ends on SIGTERM, or once its record is removed or names another holder (destroy removes the job folder).
A failure prints {"error": ...} and exits 1. join() puts the calling process into a holder's namespace.

Standard library only and no imports of the collection: imported (never run) by _netns, which reads its source.
Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import signal
import socket
import struct
import sys
import threading
import time

MARKER = "tfdist-network-holder"
RECORD = "network.json"
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
# The two kinds of namespace, as the record names them.
USER = "user+net"
NET = "net"
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def _libc_call(name, *args):
    libc = ctypes.CDLL(None, use_errno=True)
    if getattr(libc, name)(*args) != 0:
        code = ctypes.get_errno()
        raise OSError(code, "%s: %s" % (name, os.strerror(code)))


def _write(path, text):
    with open(path, "w") as handle:
        handle.write(text)


def unshare(kind):
    """Move this (single-threaded) process into a new namespace of that kind, with loopback up."""
    if kind == USER:
        uid, gid = os.geteuid(), os.getegid()
        _libc_call("unshare", CLONE_NEWUSER | CLONE_NEWNET)
        _write("/proc/self/setgroups", "deny")  # required before an unprivileged gid_map
        _write("/proc/self/uid_map", "%d %d 1" % (uid, uid))
        _write("/proc/self/gid_map", "%d %d 1" % (gid, gid))
    else:
        _libc_call("unshare", CLONE_NEWNET)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        flags = struct.unpack("16sH", fcntl.ioctl(probe, SIOCGIFFLAGS, struct.pack("16sH22x", b"lo", 0))[:18])[1]
        fcntl.ioctl(probe, SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))


def kinds():
    """The kinds to try, best first: root needs no user namespace (and keeps its powers without one)."""
    return [NET, USER] if os.geteuid() == 0 else [USER]


def join(pid, kind):
    """Move this (single-threaded) process into the namespace held by pid: its user namespace first, if it has one."""
    names = [("user", CLONE_NEWUSER)] if kind == USER else []
    names.append(("net", CLONE_NEWNET))
    fds = [(os.open("/proc/%d/ns/%s" % (pid, name), os.O_RDONLY), flag) for name, flag in names]
    try:
        for fd, flag in fds:
            _libc_call("setns", fd, flag)
    finally:
        for fd, flag in fds:
            os.close(fd)


def starttime(pid):
    with open("/proc/%d/stat" % pid) as handle:
        return int(handle.read().rsplit(")", 1)[1].split()[19])


# ---------------------------------------------------------------- the holder


def relay(source, target):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, target):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def forward(listener, port):
    """Relay each connection to listener (this machine's loopback) to port on the namespace's loopback."""
    while True:
        outside = listener.accept()[0]
        try:
            inside = socket.create_connection(("127.0.0.1", port), timeout=10)  # made in the namespace
        except OSError:
            outside.close()
            continue
        inside.settimeout(None)
        for pair in ((outside, inside), (inside, outside)):
            threading.Thread(target=relay, args=pair, daemon=True).start()


def mine(record):
    try:
        with open(RECORD) as handle:
            return json.load(handle).get("pid") == record["pid"]
    except (OSError, ValueError, AttributeError):
        return False


def say(data):
    """One JSON line to the starter, who reads the holder's first line."""
    sys.stdout.write(json.dumps(data) + "\n")
    sys.stdout.flush()


def hold(ports):
    """The holder's life (see the description); its cwd is the job folder."""
    listeners = []
    try:
        for port in ports:
            listener = socket.socket()
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                listener.bind(("127.0.0.1", port))
            except OSError as error:
                say({"error": "port %d on 127.0.0.1: %s" % (port, error.strerror), "port": port})
                return 1
            listener.listen(16)
            listeners.append(listener)
        failures = []
        for kind in kinds():
            try:
                unshare(kind)
                break
            except OSError as error:
                failures.append("%s namespace: %s" % (kind, error.strerror or error))
        else:
            raise OSError(errno.EPERM, "; ".join(failures))
    except OSError as error:
        say({"error": error.strerror or str(error)})
        return 1
    record = {"pid": os.getpid(), "starttime": starttime(os.getpid()), "kind": kind, "forward": list(ports)}
    part = "%s.%d" % (RECORD, os.getpid())
    _write(part, json.dumps(record) + "\n")
    os.replace(part, RECORD)
    say(record)
    for listener, port in zip(listeners, ports):
        threading.Thread(target=forward, args=(listener, port), daemon=True).start()
    signal.signal(signal.SIGTERM, lambda signum, frame: os._exit(0))
    while mine(record):
        time.sleep(0.5)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] != [MARKER]:
        raise SystemExit("usage: python -c SOURCE %s PORT..." % MARKER)
    raise SystemExit(hold([int(port) for port in sys.argv[2:]]))
