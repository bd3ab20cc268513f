"""Images baked once (playbooks/image.yml), booted by deploys, kept by destroy, listed by the audit, removed when asked.

On cloud=docker-vm the whole way: the transient node installs TensorFlow from the controller's wheelhouse, is cleaned
and committed; a deploy from the image trains without installing anything. On the EC2 emulator the cloud's part
(CreateImage with its tags, the AMI booted by a provision, kept by destroy, listed by the audit, deregistered with its
snapshots): its instances answer no SSH, so the bake saves the node as it booted (--skip-tags configure).

Every run records its images in a folder of its own (provision_images_dir), not in the checkout's images/.
"""

import json
import os
import uuid

import pytest
import yaml

from ansible_cli import REPO, remove_artifacts, run_playbook, tail
from docker_engine import cluster_containers
from emulators.ec2 import instances_of

CA_BUNDLE = os.environ.get("TFDIST_CA_BUNDLE") or "/etc/ssl/certs/ca-certificates.crt"
ROLES = ("chief", "worker", "ps", "evaluator")
# One node installs TensorFlow (600 MB), then its disk is committed, on a 2-core machine shared with other tests.
BAKE_TIMEOUT = 1800
# What an image must not ship, looked for in a container of it that does not boot (see test below).
SHIPPED = ("for path in /etc/ssh/ssh_host_ed25519_key /home/debian/.ssh/authorized_keys /var/lib/cloud/instance "
           "/var/lib/cloud/seed/nocloud/user-data; do [ -e $path ] && echo ships $path; done; "
           "echo machine-id $(wc -c < /etc/machine-id); "
           "[ -d /opt/tfdist/venv/lib/python3.11/site-packages/tensorflow ] && echo tensorflow; true")


def flat(result):
    """A run's output with every run of white space one space: Ansible folds long messages over lines."""
    return " ".join(result.stdout.split())


def names():
    suffix = uuid.uuid4().hex[:8]
    return f"tfdist-test-{suffix}", f"i{suffix}", f"t{suffix}"


def record(folder, cloud):
    """{role: reference} of the baked images recorded for the cloud."""
    path = os.path.join(folder, f"{cloud}.yml")
    if not os.path.exists(path):
        return {}
    return {role: entry["reference"] for role, entry in (yaml.safe_load(open(path)) or {}).items()}


