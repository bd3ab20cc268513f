"""cloud=aws with zones and sizes in order of preference, against the EC2 emulator: the plan printed by provision
says where each role goes and where next, and a capacity refusal in the first zone (the harness's `refusing`, between
libcloud and moto) sends the cluster to the second, leaving nothing in the first.
"""

import json

from ansible_cli import run_playbook, tail
from emulators.ec2 import LIVE_STATES, NO_CAPACITY, cluster_instances


def provision(emulator, cluster):
    """provision.yml with a chief, a ps and two workers that prefer g4dn.xlarge, in us-east-1a, else us-east-1b."""
    profile = {"libcloud_zones": ["us-east-1a", "us-east-1b"], "libcloud_nodes": {
        "chief": {"size": "t2.micro", "image": emulator.image_id},
        "ps": {"size": "t2.micro", "image": emulator.image_id},
        "worker": {"size": ["g4dn.xlarge", "g5.xlarge"], "image": emulator.image_id}}}
    return run_playbook("playbooks/provision.yml", "cloud=aws", f"cluster_name={cluster}", "tf_workers=2",
                        "tf_ssh_from=127.0.0.1/32", "provision_wait=false", json.dumps(profile), env=emulator.env)


def test_the_plan_names_the_zones_and_a_capacity_refusal_moves_the_cluster(ec2_emulator, aws_cluster):
    with ec2_emulator.refusing("RunInstances", "InsufficientInstanceCapacity", NO_CAPACITY, status=500,
                               when={"InstanceType": "g4dn.xlarge", "Placement.AvailabilityZone": "us-east-1a"}):
        result = provision(ec2_emulator, aws_cluster)

    assert result.returncode == 0, tail(result)
    printed = " ".join(result.stdout.split())  # the callback folds long lines
    assert "worker: 2 x g4dn.xlarge (%s) in us-east-1a (then us-east-1b, g5.xlarge)" % ec2_emulator.image_id \
        in printed, tail(result)
    assert "routed around: worker: AWS refused g4dn.xlarge in us-east-1a: no capacity" in printed, tail(result)
    assert "placed: chief t2.micro in us-east-1b, worker g4dn.xlarge in us-east-1b, ps t2.micro in us-east-1b" \
        in printed, tail(result)
    instances = cluster_instances(ec2_emulator.boto3_client(), aws_cluster, LIVE_STATES)
    assert {name: i["Placement"]["AvailabilityZone"] for name, i in instances.items()} == {
        f"{aws_cluster}-chief-0": "us-east-1b", f"{aws_cluster}-ps-0": "us-east-1b",
        f"{aws_cluster}-worker-0": "us-east-1b", f"{aws_cluster}-worker-1": "us-east-1b"}
