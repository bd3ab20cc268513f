"""logs.yml on cloud=local: a task's log read from its node, its last N lines, following it, and a task that is not
the cluster's named."""

import os

from ansible_collections.tfdist.cluster.plugins.module_utils._json_files import read_json
from ansible_cli import REPO, run_playbook, start_playbook, tail
from processes import free_port_block, wait_until


def test_logs_of_a_trained_cluster(cluster_name):
    base = free_port_block(3)
    deployed = run_playbook("playbooks/deploy.yml", f"cluster_name={cluster_name}", f"tf_port_base={base}",
                            "tf_workers=1", "tf_ps=1", "tf_train_steps=30")
    assert deployed.returncode == 0, tail(deployed)
    tasks_dir = os.path.join(REPO, ".cache", "run", cluster_name, "tasks")

    # worker-0's log, as its supervisor and TF wrote it on the node.
    worker = run_playbook("playbooks/logs.yml", f"cluster_name={cluster_name}", "task=worker-0")
    assert worker.returncode == 0, tail(worker)
    assert "[tfdist-supervise]" in worker.stdout and f"starting {cluster_name}/worker-0" in worker.stdout, tail(worker)

    # lines=N: the last N lines of the chief's log, and not the one before them.
    with open(os.path.join(tasks_dir, "chief-0", "task.log")) as handle:
        chief_lines = [line for line in handle.read().splitlines() if line.strip()]
    assert any(line.startswith("[train ") for line in chief_lines), chief_lines  # the training program's own lines
    chief = run_playbook("playbooks/logs.yml", f"cluster_name={cluster_name}", "task=chief-0", "lines=3")
    assert chief.returncode == 0, tail(chief)
    shown = chief.stdout.splitlines()
    for line in chief_lines[-3:]:
        assert line in shown, (line, chief.stdout)
    assert chief_lines[-4] not in shown, chief.stdout

    # Following a task that has ended prints its last lines and ends.
    followed = run_playbook("playbooks/logs.yml", f"cluster_name={cluster_name}", "task=chief-0", "lines=2",
                            "follow=true")
    assert followed.returncode == 0, tail(followed)
    assert chief_lines[-1] in followed.stdout.splitlines(), followed.stdout

    # A task the cluster does not have: an error naming the field and the tasks it has.
    unknown = run_playbook("playbooks/logs.yml", f"cluster_name={cluster_name}", "task=worker-9")
    assert unknown.returncode != 0
    assert (f"task: no task worker-9 in cluster {cluster_name}; its tasks are chief-0, worker-0, ps-0"
            in unknown.stdout + unknown.stderr), tail(unknown)


def command_line(pid):
    """pid's command line as ps shows it, '' for a process that is gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def shown_as(title):
    """PIDs of the processes whose command line (as ps shows it) is exactly title."""
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit() and command_line(entry) == title]


def test_following_a_training_task_until_it_ends_and_its_processes_named(cluster_name):
    base = free_port_block(3)
    deploy = start_playbook("playbooks/deploy.yml", f"cluster_name={cluster_name}", f"tf_port_base={base}",
                            "tf_workers=1", "tf_ps=1", "tf_train_steps=1500")
    try:
        tasks_dir = os.path.join(REPO, ".cache", "run", cluster_name, "tasks")
        chief_log = os.path.join(tasks_dir, "chief-0", "task.log")
        # Training: the chief has written its first step.
        assert wait_until(lambda: os.path.exists(chief_log) and "step " in open(chief_log).read(), timeout=300), \
            deploy.poll()

        # Each task shows as what it is in ps, its supervisor too, and top's name ends with the task's.
        for task in ("chief-0", "worker-0", "ps-0"):
            pids = shown_as(f"tfdist {cluster_name}/{task}")
            assert len(pids) == 1, (task, pids)
            with open(f"/proc/{pids[0]}/comm") as handle:
                assert f"{cluster_name}/{task}".endswith(handle.read().strip())
            # A supervisor is a fork of the Ansible module that started it: its title has that process's room.
            supervisor = read_json(os.path.join(tasks_dir, task, "task.json"))["supervisor_pid"]
            title = command_line(supervisor)
            assert title.startswith("tfdist-supervise") and f"tfdist-supervise {cluster_name}/{task}".startswith(title)

        followed = run_playbook("playbooks/logs.yml", f"cluster_name={cluster_name}", "task=chief-0", "follow=true")
        assert followed.returncode == 0, tail(followed)
        # It ended with the task: the supervisor's last line, written once the chief has ended, was printed.
        assert "task ended: returncode 0 (exited)" in followed.stdout, tail(followed)
        with open(chief_log) as handle:
            log_lines = handle.read().splitlines()
        shown = followed.stdout.splitlines()
        assert [line for line in log_lines[-20:] if line not in shown] == [], followed.stdout
    finally:
        output = deploy.communicate(timeout=600)[0]
    assert deploy.returncode == 0, output[-3000:]


def test_a_cluster_this_controller_does_not_know_is_named():
    result = run_playbook("playbooks/logs.yml", "cluster_name=tnosuchcluster", "task=worker-0")
    assert result.returncode != 0
    assert "cluster_name: no cluster tnosuchcluster on this controller" in result.stdout + result.stderr, tail(result)
