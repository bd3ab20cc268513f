"""The leak audit as a user meets it: playbooks/audit.yml and the check that ends playbooks/destroy.yml.

On cloud=aws against the EC2 emulator (tests/emulators), and on cloud=docker against the real engine. Orphans are
made behind tfdist's back (boto3, the docker driver): tagged like a cluster's, with no inventory source here. Every
run names its own clusters (audit_clusters=...), so the audit touches nothing of other tests or other clusters.

Whose a cluster is: a second controller is the same playbooks with another tfdist home (TFDIST_HOME: its own
controller id, keys and inventory sources, named with -i), against the same account.
"""

import json
import os
import uuid

from ansible_cli import REPO, remove_artifacts, run_inventory, run_playbook, start_playbook, tail
from docker_engine import cluster_containers
from emulators.ec2 import LIVE_STATES, instances_of, owned


def tags(**pairs):
    return [{"Key": key, "Value": value} for key, value in pairs.items()]


def instance_ids(ec2, cluster):
    return [i["InstanceId"] for i in instances_of(ec2, cluster, LIVE_STATES)]


def groups_of(ec2, cluster):
    return [g["GroupId"] for g in ec2.describe_security_groups(
        Filters=[{"Name": "tag:tfdist_cluster", "Values": [cluster]}])["SecurityGroups"]]


def test_the_audit_names_an_orphan_on_ec2_and_removes_it_only_when_asked(ec2_emulator):
    aws, ec2 = ec2_emulator, ec2_emulator.boto3_client()
    cluster = f"o{uuid.uuid4().hex[:8]}"
    # What a deploy killed after its first RunInstances leaves, or another controller's cluster: no inventory source here.
    group = ec2.create_security_group(GroupName=f"tfdist-{cluster}", Description="orphan", TagSpecifications=[
        {"ResourceType": "security-group", "Tags": tags(tfdist_cluster=cluster)}])["GroupId"]
    [instance] = [i["InstanceId"] for i in ec2.run_instances(
        ImageId=aws.image_id, InstanceType="t2.micro", MinCount=1, MaxCount=1, SecurityGroupIds=[group],
        TagSpecifications=[{"ResourceType": "instance", "Tags": tags(
            tfdist_cluster=cluster, tfdist_role="worker", tfdist_index="0", Name=f"{cluster}-worker-0")}])["Instances"]]

    listed = run_playbook("playbooks/audit.yml", "cloud=aws", f"audit_clusters={cluster}", env=aws.env)
    assert listed.returncode == 0, tail(listed)
    assert f"{cluster} (ORPHAN: no inventory source on this controller): node {cluster}-worker-0 ({instance})" \
        in " ".join(listed.stdout.split()), tail(listed)
    assert f"security group tfdist-{cluster} ({group})" in " ".join(listed.stdout.split())
    assert instance_ids(ec2, cluster) == [instance] and groups_of(ec2, cluster) == [group]  # nothing deleted

    removed = run_playbook("playbooks/audit.yml", "cloud=aws", f"audit_clusters={cluster}", "remove_orphans=true",
                           env=aws.env)
    assert removed.returncode == 0, tail(removed)
    assert instance_ids(ec2, cluster) == [] and groups_of(ec2, cluster) == []


def test_destroy_fails_naming_a_tagged_disk_it_left_behind(ec2_emulator):
    aws, ec2 = ec2_emulator, ec2_emulator.boto3_client()
    cluster = f"l{uuid.uuid4().hex[:8]}"
    made = run_playbook("playbooks/provision.yml", "cloud=aws", f"cluster_name={cluster}", "tf_workers=1", "tf_ps=0",
                        "tf_strategy=multi_worker_mirrored", "tf_ssh_from=127.0.0.1/32", f"aws_image={aws.image_id}",
                        "provision_wait=false", env=aws.env)
    assert made.returncode == 0, tail(made)
    # A data disk made for the cluster (tagged for it, as a user tags for cost reports) that outlived its node.
    volume = ec2.create_volume(Size=1, AvailabilityZone=f"{aws.region}a", TagSpecifications=[
        {"ResourceType": "volume", "Tags": tags(tfdist_cluster=cluster)}])["VolumeId"]
    try:
        destroyed = run_playbook("playbooks/destroy.yml", "cloud=aws", f"cluster_name={cluster}", env=aws.env)
        assert destroyed.returncode != 0
        assert (f"cluster {cluster}: 1 resource(s) of it are left on cloud=aws: volume {volume}."
                in " ".join(destroyed.stdout.split())), tail(destroyed)
        # What destroy owns is gone all the same.
        assert instance_ids(ec2, cluster) == [] and groups_of(ec2, cluster) == []
    finally:
        ec2.delete_volume(VolumeId=volume)
        run_playbook("playbooks/destroy.yml", "cloud=aws", f"cluster_name={cluster}", env=aws.env)
        remove_artifacts(cluster)


