"""cloud=docker-vm with HDFS on the cluster: data in from it, checkpoints and the model out to it and to S3; the
daemons are systemd units that come back when their node reboots.

The nodes are VM-like (tfdist/node-vm: systemd as PID 1, cloud-init; Ansible logs in as debian and becomes root), so
the hdfs role runs the NameNode (on the chief) and the DataNode (on the worker) as systemd units, as on a cloud's VM;
its other way, the collection's supervisor on nodes without an init system, is the hdfs role's default Molecule
scenario. Hadoop is a real Apache Hadoop 2.7.3 archive assembled from registry packages
(scripts/build-hadoop-test-archive.sh; no Apache mirror is reachable here). S3 is the emulator's, on the controller's
loopback: the controller writes there.
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
from processes import wait_until

DIGITS = os.path.join(REPO, "roles", "training", "files", "data", "digits.npz")
HADOOP_ARCHIVE = os.path.join(REPO, ".cache", "hadoop", "hadoop-2.7.3-tfdist.tar.gz")
CA_BUNDLE = os.environ.get("TFDIST_CA_BUNDLE") or "/etc/ssl/certs/ca-certificates.crt"
# Three nodes that install TensorFlow from the wheelhouse, on a 2-core machine.
DEPLOY_TIMEOUT = 1800
# A JVM's start on a busy 2-core machine, and the DataNode's next try to reach its NameNode.
RESTART_TIMEOUT = 240


@pytest.fixture(scope="module")
def hadoop_archive():
    subprocess.run(["bash", os.path.join(REPO, "scripts", "build-hadoop-test-archive.sh")], check=True, timeout=1200)
    return HADOOP_ARCHIVE


def hdfs_settings(archive):
    """The role's test settings (as in its Molecule scenarios): the local archive, small heaps."""
    return json.dumps({"hdfs_archive": archive, "hdfs_version": "2.7.3", "hdfs_safemode_extension": 0,
                       "hdfs_namenode_java_opts": ["-Xmx256m"], "hdfs_datanode_java_opts": ["-Xmx256m"],
                       "hdfs_client_java_opts": ["-Xmx256m"], "hdfs_start_timeout": 240})


def accuracy_of(model_path):
    import keras

    model = keras.models.load_model(model_path)
    with np.load(DIGITS) as data:
        return float((model.predict(data["x"], verbose=0).argmax(axis=1) == data["y"]).mean())


def address_of(container):
    container.reload()
    return container.attrs["NetworkSettings"]["Networks"][container.attrs["HostConfig"]["NetworkMode"]]["IPAddress"]


def unit_state(container, unit):
    """What `systemctl is-active UNIT` says on the node."""
    return container.exec_run(["systemctl", "is-active", unit]).output.decode().strip()


def namenode_state(address):
    """The NameNode's FSNamesystemState (JMX over its HTTP port); {} while it does not answer."""
    url = f"http://{address}:9870/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return (json.load(response).get("beans") or [{}])[0]
    except (OSError, ValueError):
        return {}


def test_hdfs_on_vm_like_nodes_feeds_training_keeps_the_model_and_its_daemons_survive_a_reboot(
        docker_engine, docker_vm_cluster, hadoop_archive, ec2_emulator, tmp_path):
    name = docker_vm_cluster
    s3 = ec2_emulator.boto3_client("s3")
    s3.create_bucket(Bucket="models")
    env = dict(ec2_emulator.env, AWS_ENDPOINT_URL_S3=ec2_emulator.endpoint,
               # the controller downloads the nodes' wheels through this machine's TLS-intercepting proxy
               TFDIST_CA_BUNDLE=CA_BUNDLE)
    # A chief (the NameNode), a worker (a DataNode) and a parameter server.
    cluster = [f"cluster_name={name}", "cloud=docker-vm", "tf_workers=1", "tf_hdfs=true", hdfs_settings(hadoop_archive)]
    settings = cluster + ["tf_train_steps=400", f"tf_stage_data={DIGITS}", "tf_data=hdfs:///datasets/digits.npz",
                          f"tf_checkpoint_url=hdfs:///checkpoints/{name}",
                          f"tf_model_url=hdfs:///models/{name},s3://models/{name}", "tf_tensorboard=true"]
    result = run_playbook("playbooks/deploy.yml", *settings, env=env, timeout=DEPLOY_TIMEOUT)
    assert result.returncode == 0, tail(result)
    with open(os.path.join(REPO, "artifacts", name, "summary.json")) as handle:
        assert json.load(handle)["steps"] == 400

    # The daemons are systemd units on the VM-like nodes, not the supervisor's processes.
    chief, worker = (docker_engine.containers.get(f"{name}-{task}") for task in ("chief-0", "worker-0"))
    assert unit_state(chief, "tfdist-hdfs-namenode") == "active"
    assert unit_state(worker, "tfdist-hdfs-datanode") == "active"
    for node in (chief, worker):
        assert node.exec_run(["test", "-e", "/var/lib/tfdist/hdfs"]).exit_code == 1, node.name

    # The chief read its data from the cluster's HDFS (through WebHDFS), not from a copy.
    with open(os.path.join(REPO, "artifacts", name, "logs", "chief-0.log")) as handle:
        chief_log = handle.read()
    chief_ip = address_of(chief)
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
    containers = cluster_containers(docker_engine, name)
    assert len(containers) == 3
    for container in containers:
        assert f"{container.name} " in again.stdout
    recap = again.stdout[again.stdout.index("PLAY RECAP"):]
    node_lines = [line for line in recap.splitlines() if line.startswith(f"{name}-")]
    assert len(node_lines) == 3 and all("changed=0" in line for line in node_lines), recap

    # A dataset missing from the cluster's HDFS is named before anything is trained.
    missing = run_playbook("playbooks/deploy.yml", *cluster, "tf_data=hdfs:///datasets/missing.npz",
                           "tf_train_steps=500", env=env)
    assert missing.returncode != 0
    assert f"tf_data: hdfs://{chief_ip}:8020/datasets/missing.npz does not exist" in missing.stdout, tail(missing)
    with open(os.path.join(REPO, "artifacts", name, "summary.json")) as handle:
        assert json.load(handle)["steps"] == 400  # no new training ran

    # The NameNode's node reboots: the container stops (as `systemctl reboot` ends it here) and boots again from its
    # disk. Nothing of tfdist runs meanwhile: systemd starts the NameNode again, the DataNode finds it, and the data
    # is still there.
    chief.exec_run(["systemctl", "reboot"], detach=True)
    assert wait_until(lambda: chief.reload() or chief.status == "exited", timeout=60), chief.status
    chief.start()
    assert address_of(chief) == chief_ip  # the DataNode and the clients know the NameNode by this address
    assert wait_until(lambda: namenode_state(chief_ip).get("NumLiveDataNodes") == 1, timeout=RESTART_TIMEOUT), (
        namenode_state(chief_ip), chief.exec_run(["journalctl", "-n", "30", "-u", "tfdist-hdfs-namenode"]).output.decode())
    assert unit_state(chief, "tfdist-hdfs-namenode") == "active"
    assert hdfs.cat_file("/datasets/digits.npz") == open(DIGITS, "rb").read()
    assert sorted(os.path.basename(p) for p in hdfs.ls(f"/checkpoints/{name}", detail=False)) == checkpoints
