"""What outlives a cluster's nodes on EC2 is found: the volumes and network interfaces that RunInstances tags at
creation with the node's tags (_cloud_ec2.tags_on_what_instances_make), named by destroy's leak check and the audit;
and what is in another region: destroy looks in every region the cluster was made in (recorded at deploy), the audit
in every region of EC2 with audit_regions=all.

On the EC2 emulator (tests/emulators). moto keeps the tags of a RunInstances TagSpecification for volumes but ignores
those for network interfaces: the interfaces' tags are read from the request itself (Ec2Emulator.requests), and the
audit's listing of a tagged interface is shown on one made with boto3, as one left behind would be.
"""

import json
import uuid

from ansible_cli import remove_artifacts, run_playbook, tail
from test_audit import instance_ids, tags

# The root device of moto's AMIs, kept when its node terminates.
SURVIVING_ROOT = {"libcloud_create_args": {"ex_blockdevicemappings": [
    {"DeviceName": "/dev/sda1", "Ebs": {"VolumeSize": 8, "DeleteOnTermination": "false"}}]}}


def tag_specifications(params):
    """{resource type: {tag: value}} of a RunInstances request's TagSpecification.N.* parameters."""
    types = {key.split(".")[1]: value for key, value in params.items()
             if key.startswith("TagSpecification.") and key.endswith(".ResourceType")}
    specs = {kind: {} for kind in types.values()}
    for key, value in params.items():
        parts = key.split(".")  # TagSpecification.N.Tag.M.Key
        if parts[0] == "TagSpecification" and parts[2] == "Tag" and parts[4] == "Key":
            specs[types[parts[1]]][value] = params[key[:-len("Key")] + "Value"]
    return specs


def volumes_of(ec2, cluster):
    return ec2.describe_volumes(Filters=[{"Name": "tag:tfdist_cluster", "Values": [cluster]}])["Volumes"]


def test_a_root_volume_that_outlives_its_node_and_a_tagged_interface_are_named_by_destroy_and_the_audit(ec2_emulator):
    aws, ec2 = ec2_emulator, ec2_emulator.boto3_client()
    cluster = f"v{uuid.uuid4().hex[:8]}"
    made = run_playbook("playbooks/provision.yml", "cloud=aws", f"cluster_name={cluster}", "tf_chief=0", "tf_workers=1",
                        "tf_ps=0", "tf_strategy=multi_worker_mirrored", "tf_ssh_from=127.0.0.1/32",
                        f"aws_image={aws.image_id}", "provision_wait=false", json.dumps(SURVIVING_ROOT), env=aws.env)
    interface, done = None, False
    try:
        assert made.returncode == 0, tail(made)
        # The node's tags (its Name aside) on everything RunInstances makes for it.
        [run] = [specs for specs in map(tag_specifications, aws.requests("RunInstances"))
                 if specs["instance"].get("tfdist_cluster") == cluster]
        node_tags = {key: value for key, value in run["instance"].items() if key != "Name"}
        assert node_tags["tfdist_role"] == "worker"
        assert run["volume"] == node_tags and run["network-interface"] == node_tags
        [volume] = volumes_of(ec2, cluster)
        assert {tag["Key"]: tag["Value"] for tag in volume["Tags"]} == node_tags

        # An interface of the cluster's that outlived its node (moto drops the tags RunInstances gives interfaces).
        subnet = ec2.describe_subnets(Filters=[{"Name": "default-for-az", "Values": ["true"]}])["Subnets"][0]
        interface = ec2.create_network_interface(SubnetId=subnet["SubnetId"], TagSpecifications=[
            {"ResourceType": "network-interface", "Tags": tags(**node_tags)}])["NetworkInterface"]["NetworkInterfaceId"]

        destroyed = run_playbook("playbooks/destroy.yml", "cloud=aws", f"cluster_name={cluster}", env=aws.env)
        assert destroyed.returncode != 0
        assert (f"cluster {cluster}: 2 resource(s) of it are left on cloud=aws: volume {volume['VolumeId']}, "
                f"network interface {interface}." in " ".join(destroyed.stdout.split())), tail(destroyed)
        assert volumes_of(ec2, cluster)[0]["State"] == "available"  # its node is gone, the volume is not

        listed = run_playbook("playbooks/audit.yml", "cloud=aws", f"audit_clusters={cluster}", env=aws.env)
        assert listed.returncode == 0, tail(listed)
        assert (f"{cluster} (ORPHAN: no inventory source on this controller): volume {volume['VolumeId']}, "
                f"network interface {interface}" in " ".join(listed.stdout.split())), tail(listed)

        # Once the user has removed them, destroy ends well (and forgets the cluster's region).
        ec2.delete_volume(VolumeId=volume["VolumeId"])
        ec2.delete_network_interface(NetworkInterfaceId=interface)
        interface = None
        again = run_playbook("playbooks/destroy.yml", "cloud=aws", f"cluster_name={cluster}", env=aws.env)
        assert again.returncode == 0, tail(again)
        done = True
    finally:
        if not done:  # the test stopped half-way: its node goes first, then what it leaves, then the rest
            run_playbook("playbooks/destroy.yml", "cloud=aws", f"cluster_name={cluster}", env=aws.env)
            for left in volumes_of(ec2, cluster):
                ec2.delete_volume(VolumeId=left["VolumeId"])
            if interface:
                ec2.delete_network_interface(NetworkInterfaceId=interface)
            run_playbook("playbooks/destroy.yml", "cloud=aws", f"cluster_name={cluster}", env=aws.env)
        remove_artifacts(cluster)