def test_an_orphaned_container_is_named_and_removed_with_its_network(docker_engine, docker_base_image):
    from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._cluster import node_name, node_tags
    from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import get_driver

    cluster = f"d{uuid.uuid4().hex[:8]}"
    # A node of a cluster whose deploy never wrote its inventory source (killed), made through the docker driver.
    node = get_driver("docker").create_node(name=node_name(cluster, "worker", 0), size="small",
                                            image=docker_base_image, ex_metadata=node_tags(cluster, "worker", 0))
    try:
        listed = run_playbook("playbooks/audit.yml", "cloud=docker", f"audit_clusters={cluster}")
        assert listed.returncode == 0, tail(listed)
        assert (f"{cluster} (ORPHAN: no inventory source on this controller): node {cluster}-worker-0 ({node.id}), "
                f"network tfdist-{cluster}" in " ".join(listed.stdout.split())), tail(listed)
        assert [c.id for c in cluster_containers(docker_engine, cluster)] == [node.id]

        removed = run_playbook("playbooks/audit.yml", "cloud=docker", f"audit_clusters={cluster}", "remove_orphans=true")
        assert removed.returncode == 0, tail(removed)
        assert cluster_containers(docker_engine, cluster) == []
        assert docker_engine.networks.list(names=[f"tfdist-{cluster}"]) == []

        # After a destroy (here the orphan's), the audit finds nothing of the cluster.
        again = run_playbook("playbooks/audit.yml", "cloud=docker", f"audit_clusters={cluster}")
        assert again.returncode == 0 and "nothing of tfdist" in again.stdout, tail(again)
    finally:
        for container in cluster_containers(docker_engine, cluster):
            container.remove(force=True)
        for network in docker_engine.networks.list(names=[f"tfdist-{cluster}"]):
            network.remove()


def test_a_static_cloud_has_nothing_to_audit():
    result = run_playbook("playbooks/audit.yml", "cloud=local")
    assert result.returncode == 0, tail(result)
    assert "nothing of it is in a cloud to audit" in result.stdout


def owner_of(home):
    """The first 6 characters of a controller's id, as names and messages carry them."""
    with open(os.path.join(home, ".cache", "controller-id"), encoding="ascii") as handle:
        return handle.read().strip()[:6]


class Controller:
    """The playbooks run from one tfdist home against the EC2 emulator: this checkout's, or another's."""

    def __init__(self, aws, home=REPO, ssh_from="127.0.0.1/32"):
        self.aws, self.home, self.ssh_from = aws, str(home), ssh_from
        self.env = dict(aws.env, TFDIST_HOME=self.home)
        inventory = os.path.join(self.home, "inventories", "clusters")
        os.makedirs(inventory, exist_ok=True)
        self.args = ("-i", inventory)

    def run(self, playbook, cluster, *extra):
        return run_playbook(playbook, "cloud=aws", f"cluster_name={cluster}", *extra, env=self.env, args=self.args)

    def _provision(self, cluster):
        """provision.yml of a 2-node cluster (chief and worker), not waited for (emulated nodes answer no SSH)."""
        return ("playbooks/provision.yml", "cloud=aws", f"cluster_name={cluster}", "tf_workers=1", "tf_ps=0",
                "tf_strategy=multi_worker_mirrored", f"tf_ssh_from={self.ssh_from}", f"aws_image={self.aws.image_id}",
                "provision_wait=false")

    def provision(self, cluster):
        return run_playbook(*self._provision(cluster), env=self.env, args=self.args)

    def start_provision(self, cluster):
        return start_playbook(*self._provision(cluster), env=self.env, args=self.args)

    def inventory_ids(self, cluster):
        """The instance ids of the cluster's hosts, as this controller's inventory shows them."""
        listed = json.loads(run_inventory("--list", *self.args, env=self.env, check=True).stdout)
        hosts = listed.get("tfdist_" + cluster, {}).get("hosts", [])
        ids = [listed["_meta"]["hostvars"][host]["libcloud_id"] for host in hosts]
        # Values from the cloud are unsafe (never templated): the JSON wraps them.
        return sorted(i["__ansible_unsafe"] if isinstance(i, dict) else i for i in ids)


