"""Operating a cluster while it trains, as a person does from another terminal: status.yml (the step moving, the cost
so far), logs.yml (a task's log now, its last lines, following it to its end), ssh into a node with the cluster's ssh
config, each task named in ps; and after destroy, nothing of the cluster left to show. Once on cloud=local, once on
a docker cluster reached over SSH. Every status.json checked against its JSON Schema."""

import json
import os
import signal
import subprocess

import jsonschema

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._json_files import read_json
from ansible_cli import REPO, run_playbook, start_playbook, tail
from docker_engine import cluster_containers
from processes import free_port_block, wait_until

SCHEMA = os.path.join(REPO, "docs", "schemas", "status.schema.json")
# A job far longer than the test: it trains while it is looked at, and ends with the cluster.
ENDLESS = "tf_train_steps=1000000"


def status(cluster_name, *extra_vars, known=True):
    """Run status.yml for the cluster: (its output, its one cluster's entry of status.json, validated). known=False:
    the cluster may not be provisioned yet ((output, None) then)."""
    run = run_playbook("playbooks/status.yml", f"cluster_name={cluster_name}", *extra_vars)
    assert run.returncode == 0, tail(run)
    if not known and "no tfdist cluster known here" in run.stdout:
        return run.stdout, None
    report = read_json(os.path.join(REPO, "artifacts", cluster_name, "status.json"))
    with open(SCHEMA) as handle:
        jsonschema.validate(report, json.load(handle))
    [cluster] = report["clusters"]
    assert cluster["name"] == cluster_name
    return run.stdout, cluster


def training_seen(cluster_name, *extra_vars):
    """The job's state in status reports while it trains, until the step has moved and its speed is known."""
    seen = []

    def step_moved():
        job = (status(cluster_name, *extra_vars, known=False)[1] or {}).get("job") or {}
        if job.get("state") == "running" and job.get("step") is not None:
            seen.append(job)
        # A job that ended before it was seen twice is too short for this machine's pace: say so now, not in 10 min.
        assert not (seen and job.get("state") not in (None, "running")), ("the job ended while looked at", job, seen)
        # The speed needs two steps past the first one the chief saw: until then it is unknown (None), rightly.
        return len(seen) >= 2 and seen[-1]["step"] > seen[0]["step"] and bool(seen[-1]["examples_per_sec"])

    assert wait_until(step_moved, timeout=600), seen
    print("steps seen while training:", [job["step"] for job in seen])
    return seen


def logs(cluster_name, task, *extra_vars):
    run = run_playbook("playbooks/logs.yml", f"cluster_name={cluster_name}", f"task={task}", *extra_vars)
    assert run.returncode == 0, tail(run)
    return run.stdout


def interrupt(deploy):
    """Ctrl-C to a deploy that follows a job: it stops following, the job goes on."""
    os.kill(deploy.pid, signal.SIGINT)
    deploy.communicate(timeout=120)


def destroyed_and_gone(cluster_name, *extra_vars):
    """Destroy the cluster; status then knows nothing of it, and its status.json says so."""
    destroy = run_playbook("playbooks/destroy.yml", f"cluster_name={cluster_name}", *extra_vars)
    assert destroy.returncode == 0, tail(destroy)
    run = run_playbook("playbooks/status.yml", f"cluster_name={cluster_name}")
    assert run.returncode == 0 and "no tfdist cluster known here" in run.stdout, tail(run)
    assert read_json(os.path.join(REPO, "artifacts", cluster_name, "status.json"))["clusters"] == []


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


# Long enough to be seen training by a few status runs on a loaded 2-core machine (about 200 steps/s there, a status
# run 5 to 15 s), short enough to be followed to its end.
LOCAL_STEPS = 15000


