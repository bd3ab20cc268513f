"""_netns: which processes join a job folder's network namespace, and what a record says (no namespace made here: the
runtime tests make real ones)."""

import json
import os

import pytest

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _netns, _netns_holder, _task_folder


@pytest.fixture
def job(tmp_path):
    job_dir = tmp_path / "demo"
    (job_dir / "tasks" / "chief-0").mkdir(parents=True)
    return job_dir


def record(job_dir, pid):
    starttime = _netns_holder.starttime(pid) if pid == os.getpid() else 1
    (job_dir / _netns.RECORD).write_text(json.dumps({"pid": pid, "starttime": starttime, "kind": "user+net"}))


def test_the_tasks_of_a_job_folder_with_a_record_and_its_warm_hosts_run_in_its_namespace(job):
    assert _netns.job_folder_of(str(job / "tasks" / "chief-0")) is None  # other clouds: no record, nothing changes
    record(job, os.getpid())
    # A task's folder, one not made yet, a warm host's (the job folder).
    for folder in (job / "tasks" / "chief-0", job / "tasks" / "tensorboard", job):
        assert _netns.job_folder_of(str(folder)) == str(job)
        assert _netns.namespace_of(str(folder))["pid"] == os.getpid()
    # Only its own folders: the folder above the job folder, or a folder deeper than a task's, are not the job's.
    assert _netns.job_folder_of(str(job.parent)) is None
    assert _netns.job_folder_of(str(job / "tasks" / "chief-0" / "tmp")) is None


def test_a_task_never_starts_outside_when_the_holder_of_its_namespace_is_gone(job):
    record(job, 2 ** 22 + 12345)  # no such process
    assert _netns.record_of(str(job))["running"] is False
    with pytest.raises(_task_folder.SupervisorError, match="network namespace is gone .*run the deploy again"):
        _netns.namespace_of(str(job / "tasks" / "chief-0"))


def test_root_keeps_its_powers_in_a_network_namespace_alone_others_get_a_user_namespace_too(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert _netns_holder.kinds() == [_netns_holder.NET, _netns_holder.USER]
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert _netns_holder.kinds() == [_netns_holder.USER]
