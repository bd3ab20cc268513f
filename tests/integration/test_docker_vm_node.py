"""A VM-like node of the docker cloud against the real engine, made by the libcloud_node module with user-data as
cloud=docker-vm makes its nodes: the stock image (tfdist/node-vm) boots systemd as PID 1 and cloud-init, which reads
the user-data from its NoCloud seed and makes the login user debian with the key and passwordless sudo, root login
off. `systemctl poweroff` stops the container, and a start boots it from its disk, with its host key.

The engine comes from the docker_engine fixture (skipped without one, a failure when CI is set), the image from
scripts/build-node-image.sh --vm (about a minute the first time, cached after). The node is removed at the end.
"""

import contextlib
import io
import json
import shutil
import subprocess
import time
import uuid

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.tfdist.cluster.plugins.modules import libcloud_node

from docker_engine import unavailable
from processes import wait_until


@pytest.fixture(scope="module")
def engine(docker_engine, docker_vm_image):
    for tool in ("ssh", "ssh-keygen"):
        if not shutil.which(tool):
            unavailable(f"{tool} is not installed")
    return docker_engine


@pytest.fixture(scope="module")
def ssh_key(tmp_path_factory):
    key = tmp_path_factory.mktemp("ssh") / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "tfdist-test", "-f", str(key)], check=True)
    return key


def run_module(**args):
    """tfdist.cluster.libcloud_node in-process, provider docker; its JSON result."""
    out = io.StringIO()
    with patch_module_args(dict(provider="docker", address="private", wait_timeout=120, **args)), \
            contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        libcloud_node.main()
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def vm(request, engine, ssh_key, docker_vm_image):
    """(module arguments, container) of a one-node cluster of the VM-like image, made with user-data."""
    cluster = "it-vm-%s" % uuid.uuid4().hex[:8]
    args = dict(cluster=cluster, wait_for_port=22,
                roles=[dict(role="worker", count=1, size="host", image=docker_vm_image)],
                user_data=dict(user="debian", public_key=ssh_key.with_suffix(".pub").read_text()))
    request.addfinalizer(lambda: run_module(cluster=cluster, state="absent"))
    result = run_module(**args)
    assert not result.get("failed") and len(result["created"]) == 1, result
    return args, engine.containers.get(result["created"][0]["id"])


def address(container):
    container.reload()
    return next(iter(container.attrs["NetworkSettings"]["Networks"].values()))["IPAddress"]


def ssh(key, user, container, command):
    return subprocess.run(
        ["ssh", "-i", str(key), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
         "-o", "ConnectTimeout=10", "-o", "LogLevel=ERROR", f"{user}@{address(container)}", command],
        capture_output=True, text=True, timeout=60, check=False)


def output(container, *command):
    return container.exec_run(list(command)).output.decode().strip()


def test_the_node_boots_systemd_and_cloud_init_reads_its_seed(vm):
    args, container = vm

    assert output(container, "cat", "/proc/1/comm") == "systemd"
    assert output(container, "cloud-init", "status", "--wait") == "status: done", output(
        container, "tail", "-n", "40", "/var/log/cloud-init.log")
    assert output(container, "systemctl", "is-system-running", "--wait") == "running", output(
        container, "systemctl", "--failed", "--no-legend")
    # The instance is the container: a start of the same container is a reboot of the same VM.
    assert output(container, "cloud-init", "query", "instance_id") == container.id
    assert container.attrs["Config"]["StopSignal"] == "SIGRTMIN+3"  # systemd's orderly shutdown on docker stop


def test_cloud_init_makes_the_login_user_with_the_key_and_sudo_and_root_cannot_log_in(vm, ssh_key):
    args, container = vm

    login = ssh(ssh_key, "debian", container, "whoami && sudo -n whoami")
    assert login.returncode == 0 and login.stdout.split() == ["debian", "root"], login.stderr
    root = ssh(ssh_key, "root", container, "true")
    assert root.returncode == 255 and "Permission denied" in root.stderr, (root.stdout, root.stderr)


def test_a_poweroff_stops_the_container_and_a_start_boots_it_from_its_disk_with_its_host_key(vm, ssh_key):
    args, container = vm
    host_key = output(container, "cat", "/etc/ssh/ssh_host_ed25519_key.pub")
    assert ssh(ssh_key, "debian", container, "sudo -n touch /var/tmp/written-before").returncode == 0

    ssh(ssh_key, "debian", container, "sudo -n systemctl poweroff")  # the connection ends with the node

    assert wait_until(lambda: container.reload() or container.status == "exited", timeout=60), container.status
    assert container.attrs["State"]["ExitCode"] == 0
    # present means running: the module starts the stopped node, as a deploy does.
    began = time.monotonic()
    result = run_module(**args)
    assert not result.get("failed") and [node["id"] for node in result["started"]] == [container.id], result
    assert output(container, "cloud-init", "status", "--wait") == "status: done"
    print(f"boot to SSH and cloud-init done: {time.monotonic() - began:.1f} s")
    back = ssh(ssh_key, "debian", container, "test -e /var/tmp/written-before && sudo -n whoami")
    assert back.returncode == 0 and back.stdout.strip() == "root", back.stderr
    # cloud-init knew the instance: no new host key (a VM keeps its own through a reboot).
    assert output(container, "cat", "/etc/ssh/ssh_host_ed25519_key.pub") == host_key
