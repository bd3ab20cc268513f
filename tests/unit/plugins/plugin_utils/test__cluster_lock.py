"""plugin_utils/_cluster_lock: one deploy or destroy of a cluster at a time, the lock held for a playbook's process
until that process ends, however it ends. Real processes stand in for ansible-playbook."""

import os
import subprocess

import pytest

from ansible_collections.tfdist.cluster.plugins.plugin_utils._cluster_lock import take


@pytest.fixture
def playbooks():
    """Start stand-ins for ansible-playbook processes (sleep, with a command line to name); killed afterwards."""
    started = []

    def start(seconds=60):
        started.append(subprocess.Popen(["sleep", str(seconds)]))
        return started[-1]

    yield start
    for process in started:
        process.kill()
        process.wait()


def test_a_second_run_is_refused_naming_the_holders_pid_and_command(tmp_path, playbooks):
    path = str(tmp_path / "clusters" / ".demo.lock")
    first, second = playbooks(), playbooks()

    assert take(path, first.pid, 0)["state"] == "locked"
    refused = take(path, second.pid, 0)

    assert refused["state"] == "busy"
    assert (refused["holder"]["pid"], refused["holder"]["command"]) == (first.pid, "sleep 60")


def test_the_same_playbook_takes_its_own_lock_again(tmp_path, playbooks):
    path = str(tmp_path / ".demo.lock")
    playbook = playbooks()
    take(path, playbook.pid, 0)
    assert take(path, playbook.pid, 0)["state"] == "held"  # a deploy's teardown runs destroy's tasks


def test_the_lock_goes_when_the_playbook_dies(tmp_path, playbooks):
    path = str(tmp_path / ".demo.lock")
    first, second = playbooks(), playbooks()
    take(path, first.pid, 0)

    first.kill()
    first.wait()
    # The holder sees its playbook end at once (a pidfd) or within a poll: a generous bound for a loaded machine.
    answer = take(path, second.pid, 10)

    assert answer["state"] == "locked" and answer["holder"]["pid"] == second.pid


def test_a_waiting_run_gets_the_lock_once_the_first_ends(tmp_path, playbooks):
    path = str(tmp_path / ".demo.lock")
    first, second = playbooks(1), playbooks()
    take(path, first.pid, 0)

    answer = take(path, second.pid, 30)

    assert answer["state"] == "locked"
    assert first.poll() is not None  # granted only once the first had ended


def test_a_destroyed_cluster_leaves_no_lock_file_and_a_waiting_run_still_gets_the_lock(tmp_path, playbooks):
    path = str(tmp_path / ".demo.lock")
    source = str(tmp_path / "demo.*.yml")  # the cluster's inventory source: none, it was destroyed
    destroy, deploy = playbooks(1), playbooks()
    take(path, destroy.pid, 0, keep_with=source)

    answer = take(path, deploy.pid, 30, keep_with=source)  # waits on the file the destroy's holder removes

    assert answer["state"] == "locked"
    assert take(path, playbooks().pid, 0)["holder"]["pid"] == deploy.pid  # the lock of the path is the waiter's


def test_the_lock_file_of_a_cluster_that_exists_is_kept(tmp_path, playbooks):
    path = str(tmp_path / ".demo.lock")
    (tmp_path / "demo.libcloud.yml").write_text("plugin: tfdist.cluster.libcloud\n")
    deploy = playbooks(0.2)
    take(path, deploy.pid, 0, keep_with=str(tmp_path / "demo.*.yml"))
    deploy.wait()

    assert take(path, playbooks().pid, 10)["state"] == "locked"
    assert os.path.exists(path)