def test_an_image_baked_on_docker_vm_boots_a_deploy_that_installs_nothing_and_stays_until_removed(
        docker_engine, docker_vm_image, tmp_path):
    import docker.errors

    image, bake_cluster, cluster = names()
    reference = f"{image}:latest"
    records = str(tmp_path / "images")
    env = {"TFDIST_CA_BUNDLE": CA_BUNDLE}
    common = ("cloud=docker-vm", f"provision_images_dir={records}")
    try:
        baked = run_playbook("playbooks/image.yml", *common, f"image_name={image}", f"image_cluster={bake_cluster}",
                             env=env, timeout=BAKE_TIMEOUT)
        assert baked.returncode == 0, tail(baked)

        # The image: tfdist's, with the versions baked in, none of the transient node's own labels.
        labels = docker_engine.images.get(reference).labels
        assert (labels["tfdist_image"], labels["tfdist_tensorflow"], labels["tfdist_cuda"]) == (image, "2.21.0", "none")
        assert labels.get("tfdist_cluster", "") == "" and labels.get("tfdist.managed", "") == "", labels
        assert record(records, "docker-vm") == {role: reference for role in ROLES}
        # What must not ship did not; TensorFlow did. Read in a container of the image that runs a shell, not its init.
        shipped = docker_engine.containers.run(reference, ["sh", "-c", SHIPPED], remove=True).decode().splitlines()
        assert shipped == ["machine-id 0", "tensorflow"], shipped
        # The transient node and its files are gone.
        assert cluster_containers(docker_engine, bake_cluster) == []
        assert not os.path.exists(os.path.join(REPO, "inventories", "clusters", f"{bake_cluster}.libcloud.yml"))
        assert not os.path.exists(os.path.join(REPO, ".cache", "keys", bake_cluster))

        deploy = run_playbook("playbooks/deploy.yml", *common, f"cluster_name={cluster}", "image=baked", "tf_workers=1",
                              "tf_ps=1", "tf_train_steps=300", env=env)
        assert deploy.returncode == 0, tail(deploy)
        containers = cluster_containers(docker_engine, cluster)
        assert sorted(c.name for c in containers) == sorted(f"{cluster}-{task}" for task in ("chief-0", "worker-0", "ps-0"))
        for container in containers:
            assert container.image.tags == [reference], container.name
            # TensorFlow came with the image: the tensorflow role found it in place and wrote nothing into the venv.
            venv = [change["Path"] for change in container.diff() if change["Path"].startswith("/opt/tfdist/venv/")]
            assert venv == [], (container.name, venv[:10])
        assert "Install TensorFlow into the virtualenv" not in deploy.stdout, tail(deploy)
        # Each node is a new machine: cloud-init gave it a host key of its own, and systemd a machine id (the docker
        # stand-in derives it from the host's, the same on every node; a VM's is its own).
        host_keys = {c.exec_run(["cat", "/etc/ssh/ssh_host_ed25519_key.pub"]).output.decode().strip() for c in containers}
        assert len(host_keys) == len(containers) and "" not in host_keys, host_keys
        assert all(c.exec_run(["cat", "/etc/machine-id"]).output.strip() for c in containers)
        with open(os.path.join(REPO, "artifacts", cluster, "summary.json")) as handle:
            summary = json.load(handle)
        assert summary["steps"] == 300 and summary["accuracy"] > 0.8, summary

        # Destroy leaves the image (the user's), and the audit lists it as kept, not as left behind.
        gone = run_playbook("playbooks/destroy.yml", *common, f"cluster_name={cluster}")
        assert gone.returncode == 0, tail(gone)
        assert cluster_containers(docker_engine, cluster) == []
        assert docker_engine.images.get(reference).labels["tfdist_image"] == image
        audit = run_playbook("playbooks/audit.yml", *common)
        assert audit.returncode == 0, tail(audit)
        assert ("kept, yours (baked by playbooks/image.yml; destroy and the audit never remove them): "
                in flat(audit) and f"image {reference}" in flat(audit)), tail(audit)

        removed = run_playbook("playbooks/image.yml", *common, "image_state=absent", f"image_name={image}")
        assert removed.returncode == 0, tail(removed)
        assert f"removed image {reference}" in flat(removed), tail(removed)
        with pytest.raises(docker.errors.ImageNotFound):
            docker_engine.images.get(reference)
        assert record(records, "docker-vm") == {}
    finally:
        for name in (cluster, bake_cluster):
            run_playbook("playbooks/destroy.yml", *common, f"cluster_name={name}")
        run_playbook("playbooks/image.yml", *common, "image_state=absent", f"image_name={image}")
        remove_artifacts(cluster)


