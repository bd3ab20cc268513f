"""The leak audit as a user meets it: playbooks/audit.yml and the check that ends playbooks/destroy.yml.

On cloud=aws against the EC2 emulator (tests/emulators), and on cloud=docker against the real engine. Orphans are
made behind tfdist's back (boto3, the docker driver): tagged like a cluster's, with no inventory source here. Every
run names its own clusters (audit_clusters=...), so the audit touches nothing of other tests or other clusters.
"""

import uuid

from ansible_cli import remove_artifacts, run_playbook, tail
from docker_engine import cluster_containers
from emulators.ec2 import LIVE_STATES, instances_of


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
    from ansible_collections.tfdist.cluster.plugins.module_utils._cluster import node_name, node_tags
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