def regional(aws, region):
    """A boto3 EC2 client of the emulator in another region."""
    import boto3  # moto[server] brings it
    return boto3.client("ec2", region_name=region, aws_access_key_id="testing", aws_secret_access_key="testing",
                        endpoint_url=aws.endpoint)


def amazon_image(ec2):
    return min(image["ImageId"] for image in ec2.describe_images(
        Owners=["amazon"], Filters=[{"Name": "architecture", "Values": ["x86_64"]}])["Images"])


def test_destroy_looks_in_every_region_the_cluster_was_made_in_and_the_audit_sweeps_all_regions(ec2_emulator):
    aws = ec2_emulator
    cluster = f"r{uuid.uuid4().hex[:8]}"
    here, there, elsewhere = aws.boto3_client(), regional(aws, "eu-west-1"), regional(aws, "ap-southeast-2")
    made = [run_playbook("playbooks/provision.yml", "cloud=aws", f"cluster_name={cluster}", "tf_chief=0",
                         "tf_workers=1", "tf_ps=0", "tf_strategy=multi_worker_mirrored", "tf_ssh_from=127.0.0.1/32",
                         "provision_wait=false", *region, env=aws.env)
            for region in ([f"aws_image={aws.image_id}"],
                           # The same cluster made again in another region (a RADL file's region, -e provision_region).
                           ["provision_region=eu-west-1", f"aws_image={amazon_image(there)}"])]
    orphan = None
    try:
        assert [run.returncode for run in made] == [0, 0], tail(made[-1])
        assert [len(instance_ids(ec2, cluster)) for ec2 in (here, there)] == [1, 1]

        destroyed = run_playbook("playbooks/destroy.yml", "cloud=aws", f"cluster_name={cluster}", env=aws.env)
        assert destroyed.returncode == 0, tail(destroyed)
        assert [instance_ids(ec2, cluster) for ec2 in (here, there)] == [[], []]

        # What no deploy of this controller recorded: only the sweep of every region finds it.
        orphan_tags = tags(tfdist_cluster=cluster, tfdist_role="worker", tfdist_index="0", Name=f"{cluster}-worker-0")
        [orphan] = [i["InstanceId"] for i in elsewhere.run_instances(
            ImageId=amazon_image(elsewhere), InstanceType="t2.micro", MinCount=1, MaxCount=1,
            TagSpecifications=[{"ResourceType": "instance", "Tags": orphan_tags}])["Instances"]]
        near = run_playbook("playbooks/audit.yml", "cloud=aws", f"audit_clusters={cluster}", env=aws.env)
        assert near.returncode == 0 and orphan not in near.stdout, tail(near)
        swept = run_playbook("playbooks/audit.yml", "cloud=aws", f"audit_clusters={cluster}", "audit_regions=all",
                             "remove_orphans=true", env=aws.env)
        assert swept.returncode == 0, tail(swept)
        assert f"ap-southeast-2: {cluster} (ORPHAN: no inventory source on this controller): node " \
               f"{cluster}-worker-0 ({orphan})" in " ".join(swept.stdout.split()), tail(swept)
        assert instance_ids(elsewhere, cluster) == []
    finally:
        for ec2 in (here, there, elsewhere):
            ids = instance_ids(ec2, cluster)
            if ids:
                ec2.terminate_instances(InstanceIds=ids)
        run_playbook("playbooks/destroy.yml", "cloud=aws", f"cluster_name={cluster}", env=aws.env)
        remove_artifacts(cluster)