def test_an_ami_baked_on_the_ec2_emulator_is_tagged_booted_kept_by_destroy_listed_and_removed(ec2_emulator, tmp_path):
    aws = ec2_emulator
    ec2 = aws.boto3_client()
    image, bake_cluster, cluster = names()
    records = str(tmp_path / "images")
    common = ("cloud=aws", "tf_ssh_from=127.0.0.1/32", f"aws_image={aws.image_id}", "provision_wait=false",
              f"provision_images_dir={records}")

    def amis():
        return ec2.describe_images(Owners=["self"], Filters=[{"Name": "name", "Values": [image]}])["Images"]

    def snapshots(ids):
        return ec2.describe_snapshots(Filters=[{"Name": "snapshot-id", "Values": ids}])["Snapshots"]

    try:
        before = aws.calls()["CreateImage"]
        baked = run_playbook("playbooks/image.yml", *common, f"image_name={image}", f"image_cluster={bake_cluster}",
                             env=aws.env, args=("--skip-tags", "configure"))
        assert baked.returncode == 0, tail(baked)
        assert aws.calls()["CreateImage"] - before == 1
        [ami] = amis()
        tags = {tag["Key"]: tag["Value"] for tag in ami["Tags"]}
        # Nothing was installed on the emulated node (--skip-tags configure): the tags say so.
        assert tags == {"tfdist_image": image, "tfdist_tensorflow": "none", "tfdist_cuda": "none"}, tags
        snapshot_ids = [mapping["Ebs"]["SnapshotId"] for mapping in ami["BlockDeviceMappings"] if "Ebs" in mapping]
        assert snapshot_ids and all({t["Key"]: t["Value"] for t in snapshot["Tags"]} == tags
                                    for snapshot in snapshots(snapshot_ids))
        assert instances_of(ec2, bake_cluster) == []
        assert record(records, "aws") == {role: ami["ImageId"] for role in ROLES}

        # The profile's roles boot the AMI with image=baked.
        provisioned = run_playbook("playbooks/provision.yml", *common, f"cluster_name={cluster}", "image=baked",
                                   env=aws.env)
        assert provisioned.returncode == 0, tail(provisioned)
        booted = {instance["tags"]["tfdist_role"]: instance["ImageId"] for instance in instances_of(ec2, cluster)}
        assert booted == {"chief": ami["ImageId"], "worker": ami["ImageId"], "ps": ami["ImageId"]}

        destroyed = run_playbook("playbooks/destroy.yml", "cloud=aws", f"cluster_name={cluster}", env=aws.env)
        assert destroyed.returncode == 0, tail(destroyed)
        assert instances_of(ec2, cluster) == [] and [i["ImageId"] for i in amis()] == [ami["ImageId"]]
        audit = run_playbook("playbooks/audit.yml", "cloud=aws", env=aws.env)
        assert audit.returncode == 0, tail(audit)
        assert f"image {image} ({ami['ImageId']})" in flat(audit), tail(audit)

        removed = run_playbook("playbooks/image.yml", *common, "image_state=absent", f"image_name={image}", env=aws.env)
        assert removed.returncode == 0, tail(removed)
        assert amis() == [] and record(records, "aws") == {}
        assert snapshots(snapshot_ids) == []  # a deregistered AMI's snapshots would go on costing
    finally:
        for name in (cluster, bake_cluster):
            run_playbook("playbooks/destroy.yml", "cloud=aws", f"cluster_name={name}", env=aws.env)
        run_playbook("playbooks/image.yml", *common, "image_state=absent", f"image_name={image}", env=aws.env)
        remove_artifacts(cluster)


@pytest.mark.parametrize("extra, message", [
    (["cloud=nowhere"], "cloud: unknown cloud 'nowhere'; known clouds:"),
    (["cloud=local"], "cloud: tfdist bakes no images on cloud=local (it runs on this machine)"),
    (["cloud=azure"], "cloud: tfdist bakes no images on cloud=azure (libcloud's azure_arm driver"),
    (["cloud=docker-vm", "image_name=Bad_Name"], "image_name: 'Bad_Name' is not a valid image name"),
    (["cloud=docker-vm", "image_state=gone"], "image_state: must be present (bake image_name) or absent"),
    (["cloud=docker-vm", "image_state=absent"], "image_state: must be present (bake image_name) or absent (remove the "
                                                "baked image image_name, which must then be given), got 'absent' with no "
                                                "image_name"),
    (["cloud=docker-vm", "image_roles=chief,boss"], "image_roles: TF roles are chief, worker, ps and evaluator"),
])
def test_bad_image_input_names_the_field_and_creates_nothing(tmp_path, extra, message):
    image, bake_cluster, dummy = names()
    result = run_playbook("playbooks/image.yml", f"image_cluster={bake_cluster}", f"provision_images_dir={tmp_path}",
                          *extra)
    assert result.returncode != 0
    assert message in flat(result), tail(result)
    assert not os.path.exists(os.path.join(REPO, "inventories", "clusters", f"{bake_cluster}.libcloud.yml"))
    assert os.listdir(tmp_path) == []


def test_a_deploy_from_baked_images_without_any_names_the_field(tmp_path):
    dummy, dummy, cluster = names()
    result = run_playbook("playbooks/deploy.yml", "cloud=docker-vm", f"cluster_name={cluster}", "image=baked",
                          f"provision_images_dir={tmp_path}")
    assert result.returncode != 0
    assert (f"image: no image was baked on cloud=docker-vm ({tmp_path}/docker-vm.yml names none); bake one with "
            "ansible-playbook playbooks/image.yml -e cloud=docker-vm") in flat(result), tail(result)
    assert not os.path.exists(os.path.join(REPO, "inventories", "clusters", f"{cluster}.libcloud.yml"))
