"""The idle guard's rules: when a node counts as idle, which folders are TF tasks, where the heartbeat goes, how it halts."""

from __future__ import annotations

import os

from ansible_collections.tfdist.cluster.plugins.module_utils import _idle_guard


def test_idle_time_counts_from_the_latest_of_start_heartbeat_and_job():
    assert _idle_guard.idle_for(100.0, started=10.0) == 90.0
    assert _idle_guard.idle_for(100.0, started=10.0, heard=70.0) == 30.0
    # A job that ended after the controller went quiet gives the controller the whole timeout to come back.
    assert _idle_guard.idle_for(100.0, started=10.0, heard=20.0, busy=95.0) == 5.0


def test_checks_are_a_tenth_of_the_timeout_between_1_and_30_seconds():
    assert _idle_guard.check_interval(3.0) == 1.0
    assert _idle_guard.check_interval(30.0) == 3.0
    assert _idle_guard.check_interval(1800.0) == 30.0


def test_only_tf_tasks_keep_a_node_up():
    names = ["chief-0", "worker-12", "ps-1", "evaluator-0", "tensorboard", "namenode", "worker-", "chief-0.old"]
    assert [n for n in names if _idle_guard.TF_TASK_RE.match(n)] == ["chief-0", "worker-12", "ps-1", "evaluator-0"]


def test_tf_tasks_of_a_missing_or_empty_folder_are_none(tmp_path):
    assert _idle_guard.tf_tasks(str(tmp_path / "missing")) == ([], None)
    (tmp_path / "worker-0").mkdir()  # never started
    assert _idle_guard.tf_tasks(str(tmp_path)) == ([], None)


def test_heartbeat_only_where_a_guard_is_set_up(tmp_path):
    folder = tmp_path / "idle-guard"
    _idle_guard.heartbeat(str(folder))
    assert not folder.exists() and _idle_guard.last_heard(str(folder)) is None
    folder.mkdir()
    _idle_guard.heartbeat(str(folder))
    first = _idle_guard.last_heard(str(folder))
    os.utime(folder / _idle_guard.HEARTBEAT, (first - 60, first - 60))
    _idle_guard.heartbeat(str(folder))
    assert _idle_guard.last_heard(str(folder)) >= first


def test_power_off_asks_systemd_or_ends_pid_1_in_a_container(monkeypatch):
    monkeypatch.setattr(_idle_guard.os, "geteuid", lambda: 0)
    monkeypatch.setattr(_idle_guard, "in_container", lambda: True)
    monkeypatch.setattr(_idle_guard.os.path, "isdir", lambda path: False)
    assert _idle_guard.power_off_command() is None
    monkeypatch.setattr(_idle_guard, "in_container", lambda: False)
    assert _idle_guard.power_off_command() == ["shutdown", "-h", "now"]
    monkeypatch.setattr(_idle_guard.os.path, "isdir", lambda path: path == "/run/systemd/system")
    assert _idle_guard.power_off_command() == ["systemctl", "poweroff"]
    monkeypatch.setattr(_idle_guard.os, "geteuid", lambda: 1000)
    assert _idle_guard.power_off_command() == ["sudo", "-n", "systemctl", "poweroff"]
