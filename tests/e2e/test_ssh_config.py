"""A cluster's ssh config on VM-like nodes (docker-vm: made with user-data, a login user with sudo): written at
provision next to its key, `ssh -F <file> <node>` logs in with the cluster's key and accepts only the host key tfdist
pinned for the node, a second provision leaves it as it was, and destroy removes it. Provision only: no TensorFlow is
installed. (On a docker cluster while it trains: test_operate.py.)"""

import os
import stat
import subprocess
import time

from ansible_cli import REPO, run_playbook, tail

# cloud-init makes the login user of a VM-like node a few seconds after sshd answers (docker-vm).
LOGIN_WAIT = 120


def ssh_config_of(name):
    return os.path.join(REPO, ".cache", "keys", f"{name}.ssh_config")


def ssh_in(config, node, command, wait=0):
    """ssh -F config node command, as a person runs it, tried again for up to `wait` seconds while it fails."""
    deadline = time.time() + wait
    while True:
        result = subprocess.run(["ssh", "-F", config, "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", node, command],
                                capture_output=True, text=True, timeout=60, check=False)
        if result.returncode == 0 or time.time() > deadline:
            return result
        time.sleep(2)


def provision_and_log_in(cloud, name, user, wait=0):
    """Provision a chief, a worker and a ps, log into both with the cluster's ssh config, provision again; the config."""
    provision = ("playbooks/provision.yml", f"cloud={cloud}", f"cluster_name={name}", "tf_workers=1", "tf_ps=1")
    result = run_playbook(*provision)
    assert result.returncode == 0, tail(result)
    config = ssh_config_of(name)
    # The provision's output says how to log in, once.
    assert result.stdout.count(f"ssh: ssh -F {config} {name}-worker-0") == 1, tail(result)
    assert stat.S_IMODE(os.stat(config).st_mode) == 0o600

    for node in (f"{name}-worker-0", f"{name}-chief-0"):
        login = ssh_in(config, node, "whoami", wait=wait)
        assert login.returncode == 0 and login.stdout.split() == [user], (node, login.stdout, login.stderr)

    # Nothing changed, nothing written: the file is the same file, untouched.
    before = os.stat(config).st_mtime_ns
    again = run_playbook(*provision)
    assert again.returncode == 0, tail(again)
    assert os.stat(config).st_mtime_ns == before
    return config


def destroy_removes(cloud, name, config):
    gone = run_playbook("playbooks/destroy.yml", f"cloud={cloud}", f"cluster_name={name}")
    assert gone.returncode == 0, tail(gone)
    assert not os.path.exists(config)


def test_ssh_config_on_vm_like_nodes_accepts_only_the_pinned_host_key(
        docker_engine, docker_vm_image, docker_vm_cluster):
    name = docker_vm_cluster
    config = provision_and_log_in("docker-vm", name, "debian", wait=LOGIN_WAIT)
    # Worker 0 checked against the chief's pinned key (each role has its own): refused, as another machine would be.
    refused = subprocess.run(["ssh", "-F", config, "-o", "BatchMode=yes", "-o", f"HostKeyAlias={name}-chief-0",
                              f"{name}-worker-0", "true"], capture_output=True, text=True, timeout=60, check=False)
    assert refused.returncode == 255 and "Host key verification failed" in refused.stderr, refused.stderr
    # Status names the cloud as the deploy did (docker-vm), not libcloud's provider (docker).
    status = run_playbook("playbooks/status.yml", f"cluster_name={name}")
    assert status.returncode == 0 and f"{name} (cloud=docker-vm): " in status.stdout, tail(status)
    destroy_removes("docker-vm", name, config)
