"""cloud=aws end to end against an EC2-compatible API (moto's server on loopback, tests/emulators).

Emulated instances answer no SSH, so these runs stop after the inventory: provision.yml (the first
play of deploy.yml), the inventory plugin, check.yml and destroy.yml, exactly as a user runs them.
"""

import json
import os
import stat
import subprocess

import pytest

from ansible_cli import REPO, run, run_inventory, run_playbook, tail
from emulators.ec2 import Ec2Emulator, instances_of, node_name

pytestmark = pytest.mark.usefixtures("ec2_emulator")

INVENTORY_DIR = os.path.join(REPO, "inventories", "clusters")
KEY_DIR = os.path.join(REPO, ".cache", "keys")
CONTROLLER_ID = os.path.join(REPO, ".cache", "controller-id")


def access_name(cluster):
    """The name of a cluster's key pair and security group: tfdist-<cluster>-<this controller's id, 6 characters>."""
    with open(CONTROLLER_ID, encoding="ascii") as handle:
        return f"tfdist-{cluster}-{handle.read().strip()[:6]}"


def tag(item, key):
    return {t["Key"]: t["Value"] for t in item.get("Tags", [])}.get(key)


class Cloud:
    """What a user would look at in the EC2 console, read with boto3 (not libcloud)."""

    def __init__(self, emulator):
        self.ec2 = emulator.boto3_client()

    def instances(self, cluster, states=("pending", "running")):
        return instances_of(self.ec2, cluster, states)

    def groups(self, cluster):
        return self.ec2.describe_security_groups(
            Filters=[{"Name": "tag:tfdist_cluster", "Values": [cluster]}])["SecurityGroups"]

    def keys(self, cluster):
        return self.ec2.describe_key_pairs(Filters=[{"Name": "tag:tfdist_cluster", "Values": [cluster]}])["KeyPairs"]

    def nothing_of(self, cluster):
        return not (self.instances(cluster) or self.groups(cluster) or self.keys(cluster))


@pytest.fixture
def aws(ec2_emulator):
    return ec2_emulator


@pytest.fixture
def cloud(aws):
    return Cloud(aws)


def aws_run(aws, playbook, cluster, *extra, env=None):
    return run_playbook(playbook, "cloud=aws", f"cluster_name={cluster}", "tf_ssh_from=127.0.0.1/32",
                        f"aws_image={aws.image_id}", "provision_wait=false", *extra, env=dict(aws.env, **(env or {})))


def local_files_of(cluster):
    return [path for path in (os.path.join(INVENTORY_DIR, f"{cluster}.libcloud.yml"), os.path.join(KEY_DIR, cluster))
            if os.path.exists(path)]


def test_provision_creates_a_secure_tagged_cluster_that_the_inventory_finds_and_destroy_removes(aws, cloud, aws_cluster):
    aws.reset_calls()
    result = aws_run(aws, "playbooks/provision.yml", aws_cluster, "tf_workers=3")
    assert result.returncode == 0, tail(result)

    # Instances: one per TF task, tagged at creation (no instance tagged afterwards), behind the cluster's group, with
    # the cluster's key; the workers, made together, go by their run's first index plus their launch index.
    assert not [value for params in aws.requests("CreateTags") for key, value in params.items()
                if key.startswith("ResourceId") and value.startswith("i-")]
    instances = cloud.instances(aws_cluster)
    names = sorted(node_name(i) for i in instances)
    assert names == sorted([f"{aws_cluster}-chief-0", f"{aws_cluster}-ps-0"]
                           + [f"{aws_cluster}-worker-{n}" for n in range(3)])
    for instance in instances:
        assert instance["KeyName"] == access_name(aws_cluster)
        assert [g["GroupName"] for g in instance["SecurityGroups"]] == [access_name(aws_cluster)]
    sizes = {tag(i, "tfdist_role"): i["InstanceType"] for i in instances}
    assert sizes == {"chief": "m5.xlarge", "worker": "g4dn.xlarge", "ps": "m5.large"}

    # The security group: SSH from the controller only, TF and HDFS ports from the group only.
    [group] = cloud.groups(aws_cluster)
    rules = group["IpPermissions"]
    ssh = [r for r in rules if r["FromPort"] == 22]
    assert len(ssh) == 1 and [ip["CidrIp"] for ip in ssh[0]["IpRanges"]] == ["127.0.0.1/32"]
    assert not ssh[0]["UserIdGroupPairs"]
    inside = [r for r in rules if r["FromPort"] != 22]
    assert {r["FromPort"] for r in inside} >= {2222, 8020, 9870}
    for rule in inside:
        assert not rule["IpRanges"], rule
        assert [p["GroupId"] for p in rule["UserIdGroupPairs"]] == [group["GroupId"]]

    # One key pair per cluster, its private half only on the controller, mode 0600.
    [key] = cloud.keys(aws_cluster)
    assert key["KeyName"] == access_name(aws_cluster)
    private = os.path.join(KEY_DIR, aws_cluster)
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o600
    # No credentials in what was written.
    written = open(os.path.join(INVENTORY_DIR, f"{aws_cluster}.libcloud.yml")).read()
    assert "testing" not in written and "SECRET" not in written.upper()

    # The inventory plugin finds the cluster grouped by role, from the repo's inventory (no -i).
    out = run_playbook("playbooks/check.yml", "cloud=aws", f"cluster_name={aws_cluster}", "tf_workers=3",
                       "tf_ssh_from=127.0.0.1/32", f"aws_image={aws.image_id}", env=aws.env)
    assert out.returncode == 0, tail(out)
    assert "nothing to create: the cluster is up" in out.stdout
    inventory = json.loads(run_inventory("--list", env=aws.env, check=True).stdout)
    group_name = "tfdist_" + aws_cluster
    assert sorted(inventory[group_name + "_worker"]["hosts"]) == [f"{aws_cluster}-worker-{n}" for n in range(3)]
    assert inventory[group_name + "_chief"]["hosts"] == [f"{aws_cluster}-chief-0"]
    assert inventory[group_name + "_ps"]["hosts"] == [f"{aws_cluster}-ps-0"]

    # A second provision changes nothing and makes no duplicates.
    again = aws_run(aws, "playbooks/provision.yml", aws_cluster, "tf_workers=3")
    assert again.returncode == 0, tail(again)
    assert "changed=0" in again.stdout.split("PLAY RECAP")[-1]
    assert len(cloud.instances(aws_cluster)) == 5

    destroyed = run_playbook("playbooks/destroy.yml", "cloud=aws", f"cluster_name={aws_cluster}", env=aws.env)
    assert destroyed.returncode == 0, tail(destroyed)
    assert cloud.nothing_of(aws_cluster)
    assert local_files_of(aws_cluster) == []


