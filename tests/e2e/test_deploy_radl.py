"""Cluster shapes from RADL files (-e radl=FILE), and the effective cluster written back as RADL."""

import os
import shutil
import textwrap
import uuid

import pytest

from ansible_cli import REPO, run_playbook, tail
from test_deploy_aws import Cloud, local_files_of, tag

from ansible_collections.tfdist.cluster.plugins.module_utils._radl import load_cluster


@pytest.fixture
def aws_cluster(ec2_emulator):
    name = f"r{uuid.uuid4().hex[:8]}"
    yield name
    run_playbook("playbooks/destroy.yml", "cloud=aws", f"cluster_name={name}", env=ec2_emulator.env)
    shutil.rmtree(os.path.join(REPO, "artifacts", name), ignore_errors=True)


def write_radl(tmp_path, text):
    path = tmp_path / "cluster.radl"
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_radl_drives_the_shape_sizes_images_and_ports_and_is_written_back(ec2_emulator, tmp_path, aws_cluster):
    image = ec2_emulator.image_id
    radl = write_radl(tmp_path, f"""\
        network public (outbound = 'yes' and outports = '22/tcp,6006/tcp')
        network private ()
        system chief (instance_type = 't3.large' and disk.0.image.url = 'aws://us-east-1/{image}')
        system ps (instance_type = 't2.micro' and disk.0.image.url = 'aws://us-east-1/{image}')
        system worker (instance_type = 'g4dn.xlarge' and gpu.count >= 1 and disk.0.image.url = 'aws://us-east-1/{image}')
        deploy chief 1
        deploy ps 1
        deploy worker 3
        """)
    # No -e cloud: the image URLs say aws.
    result = run_playbook("playbooks/provision.yml", f"radl={radl}", f"cluster_name={aws_cluster}",
                          "tf_ssh_from=127.0.0.1/32", "provision_wait=false", env=ec2_emulator.env)
    assert result.returncode == 0, tail(result)

    cloud = Cloud(ec2_emulator)
    instances = cloud.instances(aws_cluster)
    by_role = {}
    for instance in instances:
        by_role.setdefault(tag(instance, "tfdist_role"), set()).add(instance["InstanceType"])
    assert by_role == {"chief": {"t3.large"}, "ps": {"t2.micro"}, "worker": {"g4dn.xlarge"}}
    assert sum(tag(i, "tfdist_role") == "worker" for i in instances) == 3
    # 6006 from the RADL's outports is open to the controller only, like SSH.
    [group] = cloud.groups(aws_cluster)
    tensorboard = [r for r in group["IpPermissions"] if r["FromPort"] == 6006]
    assert [ip["CidrIp"] for ip in tensorboard[0]["IpRanges"]] == ["127.0.0.1/32"]

    # The effective cluster, written back, reads as the same shape.
    written = os.path.join(REPO, "artifacts", aws_cluster, "cluster.radl")
    shape = load_cluster(written)
    assert (shape["workers"], shape["ps"], shape["evaluators"]) == (3, 1, 0)
    assert shape["cloud"] == "aws" and shape["region"] == "us-east-1"
    assert shape["nodes"]["worker"]["size"] == "g4dn.xlarge" and shape["nodes"]["worker"]["image"] == image
    assert 6006 in shape["ports"]


@pytest.mark.parametrize("text, extra, message", [
    ("system chief (instance_type = 't3.large'\ndeploy chief 1\n", [], "line 2"),
    ("system chief ()\nsystem worker ()\ndeploy chief 1\ndeploy workers 2\n", [],
     "deploy 'workers': no system named 'workers'"),
    ("system chief ()\nsystem gpu-box ()\ndeploy chief 1\ndeploy gpu-box 2\n", [], "system 'gpu-box': not a TF role"),
    ("system chief ()\nsystem worker ()\nsystem ps ()\ndeploy chief 1\ndeploy worker 2\ndeploy worker 3\n", [],
     "deploy worker 3: system worker is already deployed with 2"),
    ("system chief ()\nsystem worker ()\nsystem ps ()\ndeploy chief 1\ndeploy worker 2\ndeploy ps 1\n", ["tf_workers=5"],
     "tf_workers=5 contradicts"),
    ("system chief ()\nsystem worker ()\ndeploy chief 1\ndeploy worker 2\n", [], "deploys no ps system"),
])
def test_bad_radl_says_where_and_creates_nothing(tmp_path, text, extra, message):
    radl = write_radl(tmp_path, text)
    name = f"r{uuid.uuid4().hex[:8]}"
    result = run_playbook("playbooks/deploy.yml", f"radl={radl}", f"cluster_name={name}", *extra)
    assert result.returncode != 0
    out = " ".join(result.stdout.split())
    assert message in out, tail(result)
    if "contradicts" not in message:
        assert radl in out  # the message says which file
    assert local_files_of(name) == []
    assert not os.path.exists(os.path.join(REPO, "inventories", "clusters", f"{name}.local.yml"))
    assert not os.path.exists(os.path.join(REPO, "artifacts", name))


def test_missing_radl_file_is_named():
    result = run_playbook("playbooks/check.yml", "radl=radl/no-such.radl")
    assert result.returncode != 0
    assert "no-such.radl: no such file" in result.stdout, tail(result)
