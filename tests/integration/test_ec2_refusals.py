"""A cloud's refusal named with what to do: EC2 at the emulator answers the workers' RunInstances with a refusal of
AWS's (the harness's `refusing`, in place of moto), through libcloud's real EC2 driver. The module fails with the
refusal's class, a message naming role, size and zone, and leaves nothing of the cluster (boto3 reads what is left).
A RADL file that lists zones and sizes in order of preference (availability_zone, instance_type) is routed around
such a refusal by the provision playbook, as a cloud profile's libcloud_zones are.
"""

import textwrap
import uuid

import pytest

from ansible_cli import remove_artifacts, run_playbook, tail
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


@pytest.fixture
def provisioned(ec2_emulator):
    """A cluster name for playbooks/provision.yml on cloud=aws; destroyed with playbooks/destroy.yml afterwards."""
    name = "zoned-%s" % uuid.uuid4().hex[:8]
    yield name
    run_playbook("playbooks/destroy.yml", "cloud=aws", f"cluster_name={name}", env=ec2_emulator.env)
    remove_artifacts(name)


def test_a_radl_file_s_zones_move_the_cluster_to_the_next_zone_on_a_capacity_refusal(
        ec2_emulator, provisioned, tmp_path):
    url = "aws://us-east-1/%s" % ec2_emulator.image_id
    radl = tmp_path / "zones.radl"
    # The ps names no zone: it goes where the rest of the cluster goes.
    radl.write_text(textwrap.dedent(f"""\
        system chief (instance_type = 't2.micro' and disk.0.image.url = '{url}' and
                      availability_zone = ['us-east-1a', 'us-east-1b'])
        system ps (instance_type = 't2.micro' and disk.0.image.url = '{url}')
        system worker (instance_type = ['g4dn.xlarge', 'g5.xlarge'] and disk.0.image.url = '{url}' and
                       availability_zone = ['us-east-1a', 'us-east-1b'])
        deploy ps 1
        deploy worker 2
        """))
    with ec2_emulator.refusing("RunInstances", "InsufficientInstanceCapacity", NO_CAPACITY, status=500,
                               when={"InstanceType": "g4dn.xlarge", "Placement.AvailabilityZone": "us-east-1a"}):
        result = run_playbook("playbooks/provision.yml", f"radl={radl}", f"cluster_name={provisioned}",
                              "tf_ssh_from=127.0.0.1/32", "provision_wait=false", env=ec2_emulator.env)

    assert result.returncode == 0, tail(result)
    printed = " ".join(result.stdout.split())  # the callback folds long lines
    assert "worker: 2 x g4dn.xlarge (%s) in us-east-1a (then us-east-1b, g5.xlarge)" % ec2_emulator.image_id \
        in printed, tail(result)
    assert "routed around: worker: AWS refused g4dn.xlarge in us-east-1a: no capacity" in printed, tail(result)
    instances = cluster_instances(ec2_emulator.boto3_client(), provisioned, LIVE_STATES)
    assert {name: (i["InstanceType"], i["Placement"]["AvailabilityZone"]) for name, i in instances.items()} == {
        f"{provisioned}-chief-0": ("t2.micro", "us-east-1b"), f"{provisioned}-ps-0": ("t2.micro", "us-east-1b"),
        f"{provisioned}-worker-0": ("g4dn.xlarge", "us-east-1b"),
        f"{provisioned}-worker-1": ("g4dn.xlarge", "us-east-1b")}
