"""Helpers for tests that run the real playbooks."""

import os
import shutil
import socket
import subprocess
import sys
import uuid

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


def run_playbook(playbook, *extra_vars, env=None, args=(), timeout=900):
    """Run a playbook the way a user does (repo ansible.cfg, no -i) and return the result."""
    cmd = [os.path.join(BIN, "ansible-playbook"), playbook, *args]
    for var in extra_vars:
        cmd += ["-e", var]
    full_env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
                    PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    full_env.update(env or {})
    return subprocess.run(cmd, cwd=REPO, env=full_env, capture_output=True, text=True, timeout=timeout)


def run_inventory(*args):
    """`ansible-inventory` over the repo's inventory sources; returns its output."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"))
    out = subprocess.run([os.path.join(BIN, "ansible-inventory"), *args], cwd=REPO, env=env,
                         capture_output=True, text=True, check=True)
    return out.stdout


def free_port_block(count):
    """A base port with `count` free consecutive ports after it."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + count >= 65535:
            continue
        try:
            for port in range(base, base + count):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
    raise RuntimeError("no block of free ports")


def tf_processes(marker):
    """PIDs of processes whose command line mentions `marker` (a job folder)."""
    out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


@pytest.fixture
def cluster_name():
    """A cluster name of its own for each test; its artifacts go away afterwards."""
    name = f"t{uuid.uuid4().hex[:8]}"
    yield name
    run_playbook("playbooks/destroy.yml", f"cluster_name={name}")
    shutil.rmtree(os.path.join(REPO, "artifacts", name), ignore_errors=True)