def test_tensorboard_opens_its_port_to_the_controller_only(aws, cloud, aws_cluster):
    result = aws_run(aws, "playbooks/provision.yml", aws_cluster, "tf_tensorboard=true", "tf_tensorboard_port=6010")
    assert result.returncode == 0, tail(result)
    [group] = cloud.groups(aws_cluster)
    by_port = {r["FromPort"]: r for r in group["IpPermissions"]}
    for port in (22, 6010):  # from the controller's address, not from the cluster or anywhere else
        assert [ip["CidrIp"] for ip in by_port[port]["IpRanges"]] == ["127.0.0.1/32"], port
        assert not by_port[port]["UserIdGroupPairs"], port
    for port in (2222, 8020, 9870):  # still only from the cluster's own nodes
        assert not by_port[port]["IpRanges"] and by_port[port]["UserIdGroupPairs"], port


def test_an_interrupted_batch_converges_without_duplicates(aws, cloud, aws_cluster):
    from ansible_collections.tfdist.cluster.plugins.module_utils._owner import controller_id

    # What a deploy of this controller killed right after RunInstances left before tfdist 0.5.0 (it numbered a batch's
    # nodes afterwards): nodes of the cluster without an index.
    cloud.ec2.run_instances(ImageId=aws.image_id, InstanceType="g4dn.xlarge", MinCount=2, MaxCount=2,
                            TagSpecifications=[{"ResourceType": "instance", "Tags": [
                                {"Key": "tfdist_cluster", "Value": aws_cluster}, {"Key": "tfdist_role", "Value": "worker"},
                                {"Key": "tfdist_index", "Value": "pending"},
                                {"Key": "tfdist_owner", "Value": controller_id(CONTROLLER_ID)},
                                {"Key": "Name", "Value": f"{aws_cluster}-worker-pending"}]}])
    result = aws_run(aws, "playbooks/provision.yml", aws_cluster, "tf_workers=2")
    # Without the key of that run this controller cannot reach them: it refuses...
    assert result.returncode != 0
    assert f"cluster_name: 2 node(s) of a cluster named '{aws_cluster}' already run on aws" in result.stdout
    assert len(cloud.instances(aws_cluster)) == 2  # ...and changes nothing.

    # With the key of that run in place, the run converges: nodes without an index go, numbered ones come.
    os.makedirs(KEY_DIR, mode=0o700, exist_ok=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", os.path.join(KEY_DIR, aws_cluster)], check=True)
    result = aws_run(aws, "playbooks/provision.yml", aws_cluster, "tf_workers=2")
    assert result.returncode == 0, tail(result)
    names = sorted(node_name(i) for i in cloud.instances(aws_cluster))
    assert names == [f"{aws_cluster}-chief-0", f"{aws_cluster}-ps-0", f"{aws_cluster}-worker-0", f"{aws_cluster}-worker-1"]


@pytest.mark.parametrize("extra, env, message", [
    ([], {"AWS_ACCESS_KEY_ID": ""}, "Missing credentials for provider 'ec2': set credentials.access_key (or env AWS_ACCESS_KEY_ID)"),
    ([], {"AWS_DEFAULT_REGION": "mars-north-1"}, "region: unknown region 'mars-north-1' for provider 'ec2'"),
    (["aws_image=ami-00000000000000bad"], {}, "roles[0].image (chief nodes): no item with id or name 'ami-00000000000000bad'"),
    (['{"libcloud_nodes": {"chief": {"size": "x9.huge", "image": "IMAGE"}, "worker": {"size": "t2.micro", "image": "IMAGE"},'
      ' "ps": {"size": "t2.micro", "image": "IMAGE"}}}'], {},
     "roles[0].size (chief nodes): no item with id or name 'x9.huge'"),
    (["tf_workers=0"], {}, "tf_workers: must be a whole number >= 1"),
    (["tf_ps=-2"], {}, "tf_ps: must be a whole number >= 1"),
])
def test_bad_cloud_input_names_the_field_and_creates_nothing(aws, cloud, aws_cluster, extra, env, message):
    extra = [e.replace("IMAGE", aws.image_id) for e in extra]
    for playbook in ("playbooks/check.yml", "playbooks/deploy.yml"):
        result = aws_run(aws, playbook, aws_cluster, *extra, env=env)
        assert result.returncode != 0
        assert message in result.stdout, tail(result)
    assert cloud.nothing_of(aws_cluster)
    assert local_files_of(aws_cluster) == []


def test_credentials_the_cloud_refuses_name_the_credentials_and_create_nothing(aws_cluster):
    with Ec2Emulator(check_credentials=True) as strict:
        result = run_playbook("playbooks/deploy.yml", "cloud=aws", f"cluster_name={aws_cluster}",
                              "tf_ssh_from=127.0.0.1/32", env=dict(strict.env, AWS_ACCESS_KEY_ID="AKIAWRONGWRONGWRONG"))
        assert result.returncode != 0
        assert "credentials: the ec2 provider refused them" in result.stdout, tail(result)
        assert "AWS_ACCESS_KEY_ID" in result.stdout
        assert "AKIAWRONGWRONGWRONG" not in result.stdout
        assert local_files_of(aws_cluster) == []


def test_a_name_taken_on_another_cloud_is_refused(aws, cloud, aws_cluster):
    taken = run_playbook("playbooks/provision.yml", "cloud=local", f"cluster_name={aws_cluster}")
    assert taken.returncode == 0, tail(taken)
    try:
        result = aws_run(aws, "playbooks/deploy.yml", aws_cluster)
        assert result.returncode != 0
        assert f"cluster_name: a cluster named '{aws_cluster}' already runs on cloud=local" in result.stdout, \
            tail(result)
        assert cloud.nothing_of(aws_cluster)
    finally:
        run_playbook("playbooks/destroy.yml", "cloud=local", f"cluster_name={aws_cluster}")


def test_a_cluster_of_this_name_without_this_controllers_key_is_refused(aws, cloud, aws_cluster):
    """Nodes of the name exist, but the key is not here: another controller's cluster, left alone."""
    first = aws_run(aws, "playbooks/provision.yml", aws_cluster)
    assert first.returncode == 0, tail(first)
    instances = sorted(i["InstanceId"] for i in cloud.instances(aws_cluster))
    key = os.path.join(KEY_DIR, aws_cluster)
    os.rename(key, key + ".elsewhere")
    try:
        again = aws_run(aws, "playbooks/provision.yml", aws_cluster, "tf_workers=3")
        assert again.returncode != 0
        assert (f"cluster_name: {len(instances)} node(s) of a cluster named '{aws_cluster}' already run on aws"
                in again.stdout and "this controller holds no key for it" in again.stdout), tail(again)
        assert not os.path.exists(key)  # no key of its own made up for someone else's nodes
        assert sorted(i["InstanceId"] for i in cloud.instances(aws_cluster)) == instances  # nothing added
    finally:
        os.rename(key + ".elsewhere", key)


def test_credentials_from_an_ansible_vault_file_reach_the_modules_and_the_inventory(aws, cloud, aws_cluster, tmp_path):
    password, creds = tmp_path / "vault-password", tmp_path / "aws.vault.yml"
    password.write_text("correct horse\n")
    creds.write_text("access_key: AKIAVAULTED0000000001\nsecret_key: from-the-vault\n")
    env = dict(aws.env, AWS_ACCESS_KEY_ID="", AWS_SECRET_ACCESS_KEY="", ANSIBLE_VAULT_PASSWORD_FILE=str(password))
    run("ansible-vault", "encrypt", creds, env=env, check=True)

    result = aws_run(aws, "playbooks/provision.yml", aws_cluster, f"cloud_credentials={creds}", env=env)
    assert result.returncode == 0, tail(result)
    assert len(cloud.instances(aws_cluster)) == 4
    written = open(os.path.join(INVENTORY_DIR, f"{aws_cluster}.libcloud.yml")).read()
    assert "AKIAVAULTED" not in written and "from-the-vault" not in written
    assert "AKIAVAULTED" not in result.stdout and "from-the-vault" not in result.stdout

    destroyed = run_playbook("playbooks/destroy.yml", "cloud=aws", f"cluster_name={aws_cluster}",
                             f"cloud_credentials={creds}", env=env)
    assert destroyed.returncode == 0, tail(destroyed)
    assert cloud.nothing_of(aws_cluster)
