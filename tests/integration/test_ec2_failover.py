"""A capacity refusal routed around: EC2 at the emulator refuses the workers' RunInstances in the first zone of the
cluster's zones (the harness's `refusing`, in place of moto), through libcloud's real EC2 driver. The whole cluster
goes to the next zone, the result names the refusal it routed around, and no instance is left in the first zone; a
quota refusal, the account's in every zone, is not routed around.
"""

import uuid

import pytest

from emulators.ec2 import (LIVE_STATES, NO_CAPACITY, VCPU_LIMIT, cluster_instances, run_libcloud_node,
                           terminate_cluster)

ZONES = ["us-east-1a", "us-east-1b"]


@pytest.fixture
def cluster(ec2_emulator):
    name = "failover-%s" % uuid.uuid4().hex[:8]
    ec2_emulator.reset_calls()  # requests() reads this test's alone
    yield name
    terminate_cluster(ec2_emulator.boto3_client(), name)


def create(emulator, cluster, check=False, **options):
    """A chief and two GPU workers (g4dn.xlarge, else g5.xlarge) in the first zone of ZONES that has room."""
    return run_libcloud_node(emulator, dict({"cluster": cluster, "wait": False, "zones": ZONES, "roles": [
        {"role": "chief", "count": 1, "size": "t2.micro", "image": emulator.image_id},
        {"role": "worker", "count": 2, "size": ["g4dn.xlarge", "g5.xlarge"], "image": emulator.image_id}]},
        **options), check=check)


def zones_of(emulator, cluster, states=LIVE_STATES):
    """{node name: its availability zone} of the cluster's instances, as boto3 reads them."""
    return {name: instance["Placement"]["AvailabilityZone"]
            for name, instance in cluster_instances(emulator.boto3_client(), cluster, states).items()}


def test_the_plan_names_the_zones_and_sizes_in_order_of_preference(ec2_emulator, cluster):
    run, result = create(ec2_emulator, cluster, check=True)

    assert run.returncode == 0 and result, run.stdout[-4000:] + run.stderr[-2000:]
    assert (result["plan"]["worker"]["zone"], result["plan"]["worker"]["fallbacks"]) == (
        "us-east-1a", ["us-east-1b", "g5.xlarge"])
    assert zones_of(ec2_emulator, cluster) == {}


def test_no_capacity_in_the_first_zone_moves_the_whole_cluster_to_the_next(ec2_emulator, cluster):
    with ec2_emulator.refusing("RunInstances", "InsufficientInstanceCapacity", NO_CAPACITY, status=500,
                               when={"InstanceType": "g4dn.xlarge", "Placement.AvailabilityZone": "us-east-1a"}):
        run, result = create(ec2_emulator, cluster)

    assert run.returncode == 0 and result, run.stdout[-4000:] + run.stderr[-2000:]
    refused = [params for params in ec2_emulator.requests("RunInstances")
               if params.get("Placement.AvailabilityZone") == "us-east-1a" and params["InstanceType"] == "g4dn.xlarge"]
    assert refused, "no RunInstances asked for the workers in us-east-1a"
    assert [dict(entry, why=None) for entry in result["routed"]] == [
        {"role": "worker", "size": "g4dn.xlarge", "zone": "us-east-1a", "refusal": "capacity", "why": None}]
    assert result["routed"][0]["why"].startswith("worker: AWS refused g4dn.xlarge in us-east-1a: no capacity")
    assert result["placed"] == {"chief": {"size": "t2.micro", "zone": "us-east-1b"},
                                "worker": {"size": "g4dn.xlarge", "zone": "us-east-1b"}}
    # The chief made in us-east-1a before the workers' refusal went with the cluster: nothing is left there.
    assert zones_of(ec2_emulator, cluster) == {"%s-chief-0" % cluster: "us-east-1b",
                                               "%s-worker-0" % cluster: "us-east-1b",
                                               "%s-worker-1" % cluster: "us-east-1b"}
    assert sorted(node["name"] for node in result["created"]) == sorted(zones_of(ec2_emulator, cluster))


