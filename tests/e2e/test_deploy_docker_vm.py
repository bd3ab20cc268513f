"""cloud=docker-vm: the whole deploy on nodes like a cloud's VMs, as a user runs it.

Each node boots the stock image tfdist/node-vm (systemd as PID 1, cloud-init, no TensorFlow) with the user-data that
tfdist gives every cloud's nodes: cloud-init makes the login user debian with the cluster's key and passwordless sudo,
and gives sshd its role's host key, which tfdist made and pinned (every connection checks it).
Ansible logs in as debian and becomes root (the profile's libcloud_become), the tensorflow role installs TensorFlow
on the stock image (from the controller's wheelhouse, downloaded through TFDIST_CA_BUNDLE, the machine's CA bundle: a
proxy re-signs HTTPS here), the job trains, its model comes back and loads, a second deploy from a controller
without the cluster's known_hosts and inventory source pins the nodes from their labels and changes nothing, and
destroy leaves nothing.
"""

import json
import os
import re
import subprocess

import numpy as np
import yaml

from ansible_cli import REPO, run_playbook, tail
from docker_engine import cluster_containers
from file_modes import loose_modes

CA_BUNDLE = os.environ.get("TFDIST_CA_BUNDLE") or "/etc/ssl/certs/ca-certificates.crt"
# Three nodes that install TensorFlow (about 600 MB), on a 2-core machine, with a wheelhouse to fill the first time.
DEPLOY_TIMEOUT = 1800


def ssh(key, user, container, command):
    """ssh with the cluster's key, accepting from the node only the host key tfdist pinned for its name."""
    container.reload()
    ip = container.attrs["NetworkSettings"]["Networks"][container.attrs["HostConfig"]["NetworkMode"]]["IPAddress"]
    return subprocess.run(
        ["ssh", "-i", key, "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
         "-o", f"UserKnownHostsFile={key}.known_hosts", "-o", "GlobalKnownHostsFile=/dev/null",
         "-o", f"HostKeyAlias={container.name}", "-o", "ConnectTimeout=10", "-o", "LogLevel=ERROR", f"{user}@{ip}",
         command],
        capture_output=True, text=True, timeout=60, check=False)


def node_recaps(output, cluster):
    """{host: changed count} of the play recap's lines for the cluster's nodes."""
    return {host: int(changed) for host, changed in re.findall(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)\s", output, re.MULTILINE)
            if host.startswith(cluster + "-")}


