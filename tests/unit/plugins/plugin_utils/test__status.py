"""plugin_utils/_status: what playbooks/status.yml reports of a cluster, from its nodes' variables and their one
training_status answer each; every report checked against docs/schemas/status.schema.json."""

import datetime
import json
import os

import jsonschema
import pytest

from ansible_collections.tfdist.cluster.plugins.action.cluster_status import node_input
from ansible_collections.tfdist.cluster.plugins.plugin_utils import _status

SCHEMA = os.path.join(os.path.dirname(__file__), *[os.pardir] * 4, "docs", "schemas", "status.schema.json")
NOW = 1_800_000_000.0


def valid(report):
    with open(SCHEMA) as handle:
        jsonschema.validate(report, json.load(handle))
    return report


def task(name, running=True, pid=100, returncode=None, reason=None, started_at=NOW - 600):
    return dict(name=name, running=running, pid=pid, returncode=returncode, reason=reason, started_at=started_at,
                finished_at=None if running else NOW - 10)


def probe(*tasks, status=None, result=None):
    failed = [t["name"] for t in tasks if not t["running"] and t["pid"] and t["returncode"] not in (0, None)]
    return dict(tasks=list(tasks), status=status, result=result, failed_tasks=failed, unreachable=[])


def node(name, probe=None, size="g4dn.xlarge", state="running", created_at=NOW - 3600, unreachable=None,
         price_per_hour=None):
    return dict(name=name, state=state, address="10.0.0.%d" % len(name), size=size, created_at=created_at,
                probe=probe, unreachable=unreachable, price_per_hour=price_per_hour)


def cluster(*nodes, summary=None, provider="ec2", ssh_config=None):
    return dict(name="demo", cloud="aws", provider=provider, region="us-east-1",
                source="/home/clusters/demo.libcloud.yml", nodes=list(nodes), summary=summary, ssh_config=ssh_config)


RUNNING = dict(state="running", step=500, target_steps=2000, loss=0.5, examples_per_sec=3200.0, eta_seconds=95.0,
               started_at=NOW - 590, updated_at=NOW - 2)


def test_a_training_job_shows_its_step_speed_eta_nodes_and_cost_so_far():
    report = valid(_status.report([cluster(
        node("demo-chief-0", probe(task("chief-0"), status=RUNNING)),
        node("demo-worker-0", probe(task("worker-0"))),
        ssh_config="/home/.cache/keys/demo.ssh_config",
    )], NOW))
    entry = report["clusters"][0]
    assert report["schema_version"] == _status.SCHEMA_VERSION
    assert entry["job"]["state"] == "running"
    assert (entry["job"]["step"], entry["job"]["target_steps"], entry["job"]["eta_seconds"]) == (500, 2000, 95.0)
    assert [(n["name"], n["tasks"], n["state"]) for n in entry["nodes"]] == [
        ("demo-chief-0", ["chief-0"], "running"), ("demo-worker-0", ["worker-0"], "running")]
    # Two g4dn.xlarge at libcloud's list price ($0.526/h), up for the hour since the first node was made.
    assert entry["uptime_seconds"] == 3600 and entry["uptime_from"] == "nodes"
    assert entry["cost"]["per_hour"] == pytest.approx(1.052)
    assert entry["cost"]["so_far"] == pytest.approx(1.052)
    line = _status.lines(report)[0]
    assert "job running, step 500/2000 (25%), 3200 examples/s, ETA 1m35s" in line, line
    assert "up 1h, $1.052 so far ($1.052/h)" in line, line
    assert "  ssh -F /home/.cache/keys/demo.ssh_config demo-chief-0" in _status.lines(report)


def test_a_size_without_a_known_price_is_named_and_left_out():
    report = valid(_status.report([cluster(
        node("demo-chief-0", probe(task("chief-0"), status=RUNNING), size="m5.xlarge"),
        node("demo-worker-0", probe(task("worker-0")), size="t3.micro"),
    )], NOW))
    cost = report["clusters"][0]["cost"]
    assert cost["unpriced"] == ["m5.xlarge"] and cost["per_hour"] == pytest.approx(0.0104)
    assert "not counting m5.xlarge" in _status.lines(report)[0]


