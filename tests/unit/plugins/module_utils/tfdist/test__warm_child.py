"""The warm Python's program (module_utils/_warm_child.py), run as a warm start runs it: `python -c SOURCE MODULE...`
with a real Python, a module of the test's own standing in for TensorFlow (the serving of a warm host:
tests/runtime/test_warm_start.py)."""

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _warm_start
from processes import wait_until

# The task's script: what it reports tells where it ran and what it found imported.
SCRIPT = """
import json, os, sys
print("report " + json.dumps({"pid": os.getpid(), "argv": sys.argv, "name": __name__, "path0": sys.path[0],
                              "marker_imported": "marker" in sys.modules, "color": os.environ.get("COLOR")}))
sys.exit(int(sys.argv[1]))
"""
# The module the warm Python imports ahead: it leaves a file when it is imported.
MARKER = "import os\nopen(os.environ['MARKED'], 'w').close()\n"


@pytest.fixture
def warm(tmp_path):
    """warm(*modules) -> a warm Python importing them (a Popen); go(python, ...) hands it the task, its exit code."""
    (tmp_path / "marker.py").write_text(MARKER)
    (tmp_path / "job").mkdir()
    (tmp_path / "job" / "train.py").write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(tmp_path), MARKED=str(tmp_path / "marked"))
    started = []

    def start(*modules):
        python = subprocess.Popen(_warm_start.child_command(sys.executable, *modules), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=str(tmp_path), env=env)
        started.append(python)
        return python

    def go(python, code, cold=False, color="blue"):
        task = {"log": str(tmp_path / "task.log"), "cwd": str(tmp_path / "job"), "cold": cold,
                "command": [sys.executable, "train.py", str(code)], "env": dict(env, COLOR=color)}
        python.stdin.write(json.dumps(task).encode() + b"\n")
        python.stdin.close()
        return python.wait(timeout=60)

    start.go = go
    start.marked = tmp_path / "marked"
    start.log = tmp_path / "task.log"
    yield start
    for python in started:
        python.kill()
        python.wait()


def report(log):
    lines = [line for line in log.read_text().splitlines() if line.startswith("report ")]
    assert len(lines) == 1, log.read_text()
    return json.loads(lines[0][len("report "):])


def test_the_task_runs_in_the_python_that_imported_its_modules(warm, tmp_path):
    python = warm("marker")
    assert wait_until(warm.marked.exists)

    assert warm.go(python, 3) == 3

    seen = report(warm.log)
    assert seen == {"pid": python.pid, "argv": ["train.py", "3"], "name": "__main__", "path0": str(tmp_path / "job"),
                    "marker_imported": True, "color": "blue"}


@pytest.mark.parametrize("why", ["asked", "import-failed", "module-changed"])
def test_a_task_that_cannot_run_warm_starts_cold_in_the_same_process(warm, why):
    python = warm("marker", "no_such_module_here" if why == "import-failed" else "json")
    assert wait_until(warm.marked.exists)
    if why == "module-changed":
        with open(warm.marked.parent / "marker.py", "a") as module:
            module.write("CHANGED = True\n")  # a new version laid down since the import

    assert warm.go(python, 0, cold=why == "asked") == 0

    seen = report(warm.log)
    # exec: the same process, a fresh interpreter that imported nothing ahead, with the task's own environment.
    assert (seen["pid"], seen["marker_imported"], seen["color"]) == (python.pid, False, "blue")
    if why == "import-failed":
        assert b"warm import of no_such_module_here failed" in python.stdout.read()


def test_a_warm_python_that_is_never_given_a_task_ends(warm):
    python = warm("marker")
    python.stdin.close()
    assert python.wait(timeout=60) == 0
