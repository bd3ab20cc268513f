"""Warm starts (module_utils/_warm_start.py): the warm Python's command, and a folder that has no warm start waiting.

Warm starts with real processes, claimed by start(): tests/runtime/test_warm_start.py.
"""

import inspect
import sys

import pytest

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _warm_child, _warm_start


def test_a_warm_python_runs_the_program_of_warm_child_whatever_loaded_it():
    command = _warm_start.child_command("/opt/venv/bin/python", "--serve", 5, 3, 300.0, "tensorflow")

    assert command[:2] == ["/opt/venv/bin/python", "-c"]
    assert command[2] == inspect.getsource(_warm_child)  # its source, not its file: a payload may be gone by then
    assert command[3:] == ["--serve", "5", "3", "300.0", "tensorflow"]


def test_a_folder_without_a_warm_start_is_started_cold(tmp_path):
    spec = {"dir": str(tmp_path), "command": [sys.executable, "train.py"], "chdir": None}

    assert _warm_start.claim(spec, {}, late=[]) is None
    assert _warm_start.stop_warm(str(tmp_path)) is False


def test_a_warm_host_that_cannot_listen_is_refused_with_its_socket_named(tmp_path):
    too_long = str(tmp_path / ("x" * 120) / "warm-host.sock")  # longer than a Unix socket's path may be

    with pytest.raises(_warm_start.SupervisorError, match="cannot start a warm host at .*warm-host.sock"):
        _warm_start.warm_host(too_long, sys.executable, 2, modules=["json"])
