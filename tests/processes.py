"""Process and port helpers shared by the tests (tests/ is on sys.path through tests/conftest.py)."""

import random
import socket
import subprocess
import time

PORT_TRIES = 50
LOWEST_PORT = 20000  # above the ports services are known by


def alive(pid):
    """Whether pid runs (a zombie counts as gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def tf_processes(marker):
    """PIDs of processes whose command line mentions `marker` (a job folder)."""
    # pgrep exits 1 when nothing matches: that is the answer [], not an error.
    out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, check=False)
    return [int(pid) for pid in out.stdout.split()]


def free_port_block(count):
    """A base port with `count` free consecutive ports after it, below the kernel's ephemeral range.

    Ports the kernel hands out (bind to 0) are also the local ports of outgoing connections: a job that binds the
    same ports again later (a restart, a rerun) could find one taken by a connection of another test.
    """
    first_ephemeral = ephemeral_port_range()[0]
    for attempt in range(PORT_TRIES):
        base = random.randrange(LOWEST_PORT, first_ephemeral - count)
        try:
            for port in range(base, base + count):
                for family, address in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
                    with socket.socket(family) as probe:
                        probe.bind((address, port))
            return base
        except OSError:
            continue
    raise RuntimeError("no block of %d free ports below %d" % (count, first_ephemeral))


def ephemeral_port_range():
    """(first, last) of the ports the kernel gives to outgoing connections."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as handle:
            first, last = handle.read().split()
        return int(first), int(last)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def wait_until(predicate, timeout=20.0):
    """Whether predicate() became true within timeout seconds (polled every 0.1 s)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def listening_ports():
    """The TCP ports something listens on in this process's network namespace (the machine's own, for a test), as
    `ss -ltn` shows them: /proc/net/tcp and tcp6, state 0A (LISTEN)."""
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        ports.update(int(row.split()[1].rsplit(":", 1)[1], 16) for row in rows if row.split()[3] == "0A")
    return ports


def process_environment(pid):
    """The environment process pid started with (/proc/PID/environ)."""
    with open("/proc/%d/environ" % pid, "rb") as f:
        return dict(item.decode(errors="replace").partition("=")[::2] for item in f.read().split(b"\0") if item)
