"""cloud=docker with HDFS on the cluster: data in from it, checkpoints and the model out to it and to S3.

The NameNode runs on the chief and DataNodes on the workers (tf_hdfs=true), from a real Apache Hadoop
2.7.3 archive assembled from registry packages (scripts/build-hadoop-test-archive.sh; no Apache mirror
is reachable here). S3 is the emulator's, on the controller's loopback: the controller writes there.
"""

import json
import os
import subprocess
import urllib.request

import fsspec
import numpy as np
import pytest

from ansible_cli import REPO, run_playbook, tail
from docker_engine import cluster_containers

DIGITS = os.path.join(REPO, "roles", "training", "files", "data", "digits.npz")
HADOOP_ARCHIVE = os.path.join(REPO, ".cache", "hadoop", "hadoop-2.7.3-tfdist.tar.gz")


@pytest.fixture(scope="module")
def hadoop_archive():
    subprocess.run(["bash", os.path.join(REPO, "scripts", "build-hadoop-test-archive.sh")], check=True, timeout=1200)
    return HADOOP_ARCHIVE


def hdfs_settings(archive):
    """The role's test settings (as in its Molecule scenario): the local archive, small heaps."""
    return json.dumps({"hdfs_archive": archive, "hdfs_version": "2.7.3", "hdfs_safemode_extension": 0,
                       "hdfs_namenode_java_opts": ["-Xmx256m"], "hdfs_datanode_java_opts": ["-Xmx256m"],
                       "hdfs_client_java_opts": ["-Xmx256m"], "hdfs_start_timeout": 240})


def accuracy_of(model_path):
    import keras

    model = keras.models.load_model(model_path)
    with np.load(DIGITS) as data:
        return float((model.predict(data["x"], verbose=0).argmax(axis=1) == data["y"]).mean())


def test_hdfs_on_the_cluster_feeds_training_and_keeps_the_model(engine, docker_cluster, hadoop_archive, ec2_emulator, tmp_path):
    name = docker_cluster
    s3 = ec2_emulator.boto3_client("s3")
    s3.create_bucket(Bucket="models")
    env = dict(ec2_emulator.env, AWS_ENDPOINT_URL_S3=ec2_emulator.endpoint,
               # pip inside the containers goes through this machine's TLS-intercepting proxy
               TFDIST_CA_BUNDLE="/etc/ssl/certs/ca-certificates.crt")
    settings = [f"cluster_name={name}", "cloud=docker", "tf_train_steps=400", "tf_hdfs=true", hdfs_settings(hadoop_archive),
                f"tf_stage_data={DIGITS}", "tf_data=hdfs:///datasets/digits.npz",
                f"tf_checkpoint_url=hdfs:///checkpoints/{name}", f"tf_model_url=hdfs:///models/{name},s3://models/{name}",
                "tf_tensorboard=true"]
    result = run_playbook("playbooks/deploy.yml", *settings, env=env)
    assert result.returncode == 0, tail(result)
    with open(os.path.join(REPO, "artifacts", name, "summary.json")) as handle:
        assert json.load(handle)["steps"] == 400

    # The chief read its data from the cluster's HDFS (through WebHDFS), not from a copy.
    with open(os.path.join(REPO, "artifacts", name, "logs", "chief-0.log")) as handle:
        chief_log = handle.read()
    chief_ip = engine.containers.get(f"{name}-chief-0").attrs["NetworkSettings"]["Networks"][f"tfdist-{name}"]["IPAddress"]
    assert f"downloading hdfs://{chief_ip}:8020/datasets/digits.npz" in chief_log

    # In HDFS (this machine reaches the containers' network): the staged dataset, the chief's newest
    # checkpoints with their state file, and the model, which loads and predicts.
    hdfs = fsspec.filesystem("webhdfs", host=chief_ip, port=9870, user="root")
    assert hdfs.cat_file("/datasets/digits.npz") == open(DIGITS, "rb").read()
    checkpoints = sorted(os.path.basename(p) for p in hdfs.ls(f"/checkpoints/{name}", detail=False))
    assert "checkpoint" in checkpoints and "ckpt-400.index" in checkpoints
    assert len([c for c in checkpoints if c.endswith(".index")]) == 3
    hdfs.get_file(f"/models/{name}/model.keras", str(tmp_path / "from-hdfs.keras"))
    assert accuracy_of(str(tmp_path / "from-hdfs.keras")) > 0.8

    # In the S3 bucket: the model, fetched back, loads and predicts; the run summary next to it.
    s3.download_file("models", f"{name}/model.keras", str(tmp_path / "from-s3.keras"))
    assert accuracy_of(str(tmp_path / "from-s3.keras")) > 0.8
    assert json.loads(s3.get_object(Bucket="models", Key=f"{name}/summary.json")["Body"].read())["steps"] == 400

    # TensorBoard on the chief, at the address the deploy printed, draws the training loss.
    address = f"http://{chief_ip}:6006"
    assert f"TensorBoard: {address} (runs until destroy)" in result.stdout
    with urllib.request.urlopen(address + "/data/plugin/scalars/tags", timeout=30) as response:
        assert {"loss", "held_out_accuracy"} <= set(json.load(response)["train"])

    # A second run changes nothing on the nodes: HDFS, the staged data and the finished job stay as they are.
    again = run_playbook("playbooks/deploy.yml", *settings, env=env)
    assert again.returncode == 0, tail(again)
    containers = cluster_containers(engine, name)
    assert len(containers) == 4
    for container in containers:
        assert f"{container.name} " in again.stdout
    recap = again.stdout[again.stdout.index("PLAY RECAP"):]
    node_lines = [line for line in recap.splitlines() if line.startswith(f"{name}-")]
    assert len(node_lines) == 4 and all("changed=0" in line for line in node_lines), recap

    # A dataset missing from the cluster's HDFS is named before anything is trained.
    missing = run_playbook("playbooks/deploy.yml", *settings[:5], "tf_data=hdfs:///datasets/missing.npz",
                           "tf_train_steps=500", env=env)
    assert missing.returncode != 0
    assert f"tf_data: hdfs://{chief_ip}:8020/datasets/missing.npz does not exist" in missing.stdout, tail(missing)
    with open(os.path.join(REPO, "artifacts", name, "summary.json")) as handle:
        assert json.load(handle)["steps"] == 400  # no new training ran
