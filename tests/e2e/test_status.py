"""playbooks/status.yml: on cloud=local a finished job's nodes and steps, the step moving while a job trains, and
nothing of the cluster once it is destroyed; on cloud=docker one answer per node over SSH, and a stopped node named
from the cloud's listing. Every status.json checked against its JSON Schema."""

import json
import os
import signal

import jsonschema

from ansible_collections.tfdist.cluster.plugins.module_utils._json_files import read_json
from ansible_cli import REPO, run_playbook, start_playbook, tail
from docker_engine import cluster_containers
from processes import free_port_block, wait_until

SCHEMA = os.path.join(REPO, "docs", "schemas", "status.schema.json")


def status(cluster_name, *extra_vars):
    """Run status.yml for the cluster: (its output, its status.json as validated against the schema)."""
    run = run_playbook("playbooks/status.yml", f"cluster_name={cluster_name}", *extra_vars)
    assert run.returncode == 0, tail(run)
    report = read_json(os.path.join(REPO, "artifacts", cluster_name, "status.json"))
    with open(SCHEMA) as handle:
        jsonschema.validate(report, json.load(handle))
    return run.stdout, report


def test_status_shows_the_job_finished_then_training_then_nothing_after_destroy(cluster_name):
    common = [f"cluster_name={cluster_name}", f"tf_port_base={free_port_block(3)}", "tf_workers=1", "tf_ps=1"]
    deployed = run_playbook("playbooks/deploy.yml", *common, "tf_train_steps=200")
    assert deployed.returncode == 0, tail(deployed)

    output, report = status(cluster_name)
    [cluster] = report["clusters"]
    assert cluster["name"] == cluster_name and cluster["cloud"] == "local"
    assert [(node["name"], node["reachable"], sorted(node["tasks"])) for node in cluster["nodes"]] == [
        (f"{cluster_name}-local", True, ["chief-0", "ps-0", "worker-0"])]
    assert cluster["job"]["state"] == "done"
    assert (cluster["job"]["step"], cluster["job"]["target_steps"]) == (200, 200)
    assert cluster["job"]["restarts"] == 0  # the deploy's summary.json, of this run
    # The chief ended its job; the deploy stops a server that lingers after it, which is no failure.
    assert [task["running"] for task in cluster["tasks"]] == [False, False, False]
    assert cluster["tasks"][0]["returncode"] == 0 and cluster["job"]["failed_tasks"] == []
    assert f"{cluster_name} (cloud=local): job done, step 200/200 (100%)" in output, output
    assert f"chief-0 on {cluster_name}-local: exited 0" in output, output

    # A longer run of the same job, followed from the background as a user would, from another terminal.
    training = start_playbook("playbooks/deploy.yml", *common, "tf_train_steps=1000000")
    try:
        seen = []

        def step_moved():
            job = status(cluster_name)[1]["clusters"][0]["job"]
            if job["state"] == "running" and job["step"] is not None:
                seen.append(job)
            return len(seen) >= 2 and seen[-1]["step"] > seen[0]["step"]

        assert wait_until(step_moved, timeout=600), seen
        print("steps seen while training:", [job["step"] for job in seen])
        assert seen[0]["step"] >= 200 and seen[0]["target_steps"] == 1000000
        assert seen[-1]["examples_per_sec"] > 0 and seen[-1]["eta_seconds"] > 0
        os.kill(training.pid, signal.SIGINT)  # what Ctrl-C does to ansible-playbook: the job goes on
        training.communicate(timeout=120)
    finally:
        if training.poll() is None:
            training.kill()
            training.wait()

    destroyed = run_playbook("playbooks/destroy.yml", f"cluster_name={cluster_name}")
    assert destroyed.returncode == 0, tail(destroyed)
    run = run_playbook("playbooks/status.yml", f"cluster_name={cluster_name}")
    assert run.returncode == 0, tail(run)
    assert "no tfdist cluster known here" in run.stdout, tail(run)
    # The status.json a pipeline reads says so too, rather than what the cluster was.
    assert read_json(os.path.join(REPO, "artifacts", cluster_name, "status.json"))["clusters"] == []


def test_status_of_docker_nodes_over_ssh_and_of_a_stopped_one(engine, docker_cluster):
    name = docker_cluster
    deployed = run_playbook("playbooks/deploy.yml", "cloud=docker", f"cluster_name={name}", "tf_workers=1", "tf_ps=1",
                            "tf_train_steps=100")
    assert deployed.returncode == 0, tail(deployed)

    output, report = status(name)
    [cluster] = report["clusters"]
    nodes = {node["name"]: node for node in cluster["nodes"]}
    assert {node: entry["tasks"] for node, entry in nodes.items()} == {
        f"{name}-chief-0": ["chief-0"], f"{name}-worker-0": ["worker-0"], f"{name}-ps-0": ["ps-0"]}
    assert all(entry["reachable"] and entry["state"] == "running" and entry["address"] for entry in nodes.values())
    assert (cluster["job"]["state"], cluster["job"]["step"], cluster["job"]["target_steps"]) == ("done", 100, 100)
    # Docker's sizes have no list price: named, not counted.
    assert cluster["cost"]["per_hour"] == 0 and cluster["cost"]["unpriced"], cluster["cost"]
    assert "not counting" in output, output

    # A node powered off (as its idle guard does) leaves the inventory; the cloud's listing still names it.
    [worker] = [c for c in cluster_containers(engine, name) if c.name == f"{name}-worker-0"]
    worker.stop(timeout=5)
    output, report = status(name, "cloud=docker")
    nodes = {node["name"]: node for node in report["clusters"][0]["nodes"]}
    assert (nodes[f"{name}-worker-0"]["state"], nodes[f"{name}-worker-0"]["reachable"]) == ("not running", False)
    assert nodes[f"{name}-chief-0"]["reachable"] and report["clusters"][0]["job"]["state"] == "done"
    assert f"{name}-worker-0 not running - (no answer: the cloud lists it, not running)" in output, output
