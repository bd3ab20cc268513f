"""The execution environment (execution-environment.yml) builds with the local engine and runs tfdist.cluster.

`make ee-context` writes ansible-builder's build context (.cache/ee/context); scripts/build-ee.sh builds it on
the local Debian base (no registry here) and tags the image with a hash of its inputs, so an unchanged
collection is not rebuilt. The image then runs `ansible-playbook tfdist.cluster.check` against the EC2 emulator
on this host (--network host), as AWX or ansible-navigator would run it: only what is inside the image.
"""

import json
import os
import subprocess
import sys
import sysconfig
import uuid

import pytest

from docker_engine import REPO, last_lines, script, unavailable
from emulators.ec2 import LIVE_STATES, cluster_instances, owned, terminate_cluster

CONTEXT = ".cache/ee/context"
# requirements-dev.txt's packages: none of them belongs in the image.
DEV_PACKAGES = ("tensorflow", "tensorflow-cpu", "keras", "moto", "molecule", "pytest", "ansible-lint", "ansible")


@pytest.fixture(scope="module")
def ee_image(docker_engine):
    made = subprocess.run(["make", "--no-print-directory", "ee-context"], cwd=REPO, capture_output=True, text=True,
                          timeout=600, check=False)
    assert made.returncode == 0, last_lines(made)
    built = script("build-ee.sh", CONTEXT)
    if built.returncode != 0:
        pytest.fail("scripts/build-ee.sh failed (exit %d):\n%s" % (built.returncode, last_lines(built, 80)),
                    pytrace=False)
    return built.stdout.strip().splitlines()[-1]


def docker_run(image, *command, env=None, volumes=(), timeout=600):
    args = ["docker", "run", "--rm", "--network", "host"]
    for key, value in (env or {}).items():
        args += ["-e", "%s=%s" % (key, value)]
    for volume in volumes:
        args += ["-v", volume]
    return subprocess.run(args + [image, *command], capture_output=True, text=True, timeout=timeout, check=False)


def test_image_holds_the_collection_and_its_requirements_only(ee_image):
    probe = docker_run(ee_image, "sh", "-ec", """
        ansible-galaxy collection list tfdist.cluster
        python3 -m pip list --format freeze
        ssh -V 2>&1
        command -v ssh-keygen""")
    assert probe.returncode == 0, probe.stdout + probe.stderr
    out = probe.stdout
    assert "tfdist.cluster" in out
    installed = {line.split("==")[0].lower() for line in out.splitlines() if "==" in line}
    assert {"apache-libcloud", "docker", "fsspec", "s3fs", "radl", "ansible-core", "ansible-runner"} <= installed, \
        sorted(installed)
    assert sorted(installed & set(DEV_PACKAGES)) == []
    assert "OpenSSH" in out and "/usr/bin/ssh-keygen" in out  # bindep.txt's openssh-client


def test_image_runs_check_against_the_ec2_emulator(ee_image, ec2_emulator):
    cluster = "ee-%s" % uuid.uuid4().hex[:8]
    image_id = ec2_emulator.image_id
    run = docker_run(ee_image, "ansible-playbook", "tfdist.cluster.check", "-e", "cloud=aws",
                     "-e", "cluster_name=" + cluster, "-e", "tf_workers=3", "-e", "tf_ssh_from=127.0.0.1/32",
                     "-e", "aws_image=" + image_id,
                     env=dict(ec2_emulator.env, TFDIST_HOME="/runner", ANSIBLE_NOCOLOR="1"))
    assert run.returncode == 0, run.stdout[-5000:] + run.stderr[-2000:]
    out = " ".join(run.stdout.split())
    # The plan, from the EC2 API through libcloud inside the image.
    workers = ", ".join("%s-worker-%d" % (cluster, index) for index in range(3))
    assert "worker: 3 x g4dn.xlarge (%s), $0.526/h each: create %s" % (image_id, workers) in out, run.stdout[-5000:]
    assert "create: key pair tfdist-%s" % cluster in out
    assert "failed=0" in out
    # check creates nothing.
    assert cluster_instances(ec2_emulator.boto3_client(), cluster, LIVE_STATES) == {}