def test_the_profiles_price_of_a_node_counts_over_the_list_price_as_in_the_plan():
    report = valid(_status.report([cluster(
        node("demo-chief-0", probe(task("chief-0"), status=RUNNING), size="m5.xlarge", price_per_hour=0.192),
        node("demo-worker-0", probe(task("worker-0")), size="g4dn.xlarge", price_per_hour=0.2),
    )], NOW))
    cost = report["clusters"][0]["cost"]
    assert cost["unpriced"] == [] and cost["per_hour"] == pytest.approx(0.392)
    assert [n["price_per_hour"] for n in report["clusters"][0]["nodes"]] == [0.192, 0.2]


def test_a_failed_task_fails_the_job_and_each_task_state_is_listed():
    report = valid(_status.report([cluster(
        node("demo-chief-0", probe(task("chief-0"), status=RUNNING)),
        node("demo-worker-0", probe(task("worker-0", running=False, returncode=1))),
    )], NOW))
    job = report["clusters"][0]["job"]
    assert job["state"] == "failed" and job["failed_tasks"] == ["worker-0"]
    assert [(t["name"], t["host"], t["state"]) for t in report["clusters"][0]["tasks"]] == [
        ("chief-0", "demo-chief-0", "running"), ("worker-0", "demo-worker-0", "exited 1")]
    detail = _status.lines(report, detail=True)
    assert "    worker-0 on demo-worker-0: exited 1" in detail
    assert not any("worker-0 on" in line for line in _status.lines(report))


def test_a_finished_job_on_this_machine_costs_nothing_and_counts_uptime_from_its_tasks():
    done = dict(RUNNING, state="done", step=2000, eta_seconds=0.0)
    tasks = [task(name, running=False, returncode=0, reason="chief finished" if name == "ps-0" else "exited")
             for name in ("chief-0", "worker-0", "ps-0")]
    summary = {"leader_run": str(NOW - 600), "restarts": [{"losses": []}]}
    local = dict(cluster(node("demo-local", probe(*tasks, status=done, result={"steps": 2000}), size=None,
                              state="local", created_at=None), summary=summary, provider=""), cloud="local")
    entry = valid(_status.report([local], NOW))["clusters"][0]
    assert entry["job"]["state"] == "done" and entry["job"]["eta_seconds"] is None
    assert entry["job"]["restarts"] == 1
    assert entry["uptime_seconds"] == 600 and entry["uptime_from"] == "job"
    assert entry["cost"] == {"per_hour": 0, "so_far": 0, "unpriced": [],
                             "summary": "no cost: the nodes are this machine"}
    assert [t["state"] for t in entry["tasks"]] == ["exited 0", "exited 0 (chief finished)", "exited 0"]


def test_restarts_are_unknown_while_the_summary_is_an_earlier_runs():
    earlier = {"leader_run": str(NOW - 99999), "restarts": []}
    entry = _status.report([cluster(node("demo-chief-0", probe(task("chief-0"), status=RUNNING)),
                                    summary=earlier)], NOW)["clusters"][0]
    assert entry["job"]["restarts"] is None
    assert "restarts ?" in _status.lines(valid(_status.report([cluster(node("demo-chief-0", probe(task("chief-0"))),
                                                                       summary=earlier)], NOW)))[0]


def test_a_node_that_does_not_answer_is_named_with_why_and_no_answer_at_all_is_unknown():
    report = valid(_status.report([cluster(
        node("demo-chief-0", None, state="stopped", unreachable="ssh: connect to host 10.0.0.12 port 22: timed out"),
    )], NOW))
    entry = report["clusters"][0]
    assert entry["job"]["state"] == _status.NO_ANSWER
    assert entry["nodes"][0]["reachable"] is False
    assert "demo-chief-0 stopped 10.0.0.12 (no answer: ssh: connect to host" in _status.lines(report)[1]


