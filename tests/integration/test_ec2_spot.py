"""Spot capacity and terminate-on-shutdown on EC2, through libcloud's real EC2 driver, against moto's emulator.

The outcome is read with boto3 (not libcloud): the instance lifecycle, the tags, the shutdown behaviour. Emulated
instances answer no SSH, so the module runs with wait=false; check.yml (which creates nothing) shows the plan.
"""

import uuid

import pytest

from ansible_cli import run_playbook, tail
from emulators.ec2 import LIVE_STATES, cluster_instances, run_libcloud_node, terminate_cluster


@pytest.fixture
def cluster(ec2_emulator):
    name = "spot-%s" % uuid.uuid4().hex[:8]
    yield name
    terminate_cluster(ec2_emulator.boto3_client(), name)


def test_spot_workers_are_spot_instances_tagged_as_such_terminate_on_shutdown_and_are_destroyed(ec2_emulator, cluster):
    roles = [{"role": "chief", "count": 1, "size": "t2.micro", "image": ec2_emulator.image_id},
             {"role": "worker", "count": 2, "size": "t2.micro", "image": ec2_emulator.image_id, "spot": True}]

    run, plan = run_libcloud_node(ec2_emulator, {"cluster": cluster, "roles": roles, "wait": False}, check=True)
    assert run.returncode == 0 and plan, run.stdout[-4000:] + run.stderr[-2000:]
    assert (plan["plan"]["worker"]["spot"], plan["plan"]["chief"]["spot"]) == (True, False)
    assert plan["plan"]["worker"]["price"] == 0.0116  # t2.micro's on-demand price in libcloud's data
    assert plan["cost"]["summary"] == ("cost: $0.0348/h for 3 nodes at list prices; "
                                       "spot: 2 of 3 nodes (67% of the price), billed at the lower spot price")

    run, result = run_libcloud_node(ec2_emulator, {"cluster": cluster, "roles": roles, "wait": False})
    assert run.returncode == 0 and result, run.stdout[-4000:] + run.stderr[-2000:]
    assert {n["name"]: n["spot"] for n in result["nodes"]} == {
        cluster + "-chief-0": False, cluster + "-worker-0": True, cluster + "-worker-1": True}

    ec2 = ec2_emulator.boto3_client()
    found = cluster_instances(ec2, cluster, LIVE_STATES)
    assert sorted(found) == [cluster + "-chief-0", cluster + "-worker-0", cluster + "-worker-1"]
    for name, instance in found.items():
        spot = "-worker-" in name
        assert instance.get("InstanceLifecycle") == ("spot" if spot else None), name
        assert instance["tags"].get("tfdist_spot") == ("true" if spot else None), name
        behaviour = ec2.describe_instance_attribute(InstanceId=instance["InstanceId"],
                                                    Attribute="instanceInitiatedShutdownBehavior")
        assert behaviour["InstanceInitiatedShutdownBehavior"]["Value"] == "terminate", name

    run, removed = run_libcloud_node(ec2_emulator, {"cluster": cluster, "state": "absent"})
    assert run.returncode == 0 and removed, run.stdout[-4000:]
    assert sorted(n["name"] for n in removed["removed"]) == sorted(found)
    assert cluster_instances(ec2, cluster, LIVE_STATES) == {}


def test_spot_on_a_cloud_without_it_names_the_option_and_creates_nothing(ec2_emulator, cluster):
    run, result = run_libcloud_node(ec2_emulator, {"provider": "dummy", "region": None, "driver_options": {},
                                                   "cluster": cluster, "wait": False, "roles": [
                                                       {"role": "worker", "count": 1, "size": "1", "image": "1",
                                                        "spot": True}]})
    assert run.returncode != 0 and result, run.stdout[-4000:]
    assert result["msg"].startswith("roles[0].spot (worker nodes): provider dummy has no spot capacity"), result["msg"]
    assert result.get("created", []) == []


def test_check_shows_spot_nodes_and_the_cost(ec2_emulator, cluster):
    result = run_playbook("playbooks/check.yml", "cloud=aws", f"cluster_name={cluster}", "tf_spot=true",
                          "tf_ssh_from=127.0.0.1/32", f"aws_image={ec2_emulator.image_id}", env=ec2_emulator.env)
    assert result.returncode == 0, tail(result)
    out = " ".join(result.stdout.split())  # the plan's lines as printed, unwrapped
    image = ec2_emulator.image_id
    assert f"worker: 2 x g4dn.xlarge ({image}), spot, $0.526/h each: create {cluster}-worker-0" in out, tail(result)
    assert f"ps: 1 x m5.large ({image}), spot, $0.096/h each: create {cluster}-ps-0" in out
    # libcloud's price list has no us-east-1 price for m5.xlarge: the plan says so instead of counting it as free.
    assert f"chief: 1 x m5.xlarge ({image}), spot: create {cluster}-chief-0" in out
    assert ("cost: $1.148/h for 4 nodes at list prices, not counting m5.xlarge (no price known); "
            "spot: 4 of 4 nodes (100% of the price), billed at the lower spot price") in out
    assert cluster_instances(ec2_emulator.boto3_client(), cluster, LIVE_STATES) == {}