def test_no_capacity_in_any_zone_takes_the_next_size(ec2_emulator, cluster):
    with ec2_emulator.refusing("RunInstances", "InsufficientInstanceCapacity", NO_CAPACITY, status=500,
                               when={"InstanceType": "g4dn.xlarge"}):
        run, result = create(ec2_emulator, cluster)

    assert run.returncode == 0 and result, run.stdout[-4000:] + run.stderr[-2000:]
    assert [(entry["size"], entry["zone"], entry["refusal"]) for entry in result["routed"]] == [
        ("g4dn.xlarge", "us-east-1a", "capacity"), ("g4dn.xlarge", "us-east-1b", "capacity")]
    assert result["placed"]["worker"] == {"size": "g5.xlarge", "zone": "us-east-1a"}
    instances = cluster_instances(ec2_emulator.boto3_client(), cluster, LIVE_STATES)
    assert {name: (i["InstanceType"], i["Placement"]["AvailabilityZone"]) for name, i in instances.items()} == {
        "%s-chief-0" % cluster: ("t2.micro", "us-east-1a"),
        "%s-worker-0" % cluster: ("g5.xlarge", "us-east-1a"),
        "%s-worker-1" % cluster: ("g5.xlarge", "us-east-1a")}


def test_a_quota_refusal_is_not_routed_around(ec2_emulator, cluster):
    with ec2_emulator.refusing("RunInstances", "VcpuLimitExceeded", VCPU_LIMIT, when={"InstanceType": "g4dn.xlarge"}):
        run, result = create(ec2_emulator, cluster)

    assert run.returncode != 0 and result, run.stdout[-4000:] + run.stderr[-2000:]
    assert result["refusal"] == "quota"
    assert result["routed"] == []
    assert result["msg"].startswith("worker: AWS refused g4dn.xlarge in us-east-1a: your account's quota")
    assert [params.get("Placement.AvailabilityZone") for params in ec2_emulator.requests("RunInstances")
            if params["InstanceType"] == "g4dn.xlarge"] == ["us-east-1a"]
    assert zones_of(ec2_emulator, cluster) == {}


def test_with_spread_zones_only_the_refused_role_moves(ec2_emulator, cluster):
    with ec2_emulator.refusing("RunInstances", "InsufficientInstanceCapacity", NO_CAPACITY, status=500,
                               when={"InstanceType": "g4dn.xlarge", "Placement.AvailabilityZone": "us-east-1a"}):
        run, result = create(ec2_emulator, cluster, spread_zones=True)

    assert run.returncode == 0 and result, run.stdout[-4000:] + run.stderr[-2000:]
    assert [(entry["role"], entry["zone"]) for entry in result["routed"]] == [("worker", "us-east-1a")]
    assert zones_of(ec2_emulator, cluster) == {"%s-chief-0" % cluster: "us-east-1a",
                                               "%s-worker-0" % cluster: "us-east-1b",
                                               "%s-worker-1" % cluster: "us-east-1b"}


def test_no_capacity_anywhere_fails_naming_each_refusal_and_leaves_nothing(ec2_emulator, cluster):
    with ec2_emulator.refusing("RunInstances", "InsufficientInstanceCapacity", NO_CAPACITY, status=500,
                               when={"InstanceType": "g4dn.xlarge"}):
        run, result = run_libcloud_node(ec2_emulator, {"cluster": cluster, "wait": False, "zones": ZONES, "roles": [
            {"role": "chief", "count": 1, "size": "t2.micro", "image": ec2_emulator.image_id},
            {"role": "worker", "count": 2, "size": "g4dn.xlarge", "image": ec2_emulator.image_id}]})

    assert run.returncode != 0 and result, run.stdout[-4000:] + run.stderr[-2000:]
    assert result["refusal"] == "capacity"
    assert [(entry["zone"], entry["refusal"]) for entry in result["routed"]] == [("us-east-1a", "capacity")]
    assert result["msg"].startswith("worker: AWS refused g4dn.xlarge in us-east-1b: no capacity")
    assert zones_of(ec2_emulator, cluster) == {}
