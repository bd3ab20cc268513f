"""Fixtures of the tests of a task's folder and its supervisor (_task_folder, _supervisor), and of _access's retries."""

from types import SimpleNamespace

import pytest

from ansible_collections.tfdist.cluster.plugins.module_utils import _access
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _supervisor, _task_folder


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


@pytest.fixture
def clock(monkeypatch):
    """A fake clock for _access: sleeping advances it, so retries over minutes take no time."""
    fake = SimpleNamespace(now=1000.0, sleeps=[])
    fake.monotonic = lambda: fake.now

    def sleep(seconds):
        fake.sleeps.append(seconds)
        fake.now += seconds

    fake.sleep = sleep
    monkeypatch.setattr(_access, "time", fake)
    return fake
