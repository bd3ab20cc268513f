"""Fixtures of the tests of a task's folder and its supervisor (_task_folder, _supervisor)."""

import pytest

from ansible_collections.tfdist.cluster.plugins.module_utils import _supervisor, _task_folder


@pytest.fixture
def task_dir(tmp_path):
    """A task's folder; whatever a test started there is stopped afterwards (never leave a process behind)."""
    path = str(tmp_path / "tasks" / "worker-0")
    yield path
    _supervisor.stop(path, timeout=5)


@pytest.fixture
def task_ended(task_dir):
    """Whether the task of task_dir has ended, for wait_until()."""
    return lambda: not _task_folder.task_status(task_dir)["running"]