def test_a_deploy_in_one_container_is_destroyed_from_a_fresh_one(ee_image, ec2_emulator, tmp_path):
    """AWX's way: each job a new container with nothing of the last one's, the same machine credential mounted.

    The cloud is the source of truth: the second container finds the cluster by its tags and owner (the key's id).
    """
    cluster = "ee-%s" % uuid.uuid4().hex[:8]
    keys = tmp_path / "keys"
    keys.mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / "machine")], check=True)
    os.chown(keys / "machine", 1000, 0)  # the image's user, as AWX mounts a credential for it
    run = dict(env=dict(ec2_emulator.env, ANSIBLE_NOCOLOR="1"), volumes=["%s:/credentials:ro" % keys])
    common = ("-e", "cloud=aws", "-e", "cluster_name=" + cluster, "-e", "tf_ssh_key=/credentials/machine")
    ec2 = ec2_emulator.boto3_client()
    try:
        made = docker_run(ee_image, "ansible-playbook", "tfdist.cluster.provision", *common, "-e", "tf_workers=1",
                          "-e", "tf_ps=0", "-e", "tf_strategy=multi_worker_mirrored", "-e", "tf_ssh_from=127.0.0.1/32",
                          "-e", "aws_image=" + ec2_emulator.image_id, "-e", "provision_wait=false", **run)
        assert made.returncode == 0, made.stdout[-5000:] + made.stderr[-2000:]
        resources = owned(ec2, cluster)
        assert len(resources) == 1, resources  # one owner: the key's
        owner, mine = next(iter(resources.items()))
        assert len(mine["instances"]) == 2 and mine["keys"] == ["tfdist-%s-%s" % (cluster, owner[:6])], mine

        gone = docker_run(ee_image, "ansible-playbook", "tfdist.cluster.destroy", *common, **run)
        assert gone.returncode == 0, gone.stdout[-5000:] + gone.stderr[-2000:]
        assert owned(ec2, cluster) == {}
    finally:
        terminate_cluster(ec2, cluster)


def test_requirements_install_next_to_the_oldest_boto3_amazon_aws_accepts(tmp_path):
    """An EE shared with amazon.aws: its requirements at their floors (boto3, botocore) and ours resolve together.

    Each s3fs release takes an aiobotocore that accepts a narrow window of botocore, so exact s3fs pins would not
    (requirements.txt says why its ranges are what they are). amazon.aws is the one of requirements-dev.txt's
    `ansible` package; pip only resolves (--dry-run), from the same index the image's build uses.
    """
    aws = os.path.join(sysconfig.get_paths()["purelib"], "ansible_collections", "amazon", "aws", "requirements.txt")
    if not os.path.exists(aws):
        unavailable("amazon.aws is not installed (the ansible package of requirements-dev.txt)")
    with open(aws) as handle:
        floors = [line.split("#", 1)[0].strip().replace(">=", "==") for line in handle if line.split("#", 1)[0].strip()]
    assert sorted(line.split("==")[0] for line in floors) == ["boto3", "botocore"], floors
    report = tmp_path / "report.json"
    resolved = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                               "--report", str(report), "-r", os.path.join(REPO, "requirements.txt"), *floors],
                              capture_output=True, text=True, timeout=300, check=False)
    assert resolved.returncode == 0, last_lines(resolved)
    installs = json.loads(report.read_text())["install"]
    chosen = {item["metadata"]["name"].lower(): item["metadata"]["version"] for item in installs}
    assert {"%s==%s" % (name, chosen[name]) for name in ("boto3", "botocore")} == set(floors)
    assert "s3fs" in chosen and "fsspec" in chosen, sorted(chosen)
