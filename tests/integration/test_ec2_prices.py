"""The whole price on EC2, through libcloud's real EC2 driver against moto's emulator: a size libcloud's list has no
price for, priced by the cloud profile, and tf_budget refusing a plan over it before anything is created."""

import json
import os
import uuid

import pytest

from ansible_cli import REPO, run_playbook, tail
from emulators.ec2 import LIVE_STATES, cluster_instances, terminate_cluster

KEY_DIR = os.path.join(REPO, ".cache", "keys")


@pytest.fixture
def cluster(ec2_emulator):
    name = "price-%s" % uuid.uuid4().hex[:8]
    yield name
    terminate_cluster(ec2_emulator.boto3_client(), name)


def nodes_priced(image):
    """The aws profile's nodes, the chief's m5.xlarge (no us-east-1 price in libcloud 3.9's list) with a price."""
    return json.dumps({"libcloud_nodes": {
        "chief": {"size": "m5.xlarge", "image": image, "price_per_hour": 0.192},
        "worker": {"size": "g4dn.xlarge", "image": image},
        "ps": {"size": "m5.large", "image": image},
        "evaluator": {"size": "m5.large", "image": image}}})


def run(ec2_emulator, playbook, cluster, *extra):
    return run_playbook(playbook, "cloud=aws", f"cluster_name={cluster}", "tf_ssh_from=127.0.0.1/32",
                        f"aws_image={ec2_emulator.image_id}", nodes_priced(ec2_emulator.image_id), *extra,
                        env=ec2_emulator.env)


def test_the_plan_prices_m5_xlarge_from_the_profile(ec2_emulator, cluster):
    result = run(ec2_emulator, "playbooks/check.yml", cluster, "tf_budget=5", "tf_deadline=2h")
    assert result.returncode == 0, tail(result)
    out = " ".join(result.stdout.split())  # the plan's lines as printed, unwrapped
    image = ec2_emulator.image_id
    assert f"chief: 1 x m5.xlarge ({image}), $0.192/h each (profile): create {cluster}-chief-0" in out, tail(result)
    assert f"worker: 2 x g4dn.xlarge ({image}), $0.526/h each: create {cluster}-worker-0" in out
    assert "cost: $1.34/h for 4 nodes at list prices, chief nodes priced by the profile" in out
    assert "not counting" not in out


def test_a_deploy_over_tf_budget_is_refused_naming_both_figures_and_creates_nothing(ec2_emulator, cluster):
    result = run(ec2_emulator, "playbooks/deploy.yml", cluster, "tf_budget=2.50", "tf_deadline=2h")
    assert result.returncode != 0
    out = " ".join(result.stdout.split())
    assert ("tf_budget: the plan costs $1.34/h; with tf_deadline=2h that is $2.68, over the budget of $2.50"
            in out), tail(result)
    assert cluster_instances(ec2_emulator.boto3_client(), cluster, LIVE_STATES) == {}
    assert not os.path.exists(os.path.join(KEY_DIR, cluster))  # refused before the cluster's key pair is made


def test_a_budget_the_plan_cannot_check_is_named_and_refuses_nothing(ec2_emulator, cluster):
    # The profile as shipped: no price for m5.xlarge, the chief's size.
    result = run_playbook("playbooks/check.yml", "cloud=aws", f"cluster_name={cluster}", "tf_ssh_from=127.0.0.1/32",
                          f"aws_image={ec2_emulator.image_id}", "tf_budget=5", "tf_deadline=1h", env=ec2_emulator.env)
    assert result.returncode == 0, tail(result)
    out = " ".join(result.stdout.split())
    assert ("tf_budget: cannot check the plan against the budget of $5.00: no price is known for m5.xlarge "
            "(give the role a price_per_hour in the cloud profile)") in out, tail(result)
