"""The idle guard's rules: when a node counts as idle, which folders are TF tasks, where the heartbeat goes, how it halts."""

from __future__ import annotations

import os
import time

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _idle_guard


def test_idle_time_counts_from_the_latest_of_start_heartbeat_silence_work_and_job():
    assert _idle_guard.idle_for(100.0, 10.0) == 90.0
    assert _idle_guard.idle_for(100.0, 10.0, 70.0, None) == 30.0
    # A job that ended after the controller went quiet gives the controller the whole timeout to come back.
    assert _idle_guard.idle_for(100.0, 10.0, 20.0, 95.0) == 5.0
    # An announced silence that has not ended yet: the clock has not started.
    assert _idle_guard.idle_for(100.0, 10.0, 20.0, 160.0) == -60.0


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


def test_an_announced_silence_holds_until_its_end_and_a_heartbeat_never_shortens_it(tmp_path):
    folder = str(tmp_path)
    _idle_guard.heartbeat(folder)
    assert _idle_guard.quiet_until(folder) is None  # a plain heartbeat announces nothing
    before = time.time()
    _idle_guard.heartbeat(folder, quiet_seconds=600)
    until = _idle_guard.quiet_until(folder)
    assert before + 600 <= until <= time.time() + 600
    assert _idle_guard.last_heard(folder) <= time.time()  # heard from now; silent until the end of the announcement
    _idle_guard.heartbeat(folder)
    _idle_guard.heartbeat(folder, quiet_seconds=60)
    assert _idle_guard.quiet_until(folder) == until
    _idle_guard.heartbeat(folder, quiet_seconds=1200)
    assert _idle_guard.quiet_until(folder) >= until + 600


# Process tables as read_processes() reads them: {pid: (ppid, name)}.
CONTAINER = {  # sshd is PID 1 (the docker cloud's nodes); Ansible runs `command: sleep 600` with become
    1: (0, "sshd"),
    40: (1, "sshd"), 41: (40, "sshd"),  # one connection: sshd: root [priv], sshd: root@notty
    42: (41, "sh"), 43: (42, "sudo"), 44: (43, "sudo"), 45: (44, "python3"), 46: (45, "sleep"),
    50: (1, "python3"), 51: (50, "python3"), 52: (51, "python3"),  # the guard's supervisor and a TF task: left to PID 1
    60: (1, "sshd"),  # a connection attempt before authentication, or a ControlPersist connection with nothing in it
    70: (0, "bash"),  # docker exec
}


def test_work_is_any_process_below_an_ssh_connection_become_included():
    assert _idle_guard.ssh_work(CONTAINER) == [42, 43, 44, 45, 46]
    assert _idle_guard.describe_work(CONTAINER, [42, 43, 44, 45, 46], most=2) == "sh, sudo and 3 more"


def test_an_open_connection_with_nothing_in_it_and_processes_left_to_pid_1_are_no_work():
    finished = {pid: entry for pid, entry in CONTAINER.items() if pid < 42 or pid >= 50}
    assert _idle_guard.ssh_work(finished) == []


def test_sessions_of_openssh_9_8_and_a_systemd_host_count_and_the_listener_alone_does_not():
    host = {
        1: (0, "systemd"), 300: (1, "sshd"),  # the listener, started by systemd
        310: (300, "sshd-session"), 311: (310, "sshd-session"), 312: (311, "bash"), 313: (312, "apt-get"),
        320: (300, "sshd-auth"),  # before authentication
        400: (1, "tfdist-supervise"), 401: (400, "python3"),
    }
    assert _idle_guard.ssh_work(host) == [312, 313]


def test_a_table_with_a_loop_of_reused_pids_ends():
    assert _idle_guard.ssh_work({5: (6, "sh"), 6: (5, "sh")}) == []


def test_the_users_guard_is_a_service_where_systemd_runs_and_its_unit_can_be_written(monkeypatch, tmp_path):
    monkeypatch.setattr(_idle_guard, "UNIT_DIR", str(tmp_path))
    monkeypatch.setattr(_idle_guard.shutil, "which", lambda name: "/usr/bin/" + name)
    monkeypatch.setattr(_idle_guard.os.path, "isdir", lambda path: path == "/run/systemd/system")
    home = _idle_guard.guard_dir()
    assert _idle_guard.as_service(home) and _idle_guard.as_service(home + "/")
    assert not _idle_guard.as_service(str(tmp_path / "guard"))  # a guard elsewhere (a test's) leaves the unit alone
    tmp_path.chmod(0o500)
    try:
        assert _idle_guard.as_service(home) == (os.geteuid() == 0)  # root writes anyway; another user runs a process
    finally:
        tmp_path.chmod(0o700)
    monkeypatch.setattr(_idle_guard.os.path, "isdir", lambda path: False)  # no systemd (a container, another init)
    assert not _idle_guard.as_service(home)


def test_the_unit_runs_the_guard_of_its_folder_at_boot_and_again_when_it_fails():
    unit = _idle_guard.unit_text("/usr/bin/python3", "/root/.tfdist/idle-guard")
    lines = unit.splitlines()
    assert 'ExecStart="/usr/bin/python3" "-m" "tfdist._idle_guard" "--dir" "/root/.tfdist/idle-guard"' in lines
    assert "WorkingDirectory=/root/.tfdist/idle-guard/lib" in lines  # python -m finds the guard's copy there
    assert "StandardOutput=append:/root/.tfdist/idle-guard/task.log" in lines
    assert "UMask=0077" in lines  # its log is its user's alone, as a supervised guard's
    assert "Restart=on-failure" in lines and "WantedBy=multi-user.target" in lines
    # systemd's quoting: a % starts a specifier, a quote ends the word.
    assert '"/opt/100%%/py\\"3"' in _idle_guard.unit_text('/opt/100%/py"3', "/g")