def test_a_job_whose_tasks_never_started_or_all_stopped():
    never = _status.report([cluster(node("demo-chief-0", probe(task("chief-0", running=False, pid=None))))], NOW)
    assert never["clusters"][0]["job"]["state"] == _status.NOT_STARTED
    killed = task("chief-0", running=False, returncode=-15, reason="stopped")
    stopped = _status.report([cluster(node("demo-chief-0", dict(probe(killed, status=RUNNING), failed_tasks=[])))],
                             NOW)
    assert stopped["clusters"][0]["job"]["state"] == "stopped"
    assert stopped["clusters"][0]["tasks"][0]["state"] == "ended by signal 15 (stopped)"


def test_the_clouds_clusters_without_state_here_are_marked_with_whose_they_are():
    audit = {"resources": [
        {"kind": "node", "cluster": "old", "standing": "orphan"},
        {"kind": "node", "cluster": "old", "standing": "orphan"},
        {"kind": "key pair", "cluster": "old", "standing": "orphan"},
        {"kind": "node", "cluster": "theirs", "standing": "another owner"},
        {"kind": "node", "cluster": "demo", "standing": "mine"},
    ]}
    report = valid(_status.report([cluster(node("demo-chief-0", probe(task("chief-0"), status=RUNNING)))], NOW,
                                  cloud="aws", audit=audit))
    assert report["cloud_only"] == [{"name": "old", "standing": "orphan", "nodes": 2},
                                    {"name": "theirs", "standing": "another owner", "nodes": 1}]
    lines = _status.lines(report)
    assert "old (cloud=aws): no local state here; 2 node(s), this controller's (an orphan: audit.yml " \
           "-e remove_orphans=true removes it)" in lines
    assert "theirs (cloud=aws): no local state here; 1 node(s), another owner" in lines


def test_nothing_known_says_so():
    report = valid(_status.report([], NOW, cloud="aws", audit={"resources": []}))
    assert _status.lines(report) == ["no tfdist cluster known here or on cloud=aws"]


def test_the_clouds_creation_time_is_read():
    launched = datetime.datetime(2027, 1, 15, 8, tzinfo=datetime.timezone.utc).timestamp()
    assert _status.created_at({"launch_time": "2027-01-15T08:00:00.000Z"}) == launched  # EC2
    assert _status.created_at({"creationTimestamp": "2027-01-15T00:00:00.000-08:00"}) == launched  # GCE
    assert _status.created_at({}) is None and _status.created_at({"launch_time": "soon"}) is None


def test_a_node_that_did_not_answer_or_whose_call_failed_has_no_probe():
    gone = node_input("demo-worker-0", {"libcloud_state": "running", "ansible_host": "10.0.0.5",
                                        "training_status_result": {"unreachable": True, "msg": "ssh:\n timed out"}},
                      "training_status_result")
    assert gone["probe"] is None and gone["unreachable"] == "ssh: timed out" and gone["address"] == "10.0.0.5"
    failed = node_input("demo-worker-0", {"training_status_result": {"failed": True, "msg": "no python"}},
                        "training_status_result")
    assert failed["probe"] is None and failed["unreachable"] == "no python"
    never = node_input("demo-local", {"tfdist_cloud": "local"}, "training_status_result")
    assert never["unreachable"] == "not looked at" and never["state"] == "local"


def test_the_clouds_stopped_nodes_of_a_known_cluster_are_shown_as_not_running():
    audit = {"resources": [{"kind": "node", "cluster": "demo", "name": "demo-chief-0", "standing": "mine"},
                           {"kind": "node", "cluster": "demo", "name": "demo-worker-0", "standing": "mine"},
                           {"kind": "key pair", "cluster": "demo", "name": "tfdist-demo", "standing": "mine"}]}
    report = valid(_status.report([cluster(node("demo-chief-0", probe(task("chief-0"), status=RUNNING)))], NOW,
                                  cloud="aws", audit=audit))
    assert [(n["name"], n["state"], n["reachable"]) for n in report["clusters"][0]["nodes"]] == [
        ("demo-chief-0", "running", True), ("demo-worker-0", _status.NOT_RUNNING, False)]
    assert report["cloud_only"] == []


def test_a_cluster_without_running_nodes_says_so():
    lines = _status.lines(valid(_status.report([cluster()], NOW)))
    assert lines[0].startswith("demo (cloud=aws): job unknown")
    assert lines[1] == "  no running node (-e cloud=NAME also lists the stopped ones)"