def test_a_deploy_on_vm_like_nodes_logs_in_as_debian_becomes_root_installs_tensorflow_and_trains(
        docker_engine, docker_vm_cluster, tmp_path):
    import keras

    name = docker_vm_cluster
    deploy = ("playbooks/deploy.yml", "cloud=docker-vm", f"cluster_name={name}", "tf_workers=1", "tf_ps=1",
              "tf_train_steps=300")
    env = {"TFDIST_CA_BUNDLE": CA_BUNDLE}
    result = run_playbook(*deploy, env=env, timeout=DEPLOY_TIMEOUT)
    assert result.returncode == 0, tail(result)

    containers = cluster_containers(docker_engine, name)
    assert sorted(c.name for c in containers) == sorted(f"{name}-{task}" for task in ("chief-0", "worker-0", "ps-0"))
    key = os.path.join(REPO, ".cache", "keys", name)
    # Each node's host key (its role's), made by tfdist and given in its user-data, pinned next to the cluster's key under its name;
    # the deploy's own connections accepted no other (the inventory source's StrictHostKeyChecking=yes).
    with open(key + ".known_hosts") as handle:
        pinned = handle.read()
    assert sorted(line.split()[0] for line in pinned.splitlines()) == sorted(c.name for c in containers)
    assert os.stat(key + ".known_hosts").st_mode & 0o777 == 0o600
    with open(os.path.join(REPO, "inventories", "clusters", f"{name}.libcloud.yml")) as handle:
        source = yaml.safe_load(handle)
    assert source["known_hosts"] == key + ".known_hosts", source
    assert "ansible_ssh_common_args" not in source["compose"], source  # not StrictHostKeyChecking=no
    for container in containers:
        # A VM-like node: systemd is PID 1 and cloud-init ran; TensorFlow came from the deploy, not the image.
        assert container.exec_run(["cat", "/proc/1/comm"]).output.decode().strip() == "systemd", container.name
        assert container.exec_run(["cloud-init", "status"]).output.decode().strip() == "status: done", container.name
        schema = container.exec_run(["cloud-init", "schema", "--system"])  # the cloud-config tfdist gave is valid
        assert schema.exit_code == 0, (container.name, schema.output.decode())
        assert "/opt/tfdist/venv" in {change["Path"] for change in container.diff()}, container.name
        # Ansible logged in as debian, which cloud-init made with the cluster's key and sudo, to a node that shows the
        # pinned host key (ssh below accepts no other); root is refused.
        login = ssh(key, "debian", container, "whoami && sudo -n whoami")
        assert (login.returncode, login.stdout.split()) == (0, ["debian", "root"]), (container.name, login.stderr)
        root = ssh(key, "root", container, "true")
        assert root.returncode == 255 and "Permission denied" in root.stderr, (container.name, root.stderr)
        # What needs root ran as root through become: the idle guard is a systemd service, TensorFlow root's.
        guard = container.exec_run(["systemctl", "is-active", "tfdist-idle-guard"]).output.decode().strip()
        assert guard == "active", container.name
        owner = container.exec_run(["stat", "-c", "%U", "/opt/tfdist/venv/bin/python"]).output.decode().strip()
        assert owner == "root", container.name
        # The job's folders and files, written as root and read by its tasks (root too), are root's alone.
        loose = container.exec_run(["find", f"/var/lib/tfdist/{name}", "(", "-type", "d", "!", "-perm", "700", ")",
                                    "-o", "(", "-type", "f", "!", "-perm", "600", ")", "-print"])
        assert (loose.exit_code, loose.output.decode()) == (0, ""), container.name

    artifacts = os.path.join(REPO, "artifacts", name)
    with open(os.path.join(artifacts, "summary.json")) as handle:
        summary = json.load(handle)
    assert summary["cloud"] == "docker-vm" and summary["steps"] == 300 and summary["accuracy"] > 0.8, summary
    for log in os.listdir(os.path.join(artifacts, "logs")):
        # Started through sudo, each task still found TensorFlow imported ahead by its warm start.
        with open(os.path.join(artifacts, "logs", log)) as handle:
            assert "warm start: tensorflow imported" in handle.read(), log
    model = keras.models.load_model(os.path.join(artifacts, "model", "model.keras"))
    digits = np.load(os.path.join(REPO, "roles", "training", "files", "data", "digits.npz"))
    assert (model.predict(digits["x"], verbose=0).argmax(1) == digits["y"]).mean() > 0.8
    # Brought home through sudo (fetch reads root's files with slurp), they are this user's alone here too.
    assert loose_modes(artifacts) == []

    # The same deploy again, from a controller that kept only the cluster's key (as another execution environment with
    # it as its machine credential): it finds the nodes by their labels and pins each one's host key from its label,
    # then finds everything in place and the job done, so no node changes.
    os.remove(key + ".known_hosts")
    os.remove(os.path.join(REPO, "inventories", "clusters", f"{name}.libcloud.yml"))
    # No ssh connection of the first deploy to reuse either: each node's host key is checked against the new pins.
    fresh = dict(env, ANSIBLE_SSH_CONTROL_PATH_DIR=str(tmp_path / "cp"))
    again = run_playbook(*deploy, env=fresh)
    assert again.returncode == 0, tail(again)
    assert node_recaps(again.stdout, name) == {container.name: 0 for container in containers}, tail(again)
    with open(key + ".known_hosts") as handle:
        assert handle.read() == pinned

    gone = run_playbook("playbooks/destroy.yml", "cloud=docker-vm", f"cluster_name={name}")
    assert gone.returncode == 0, tail(gone)
    assert cluster_containers(docker_engine, name) == []
    assert docker_engine.networks.list(names=[f"tfdist-{name}"]) == []
    assert not os.path.exists(key) and not os.path.exists(key + ".pub") and not os.path.exists(key + ".known_hosts")
    assert not os.path.exists(os.path.join(REPO, "inventories", "clusters", f"{name}.libcloud.yml"))
