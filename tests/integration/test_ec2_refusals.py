"""A cloud's refusal named with what to do: EC2 at the emulator answers the workers' RunInstances with a refusal of
AWS's (the harness's `refusing`, in place of moto), through libcloud's real EC2 driver. The module fails with the
refusal's class, a message naming role, size and zone, and leaves nothing of the cluster (boto3 reads what is left).
"""

import uuid

import pytest

from emulators.ec2 import (LIVE_STATES, NO_CAPACITY, VCPU_LIMIT, cluster_instances, run_libcloud_node,
                           terminate_cluster)


@pytest.fixture
def cluster(ec2_emulator):
    name = "refused-%s" % uuid.uuid4().hex[:8]
    yield name
    terminate_cluster(ec2_emulator.boto3_client(), name)


def create(emulator, cluster):
    """A chief (t2.micro, which the emulator makes) and two GPU workers in us-east-1a."""
    return run_libcloud_node(emulator, {"cluster": cluster, "wait": False, "roles": [
        {"role": "chief", "count": 1, "size": "t2.micro", "image": emulator.image_id},
        {"role": "worker", "count": 2, "size": "g4dn.xlarge", "image": emulator.image_id, "location": "us-east-1a"}]})


def test_no_capacity_for_the_workers_is_named_and_leaves_nothing(ec2_emulator, cluster):
    with ec2_emulator.refusing("RunInstances", "InsufficientInstanceCapacity", NO_CAPACITY, status=500,
                               when={"InstanceType": "g4dn.xlarge"}):
        run, result = create(ec2_emulator, cluster)

    assert run.returncode != 0 and result, run.stdout[-4000:] + run.stderr[-2000:]
    assert result["refusal"] == "capacity"
    assert result["msg"].startswith(
        "worker: AWS refused g4dn.xlarge in us-east-1a: no capacity of this size there now "
        "(InsufficientInstanceCapacity); try another zone (AWS suggests us-east-1b, us-east-1c) or size, or again "
        "later (not created: %s-worker-0, %s-worker-1). Destroyed the 1 node(s) this run had created"
        % (cluster, cluster))
    assert ec2_emulator.requests("RunInstances"), "the refusal answered no RunInstances"
    assert cluster_instances(ec2_emulator.boto3_client(), cluster, LIVE_STATES) == {}


def test_a_new_account_s_gpu_quota_is_named_with_the_quota_to_ask_for(ec2_emulator, cluster):
    with ec2_emulator.refusing("RunInstances", "VcpuLimitExceeded", VCPU_LIMIT, when={"InstanceType": "g4dn.xlarge"}):
        run, result = create(ec2_emulator, cluster)

    assert run.returncode != 0 and result, run.stdout[-4000:] + run.stderr[-2000:]
    assert result["refusal"] == "quota"
    assert result["msg"].startswith(
        "worker: AWS refused g4dn.xlarge in us-east-1a: your account's quota for G and VT instances is 0 vCPUs "
        "(VcpuLimitExceeded); ask for a quota increase (Service Quotas \"Running On-Demand G and VT instances\") or "
        "choose another size")
    assert cluster_instances(ec2_emulator.boto3_client(), cluster, LIVE_STATES) == {}