def test_a_local_cluster_while_it_trains_and_after(cluster_name):
    deploy = start_playbook("playbooks/deploy.yml", f"cluster_name={cluster_name}",
                            f"tf_port_base={free_port_block(3)}", "tf_workers=1", "tf_ps=1",
                            f"tf_train_steps={LOCAL_STEPS}")
    tasks_dir = os.path.join(REPO, ".cache", "run", cluster_name, "tasks")
    chief_log = os.path.join(tasks_dir, "chief-0", "task.log")
    try:
        assert wait_until(lambda: os.path.exists(chief_log) and "step " in open(chief_log).read(), timeout=300), \
            deploy.poll()
        seen = training_seen(cluster_name)
        assert seen[-1]["target_steps"] == LOCAL_STEPS
        assert seen[-1]["examples_per_sec"] > 0 and seen[-1]["eta_seconds"] > 0

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

        # Following the chief's log ends with the task: the supervisor's last line, written once the chief ended.
        followed = logs(cluster_name, "chief-0", "follow=true")
        assert "task ended: returncode 0 (exited)" in followed, followed[-3000:]
        with open(chief_log) as handle:
            log_lines = handle.read().splitlines()
        assert [line for line in log_lines[-20:] if line not in followed.splitlines()] == [], followed[-3000:]
    finally:
        output = deploy.communicate(timeout=600)[0]
    assert deploy.returncode == 0, output[-3000:]

    output, cluster = status(cluster_name)
    assert [(node["name"], node["reachable"], sorted(node["tasks"])) for node in cluster["nodes"]] == [
        (f"{cluster_name}-local", True, ["chief-0", "ps-0", "worker-0"])]
    job = cluster["job"]
    assert (job["state"], job["step"], job["target_steps"], job["restarts"]) == ("done", LOCAL_STEPS, LOCAL_STEPS, 0)
    # The chief ended its job; the deploy stops a server that lingers after it, which is no failure.
    assert [task["running"] for task in cluster["tasks"]] == [False, False, False]
    assert cluster["tasks"][0]["returncode"] == 0 and job["failed_tasks"] == []
    assert f"{cluster_name} (cloud=local): job done, step {LOCAL_STEPS}/{LOCAL_STEPS} (100%)" in output, output
    assert f"chief-0 on {cluster_name}-local: exited 0" in output, output
    assert "no cost: the nodes are this machine" in output, output

    # worker-0's log, as its supervisor and TF wrote it on the node.
    worker = logs(cluster_name, "worker-0")
    assert "[tfdist-supervise]" in worker and f"starting {cluster_name}/worker-0" in worker, worker[-3000:]
    # lines=N: the last N lines of the chief's log, and not the one before them.
    chief_lines = [line for line in log_lines if line.strip()]
    assert any(line.startswith("[train ") for line in chief_lines), chief_lines  # the training program's own lines
    shown = logs(cluster_name, "chief-0", "lines=3").splitlines()
    assert [line for line in chief_lines[-3:] if line not in shown] == [] and chief_lines[-4] not in shown, shown

    # A task the cluster does not have: an error naming the field and the tasks it has.
    unknown = run_playbook("playbooks/logs.yml", f"cluster_name={cluster_name}", "task=worker-9")
    assert unknown.returncode != 0
    assert (f"task: no task worker-9 in cluster {cluster_name}; its tasks are chief-0, worker-0, ps-0"
            in unknown.stdout + unknown.stderr), tail(unknown)

    destroyed_and_gone(cluster_name)


def test_a_docker_cluster_while_it_trains_then_a_stopped_node_then_nothing(engine, docker_cluster):
    name = docker_cluster
    # The profile's roles with a price of their own (docker's sizes have no list price): status counts it.
    priced = {"libcloud_nodes": {role: {"size": "host", "image": "{{ docker_node_image }}", "price_per_hour": 0.25}
                                 for role in ("chief", "worker", "ps")}}
    deploy = start_playbook("playbooks/deploy.yml", "cloud=docker", f"cluster_name={name}", "tf_workers=2", "tf_ps=1",
                            ENDLESS, json.dumps(priced))
    try:
        seen = training_seen(name)
        assert seen[0]["target_steps"] == 1000000 and seen[-1]["examples_per_sec"] > 0

        output, cluster = status(name)
        nodes = {node["name"]: node for node in cluster["nodes"]}
        assert {node: entry["tasks"] for node, entry in nodes.items()} == {
            f"{name}-chief-0": ["chief-0"], f"{name}-worker-0": ["worker-0"], f"{name}-worker-1": ["worker-1"],
            f"{name}-ps-0": ["ps-0"]}
        assert all(entry["reachable"] and entry["state"] == "running" and entry["address"] for entry in nodes.values())
        # Four nodes at the profile's $0.25 an hour, since the first was made.
        cost = cluster["cost"]
        assert (cost["per_hour"], cost["unpriced"]) == (1.0, []) and cost["so_far"] > 0, cost
        assert "so far ($1/h)" in output, output
        config = os.path.join(REPO, ".cache", "keys", f"{name}.ssh_config")
        assert f"ssh -F {config} {name}-chief-0" in output, output

        # worker-1's log, read from its node now.
        worker = logs(name, "worker-1")
        assert f"starting {name}/worker-1" in worker and "[tfdist-supervise]" in worker, worker[-3000:]

        # ssh into a node as a person does, with the cluster's config: its key, its user; ps there names the task.
        login = subprocess.run(["ssh", "-F", config, "-o", "BatchMode=yes", f"{name}-worker-0", "ps", "-eo", "args"],
                               capture_output=True, text=True, timeout=60, check=False)
        assert login.returncode == 0, login.stderr
        assert f"tfdist {name}/worker-0" in login.stdout.splitlines(), login.stdout
        interrupt(deploy)
    finally:
        if deploy.poll() is None:
            deploy.kill()
            deploy.wait()

    # A node powered off (as its idle guard does) leaves the inventory; the cloud's listing still names it.
    [worker] = [c for c in cluster_containers(engine, name) if c.name == f"{name}-worker-1"]
    worker.stop(timeout=5)
    output, cluster = status(name, "cloud=docker")
    nodes = {node["name"]: node for node in cluster["nodes"]}
    assert (nodes[f"{name}-worker-1"]["state"], nodes[f"{name}-worker-1"]["reachable"]) == ("not running", False)
    assert nodes[f"{name}-chief-0"]["reachable"]
    assert f"{name}-worker-1 not running - (no answer: the cloud lists it, not running)" in output, output

    destroyed_and_gone(name, "cloud=docker")
    assert not os.path.exists(config)


def test_logs_of_a_cluster_this_controller_does_not_know_name_it():
    result = run_playbook("playbooks/logs.yml", "cluster_name=tnosuchcluster", "task=worker-0")
    assert result.returncode != 0
    assert "cluster_name: no cluster tnosuchcluster on this controller" in result.stdout + result.stderr, tail(result)
