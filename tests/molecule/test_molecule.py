"""The roles' Molecule scenarios on root containers, one test each: `make test` runs every one of them.

Each test runs `molecule test -s SCENARIO` in the role's folder (destroy, syntax, create,
converge, idempotence, verify, destroy) against containers of the local Docker Engine.
The session fixtures of tests/docker_engine.py start the engine and build the node images once
(scripts/build-node-image.sh): there is no registry to pull from. Without an
engine the scenarios are skipped, and fail when CI is set.

The scenarios on nodes as clouds give them (test_molecule_vm.py, which runs them with run_scenario below) are each
role's main test: nodes of the stock image tfdist/node-vm (systemd as PID 1, cloud-init) made as cloud=docker-vm makes
them, reached over SSH as the login user debian, which becomes root (their create and destroy: tests/molecule/vm/).
The ones here cover what those do not: the root containers without an init system of cloud=docker and cloud=local.

Environment:
  TFDIST_MOLECULE_TIMEOUT   seconds one scenario may take (default 1200)
  TFDIST_PIP_CACHE          host pip cache mounted into the tensorflow scenario's node
                            (default: what `pip cache dir` says)
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import ansible_cli

REPO = Path(ansible_cli.REPO)
VENV_BIN = REPO / ".venv" / "bin"
TIMEOUT = int(os.environ.get("TFDIST_MOLECULE_TIMEOUT", "1200"))
TAIL_LINES = 150

# (role, scenario), cheapest first. Every scenario names its own containers and network
# (tfdist-molecule-*), and destroys them at its start and end.
SCENARIOS = [
    ("tensorflow", "default"),  # the role's own default: each node installs TensorFlow from the index
    ("hdfs", "default"),  # three nodes, the daemons under the collection's supervisor (no systemd)
]


# Molecule's step lines: "INFO     [default > converge] Executing" (older: "default ➜ converge: Executing").
STEP_LINE = re.compile(r"(?:\[(?:[\w.-]+) > (?P<a>\w+)\]|(?:[\w.-]+) \S+ (?P<b>\w+):) (?P<what>Executing|Executed)")
ERROR_LINE = re.compile(r"fatal: \[|FAILED! =>|\[ERROR\]|CRITICAL ")


def _tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join(text.splitlines()[-lines:])


def _failure_excerpt(text: str) -> str:
    """The lines around the first Ansible error (the end of the output is molecule's clean-up), then the end."""
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if ERROR_LINE.search(line)), None)
    if first is None:
        return _tail(text)
    around = lines[max(0, first - 40):first + 60]
    return "\n".join([*around, "[...]", *lines[-25:]])


class _StepClock:
    """Reads molecule's output line by line into the log and times each step (create, converge...)."""

    def __init__(self, stream, log):
        self.stream, self.log = stream, log
        self.steps: list[tuple[str, float]] = []
        self._current: tuple[str, float] | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        for line in self.stream:
            self.log.write(line)
            match = STEP_LINE.search(line)
            if not match:
                continue
            step, now = match.group("a") or match.group("b"), time.monotonic()
            if match.group("what") == "Executing":
                self._current = (step, now)
            elif self._current and self._current[0] == step:
                self.steps.append((step, now - self._current[1]))
                self._current = None
        self.log.flush()

    def summary(self) -> str:
        return ", ".join(f"{step} {seconds:.0f}s" for step, seconds in self.steps)


def _host_pip_cache() -> str:
    if os.environ.get("TFDIST_PIP_CACHE"):
        return os.environ["TFDIST_PIP_CACHE"]
    try:
        out = subprocess.run([sys.executable, "-m", "pip", "cache", "dir"], capture_output=True, text=True,
                             timeout=60, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    # `pip cache dir` fails when the cache is disabled: fall back to pip's default place.
    return out or str(Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pip")


def _molecule_env() -> dict[str, str]:
    # Molecule writes its own ansible.cfg: neither the project's nor the ANSIBLE_CONFIG the Makefile exports
    # may win (config=None). Plain text in logs and failure messages.
    env = ansible_cli.environment({"ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"),
                                   "TFDIST_PIP_CACHE": _host_pip_cache(), "NO_COLOR": "1", "PY_COLORS": "0"},
                                  config=None)
    env["PATH"] = os.pathsep.join([str(VENV_BIN), env["PATH"]])  # molecule of the project's venv
    return env


def _say(config, message: str) -> None:
    """A line on the terminal, also when pytest captures output."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None:
        print(message)
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line(message)


@pytest.mark.parametrize(("role", "scenario"), SCENARIOS, ids=[f"{r}-{s}" for r, s in SCENARIOS])
@pytest.mark.usefixtures("docker_engine", "docker_node_images")  # tests/docker_engine.py: skip or, under CI, fail
def test_molecule_scenario(role, scenario, tmp_path, pytestconfig):
    run_scenario(role, scenario, tmp_path, pytestconfig)


def run_scenario(role, scenario, tmp_path, pytestconfig):
    """`molecule test -s SCENARIO` in roles/ROLE, its steps timed on the terminal; fails the test as it failed."""
    role_dir = REPO / "roles" / role
    env = _molecule_env()
    log_path = tmp_path / f"molecule-{role}-{scenario}.log"
    started = time.monotonic()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(["molecule", "test", "-s", scenario], cwd=role_dir, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
        clock = _StepClock(proc.stdout, log)
        try:
            returncode = proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            returncode = None
        clock.thread.join(timeout=30)
    elapsed = time.monotonic() - started
    output = log_path.read_text(errors="replace")
    _say(pytestconfig, f"\nmolecule {role}/{scenario}: {elapsed:.0f}s ({clock.summary()}); log: {log_path}")

    if returncode is None:
        # Interrupted in the middle: its containers and network are still there.
        destroy = subprocess.run(["molecule", "destroy", "-s", scenario], cwd=role_dir, env=env,
                                 capture_output=True, timeout=300, check=False)
        cleaned = "its instances were destroyed" if destroy.returncode == 0 else "`molecule destroy` failed too"
        pytest.fail(f"molecule test -s {scenario} in roles/{role} did not finish within {TIMEOUT}s "
                    f"({cleaned}). Output:\n{_failure_excerpt(output)}", pytrace=False)
    assert returncode == 0, (
        f"molecule test -s {scenario} in roles/{role} exited with {returncode} after {elapsed:.0f}s "
        f"(full log: {log_path}):\n{_failure_excerpt(output)}"
    )