def test_two_controllers_deploy_one_cluster_name_and_each_destroys_only_its_own(ec2_emulator, tmp_path):
    ec2 = ec2_emulator.boto3_client()
    cluster = f"w{uuid.uuid4().hex[:8]}"
    mine, theirs = Controller(ec2_emulator), Controller(ec2_emulator, tmp_path / "colleague", ssh_from="127.0.0.2/32")
    try:
        for controller in (mine, theirs):
            made = controller.provision(cluster)
            assert made.returncode == 0, tail(made)
        a, b = owner_of(mine.home), owner_of(theirs.home)
        assert a != b

        # Two clusters of one name side by side: each its own nodes, key pair and group (named after its owner),
        # and neither deploy revoked the other's SSH address.
        by_owner = {owner[:6]: items for owner, items in owned(ec2, cluster).items()}
        assert sorted(by_owner) == sorted([a, b])
        assert by_owner[a]["groups"] == {f"tfdist-{cluster}-{a}": ["127.0.0.1/32"]}
        assert by_owner[b]["groups"] == {f"tfdist-{cluster}-{b}": ["127.0.0.2/32"]}
        assert by_owner[a]["keys"] == [f"tfdist-{cluster}-{a}"] and by_owner[b]["keys"] == [f"tfdist-{cluster}-{b}"]
        assert len(by_owner[a]["instances"]) == len(by_owner[b]["instances"]) == 2
        # Each controller's inventory holds its own nodes only.
        assert mine.inventory_ids(cluster) == sorted(by_owner[a]["instances"])
        assert theirs.inventory_ids(cluster) == sorted(by_owner[b]["instances"])

        listed = mine.run("playbooks/audit.yml", cluster, f"audit_clusters={cluster}", "remove_orphans=true")
        assert listed.returncode == 0, tail(listed)
        text = " ".join(listed.stdout.split()).replace("''", "'")  # YAML output doubles a quote in a quoted line
        assert f"{cluster} (inventory source on this controller): node {cluster}-chief-0" in text, tail(listed)
        assert f"{cluster} (another controller's: owner {b}...): node {cluster}-chief-0" in text
        assert f"security group tfdist-{cluster}-{b}" in text
        assert f"cluster {cluster} on aws belongs to another controller (owner {b}...): not touched" in text
        assert "ORPHAN" not in text

        destroyed = mine.run("playbooks/destroy.yml", cluster)
        assert destroyed.returncode == 0, tail(destroyed)
        assert (f"cluster {cluster} on aws belongs to another controller (owner {b}...): not touched"
                in " ".join(destroyed.stdout.split())), tail(destroyed)
        left = {owner[:6]: items for owner, items in owned(ec2, cluster).items()}
        assert left == {b: by_owner[b]}  # the colleague's cluster as it was

        destroyed = theirs.run("playbooks/destroy.yml", cluster)
        assert destroyed.returncode == 0, tail(destroyed)
        assert owned(ec2, cluster) == {}
    finally:
        for controller in (mine, theirs):
            controller.run("playbooks/destroy.yml", cluster)
        remove_artifacts(cluster)


def test_a_second_deploy_of_a_cluster_on_one_controller_is_refused_naming_the_first_and_makes_no_duplicates(
        ec2_emulator):
    ec2 = ec2_emulator.boto3_client()
    cluster = f"r{uuid.uuid4().hex[:8]}"
    controller = Controller(ec2_emulator)
    runs = [controller.start_provision(cluster) for attempt in range(2)]
    try:
        outputs = [run.communicate(timeout=600)[0] for run in runs]
        codes = [run.returncode for run in runs]
        assert sorted(code == 0 for code in codes) == [False, True], outputs
        winner, loser = (0, 1) if codes[0] == 0 else (1, 0)
        refused = " ".join(outputs[loser].split())
        assert f"cluster {cluster}: another run on this controller deploys or destroys it (pid {runs[winner].pid}: " \
            in refused, outputs[loser]
        assert "playbooks/provision.yml" in refused.split(f"(pid {runs[winner].pid}: ", 1)[1]

        names = sorted(i["tags"]["Name"] for i in instances_of(ec2, cluster, LIVE_STATES))
        assert names == [f"{cluster}-chief-0", f"{cluster}-worker-0"]
    finally:
        for run in runs:
            if run.poll() is None:
                run.kill()
                run.wait()
        controller.run("playbooks/destroy.yml", cluster)
        remove_artifacts(cluster)
