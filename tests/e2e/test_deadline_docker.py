"""A deadline on a multi_worker_mirrored job whose tasks are separate hosts (cloud=docker): the chief, stopped first,
writes a checkpoint of the step it reached; the worker, whose step fails as the chief leaves, waits for its own stop
and ends stopped, as every task does, within seconds: no task that only a SIGKILL ended."""

import re

from ansible_cli import run_playbook, tail
from docker_engine import job_file


def node_file(engine, name, task, path):
    """A file of the job folder on the node of task (one task per node here), as text."""
    return job_file(engine, name, task, path).decode(errors="replace")


def test_a_deadline_stops_a_multi_worker_mirrored_job_on_separate_hosts_keeping_its_last_step(engine, docker_cluster):
    name = docker_cluster
    # A minute from the launch outlasts a loaded machine's start-up; no periodic checkpoint comes before it.
    run = run_playbook("playbooks/deploy.yml", "cloud=docker", f"cluster_name={name}",
                       "tf_strategy=multi_worker_mirrored", "tf_workers=1", "tf_ps=0", "tf_train_steps=1000000",
                       "tf_deadline=60s", '{"training_checkpoint_every": 100000}')
    assert run.returncode != 0
    out = " ".join(run.stdout.split())
    match = re.search(r"the job reached its deadline \(1m after [0-9:]+\) and was stopped at step (\d+)/1000000", out)
    assert match, tail(run)

    chief_log = node_file(engine, name, "chief-0", "tasks/chief-0/task.log")
    saved = re.findall(r"stopped at step (\d+): checkpoint written", chief_log)
    assert saved and int(saved[-1]) >= int(match.group(1)), chief_log[-3000:]
    assert "model_checkpoint_path: \"ckpt-%s\"" % saved[-1] in node_file(engine, name, "chief-0", "checkpoints/checkpoint")

    for task in ("chief-0", "worker-0"):
        log = node_file(engine, name, task, f"tasks/{task}/task.log")
        assert "task ended: returncode 143 (stopped)" in log and "sending SIGKILL" not in log, (task, log[-3000:])
    worker_log = node_file(engine, name, "worker-0", "tasks/worker-0/task.log")
    assert "a step failed as a peer left" in worker_log, worker_log[-3000:]
