"""The `docker` cloud against the real Docker Engine: nodes are containers reached over SSH like VMs.

The engine comes from the docker_engine fixture (tests/docker_engine.py: scripts/ensure-docker.sh; skipped
without an engine, a failure when CI is set), the base node image from scripts/build-node-image.sh --base-only
(about a minute the first time, cached after), the VM-like image from scripts/build-node-image.sh --vm (about 15 s more).
Every test works on clusters with unique names and removes their containers and networks even when it fails.
"""

import contextlib
import io
import json
import pathlib
import shlex
import shutil
import subprocess
import sys
import time
import uuid

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args
from ansible_collections.tfdist.cluster.plugins.modules import libcloud_node

from ansible_cli import run, run_inventory, tail
from docker_engine import SSH_ARGS, make_ssh_key, unavailable
from processes import wait_until

TAGS = ("tfdist_cluster", "tfdist_role", "tfdist_index")
NODES = 3  # what cluster_roles() asks for


@pytest.fixture(scope="session")
def engine(docker_engine, docker_base_image):
    """A docker SDK client of a running engine that has the base node image; the nodes are reached with ssh."""
    for tool in ("ssh", "ssh-keygen"):
        if not shutil.which(tool):
            unavailable(f"{tool} is not installed")
    return docker_engine


def remove_cluster(client, cluster):
    """Remove the containers and the network of `cluster` that tfdist made (and nothing else)."""
    labels = ["tfdist.managed=true", "tfdist_cluster=%s" % cluster]
    for container in client.containers.list(all=True, filters={"label": labels}):
        container.remove(force=True)
    for network in client.networks.list(filters={"label": labels}):
        network.remove()


def leftovers(client, cluster):
    labels = ["tfdist_cluster=%s" % cluster]
    return ([c.name for c in client.containers.list(all=True, filters={"label": labels})]
            + [n.name for n in client.networks.list(filters={"label": labels})]
            + [n.name for n in client.networks.list(names=["tfdist-" + cluster]) if n.name == "tfdist-" + cluster])


@pytest.fixture(scope="module")
def ssh_key(tmp_path_factory):
    return pathlib.Path(make_ssh_key(tmp_path_factory.mktemp("ssh")))


def ssh(key, login, command, host_keys=SSH_ARGS):
    """`ssh -i key login command` (login: user@address), with the test key only; the CompletedProcess.

    host_keys: the options that say which host keys ssh accepts (by default any, remembered nowhere)."""
    return subprocess.run(
        ["ssh", "-i", str(key), "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", *shlex.split(host_keys), login,
         command],
        capture_output=True, text=True, timeout=60, check=False)


def run_module(**args):
    """Run tfdist.cluster.libcloud_node in-process with provider docker; returns its JSON result."""
    out = io.StringIO()
    args = dict(dict(provider="docker", wait_timeout=120), **args)
    with patch_module_args(args), contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        libcloud_node.main()
    return json.loads(out.getvalue())


def cluster_roles(key, image):
    create_args = {"ex_authorized_key": key.with_suffix(".pub").read_text()}
    return [dict(role="chief", count=1, size="small", image=image, create_args=create_args),
            dict(role="worker", count=NODES - 1, size="host", image=image, create_args=create_args)]


def new_cluster(request, engine):
    cluster = "it-%s" % uuid.uuid4().hex[:8]
    request.addfinalizer(lambda: remove_cluster(engine, cluster))
    return cluster


@pytest.fixture(scope="module")
def deployed(request, engine, ssh_key, docker_base_image):
    """A 1 chief + 2 worker cluster made by the libcloud_node module: (cluster, module result)."""
    cluster = new_cluster(request, engine)
    result = run_module(cluster=cluster, wait_for_port=22, roles=cluster_roles(ssh_key, docker_base_image))
    assert not result.get("failed"), result
    assert len(result["nodes"]) == NODES, result  # the tests below check each node
    return cluster, result


def test_present_creates_labelled_containers_on_the_cluster_network_only(engine, deployed):
    cluster, result = deployed

    assert result["changed"] is True
    assert [(n["name"], n["state"]) for n in result["nodes"]] == [
        ("%s-chief-0" % cluster, "running"), ("%s-worker-0" % cluster, "running"),
        ("%s-worker-1" % cluster, "running")]
    network = engine.networks.get("tfdist-" + cluster)
    assert network.attrs["Labels"] == {"tfdist.managed": "true", "tfdist_cluster": cluster}
    for node in result["nodes"]:
        container = engine.containers.get(node["name"])
        assert {key: container.labels[key] for key in TAGS} == {
            "tfdist_cluster": cluster, "tfdist_role": node["role"], "tfdist_index": str(node["index"])}
        assert container.labels["tfdist.managed"] == "true"
        assert container.attrs["Config"]["Hostname"] == node["name"]
        networks = container.attrs["NetworkSettings"]["Networks"]
        assert list(networks) == ["tfdist-" + cluster]
        assert node["private_ips"] == [networks["tfdist-" + cluster]["IPAddress"]] and node["public_ips"] == []
        assert node["address"] == node["private_ips"][0]
        # Reachable on the cluster network only: nothing published on the host.
        assert container.ports == {} and not container.attrs["HostConfig"]["PortBindings"]
        assert container.attrs["HostConfig"]["PublishAllPorts"] is False
    chief = engine.containers.get("%s-chief-0" % cluster).attrs["HostConfig"]
    assert (chief["NanoCpus"], chief["Memory"]) == (10 ** 9, 2 * 1024 ** 3)


def test_each_node_answers_ssh_with_the_generated_key(deployed, ssh_key):
    cluster, result = deployed
    host_keys = set()
    for node in result["nodes"]:
        login = ssh(ssh_key, "root@" + node["address"], "hostname && cat /etc/ssh/ssh_host_ed25519_key.pub")
        assert login.returncode == 0, login.stderr
        hostname, host_key = login.stdout.splitlines()
        assert hostname == node["name"]
        host_keys.add(host_key)
    assert len(host_keys) == NODES  # every container made its own host keys


def test_second_run_changes_nothing(deployed, ssh_key, docker_base_image):
    cluster, first = deployed

    result = run_module(cluster=cluster, roles=cluster_roles(ssh_key, docker_base_image))

    assert result["changed"] is False
    assert [n["id"] for n in result["nodes"]] == [n["id"] for n in first["nodes"]]


def test_inventory_groups_the_nodes_by_role_at_their_container_ip(deployed, tmp_path):
    cluster, result = deployed
    source = tmp_path / "x.libcloud.yml"
    source.write_text(yaml.safe_dump(dict(plugin="tfdist.cluster.libcloud", provider="docker", clusters=[cluster])))

    out = run_inventory("-i", source, "--list", timeout=120)
    assert out.returncode == 0, tail(out)
    inventory = json.loads(out.stdout)

    assert inventory["chief"]["hosts"] == ["%s-chief-0" % cluster]
    assert sorted(inventory["worker"]["hosts"]) == ["%s-worker-0" % cluster, "%s-worker-1" % cluster]
    for node in result["nodes"]:
        # Cloud values are unsafe (never templated); --list shows them as {"__ansible_unsafe": value}.
        hostvars = dict((key, value["__ansible_unsafe"] if isinstance(value, dict) and "__ansible_unsafe" in value
                         else value) for key, value in inventory["_meta"]["hostvars"][node["name"]].items())
        assert hostvars["ansible_host"] == node["private_ips"][0]
        assert (hostvars["tfdist_role"], hostvars["tfdist_index"]) == (node["role"], node["index"])
        assert hostvars["libcloud_provider"] == "docker"


def test_absent_removes_every_container_and_the_network(request, engine, ssh_key, docker_base_image):
    cluster = new_cluster(request, engine)
    created = run_module(cluster=cluster, roles=cluster_roles(ssh_key, docker_base_image))
    assert len(created["created"]) == NODES and engine.networks.list(names=["tfdist-" + cluster])
    engine.containers.get("%s-worker-1" % cluster).stop(timeout=1)  # stopped nodes go too

    # Through the ansible CLI this time: AnsiballZ must ship the driver (module_utils/_cloud_docker.py).
    args = json.dumps(dict(provider="docker", cluster=cluster, state="absent"))
    adhoc = run("ansible", "localhost", "-c", "local", "-m", "tfdist.cluster.libcloud_node", "-a", args,
                extra_vars=["ansible_python_interpreter=" + sys.executable], timeout=300,
                env={"ANSIBLE_CALLBACK_RESULT_FORMAT": "json"})
    assert adhoc.returncode == 0, tail(adhoc)
    result = json.loads(adhoc.stdout.split("=>", 1)[1])  # "localhost | CHANGED => {...}"

    assert result["changed"] is True
    assert sorted(n["name"] for n in result["removed"]) == sorted(n["name"] for n in created["nodes"])
    assert leftovers(engine, cluster) == []


def test_absent_removes_the_network_a_cluster_left_without_containers(request, engine):
    """A destroy cut short between the last container and the network leaves the network: the next destroy removes it."""
    cluster = new_cluster(request, engine)
    engine.networks.create("tfdist-" + cluster, driver="bridge",
                           labels={"tfdist.managed": "true", "tfdist_cluster": cluster})

    result = run_module(cluster=cluster, state="absent")

    assert (result["changed"], result["removed_leftovers"]) == (True, ["network tfdist-" + cluster])
    assert leftovers(engine, cluster) == []
    assert run_module(cluster=cluster, state="absent")["changed"] is False

# ---------------------------------------------------------------- a VM-like node (cloud=docker-vm)
# Made by the libcloud_node module with user-data as cloud=docker-vm makes its nodes: the stock image (tfdist/node-vm,
# scripts/build-node-image.sh --vm) boots systemd as PID 1 and cloud-init, which reads the user-data from its NoCloud
# seed and makes the login user debian with the key and passwordless sudo, root login off, and gives sshd the host key
# that the module made and pinned in the cluster's known_hosts. `systemctl poweroff` stops the container, and a start
# boots it from its disk, with its host key.


@pytest.fixture(scope="module")
def vm(request, engine, ssh_key, docker_vm_image):
    """(module arguments, container) of a one-node cluster of the VM-like image, made with user-data and its host key
    pinned in a known_hosts file next to the test key."""
    cluster = "it-vm-%s" % uuid.uuid4().hex[:8]
    args = dict(cluster=cluster, wait_for_port=22, address="private",
                roles=[dict(role="worker", count=1, size="host", image=docker_vm_image)],
                user_data=dict(user="debian", public_key=ssh_key.with_suffix(".pub").read_text(),
                               known_hosts=str(ssh_key.with_name(cluster + ".known_hosts"))))
    request.addfinalizer(lambda: run_module(cluster=cluster, state="absent"))
    result = run_module(**args)
    assert not result.get("failed") and len(result["created"]) == 1, result
    return args, engine.containers.get(result["created"][0]["id"])


def address(container):
    container.reload()
    return next(iter(container.attrs["NetworkSettings"]["Networks"].values()))["IPAddress"]


def ssh_to(key, user, container, command, **options):
    return ssh(key, f"{user}@{address(container)}", command, **options)


def output(container, *command):
    return container.exec_run(list(command)).output.decode().strip()


def cloud_init_status(container):
    """cloud-init's verdict once it has ended: --wait prints a dot every few seconds while it runs."""
    return output(container, "cloud-init", "status", "--wait").splitlines()[-1]


def test_the_node_boots_systemd_and_cloud_init_reads_its_seed(vm):
    args, container = vm

    assert output(container, "cat", "/proc/1/comm") == "systemd"
    assert cloud_init_status(container) == "status: done", output(
        container, "tail", "-n", "40", "/var/log/cloud-init.log")
    assert output(container, "systemctl", "is-system-running", "--wait") == "running", output(
        container, "systemctl", "--failed", "--no-legend")
    # The instance is the container: a start of the same container is a reboot of the same VM.
    assert output(container, "cloud-init", "query", "instance_id") == container.id
    assert container.attrs["Config"]["StopSignal"] == "SIGRTMIN+3"  # systemd's orderly shutdown on docker stop


def test_cloud_init_makes_the_login_user_with_the_key_and_sudo_and_root_cannot_log_in(vm, ssh_key):
    args, container = vm

    login = ssh_to(ssh_key, "debian", container, "whoami && sudo -n whoami")
    assert login.returncode == 0 and login.stdout.split() == ["debian", "root"], login.stderr
    root = ssh_to(ssh_key, "root", container, "true")
    assert root.returncode == 255 and "Permission denied" in root.stderr, (root.stdout, root.stderr)


def pinned_ssh(key, container, known_hosts, command):
    """ssh as debian to the container, accepting only the host key pinned for its name in known_hosts."""
    return ssh_to(key, "debian", container, command, host_keys=(
        f"-o StrictHostKeyChecking=yes -o UserKnownHostsFile={known_hosts} -o GlobalKnownHostsFile=/dev/null "
        f"-o HostKeyAlias={container.name}"))


def host_key_files(container):
    return output(container, "sh", "-c", "ls /etc/ssh/ssh_host_*").split()


def test_the_node_serves_ssh_with_the_host_key_tfdist_made_and_pinned_alone(vm, ssh_key):
    args, container = vm
    known_hosts = pathlib.Path(args["user_data"]["known_hosts"])

    assert cloud_init_status(container) == "status: done"
    served = output(container, "cat", "/etc/ssh/ssh_host_ed25519_key.pub").split()
    assert known_hosts.read_text().splitlines() == [f"{container.name} {served[0]} {served[1]}"]
    assert oct(known_hosts.stat().st_mode & 0o777) == "0o600"
    # The image's own host keys went and no other type was made: the pinned key is the only one sshd can show.
    assert host_key_files(container) == ["/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_ed25519_key.pub"]
    login = pinned_ssh(ssh_key, container, known_hosts, "whoami")
    assert (login.returncode, login.stdout.strip()) == (0, "debian"), login.stderr


def test_a_node_whose_host_key_was_swapped_is_refused_naming_it(vm, ssh_key, tmp_path):
    args, container = vm
    known_hosts = args["user_data"]["known_hosts"]
    key_file = "/etc/ssh/ssh_host_ed25519_key"
    swap = (f"mkdir -p /root/kept && cp -p {key_file} {key_file}.pub /root/kept/ && rm -f {key_file} {key_file}.pub && "
            f"ssh-keygen -q -t ed25519 -N '' -f {key_file} && systemctl restart ssh")
    assert container.exec_run(["sh", "-c", swap]).exit_code == 0
    try:
        refused = pinned_ssh(ssh_key, container, known_hosts, "true")
        assert refused.returncode == 255 and "Host key verification failed" in refused.stderr, refused.stderr

        # Through Ansible, with the inventory plugin's known_hosts, as a deploy connects: the concise callback names it.
        source = tmp_path / "vm.libcloud.yml"
        source.write_text(yaml.safe_dump(dict(
            plugin="tfdist.cluster.libcloud", provider="docker", clusters=[args["cluster"]], address="private",
            known_hosts=known_hosts,
            compose=dict(ansible_user="'debian'", ansible_ssh_private_key_file=repr(str(ssh_key))))))
        # ANSIBLE_LOAD_CALLBACK_PLUGINS: the ansible.cfg's stdout callback for ad-hoc commands too; json: one line each.
        ping = run("ansible", container.name, "-i", source, "-m", "ansible.builtin.ping", timeout=120,
                   env={"ANSIBLE_LOAD_CALLBACK_PLUGINS": "1", "ANSIBLE_CALLBACK_RESULT_FORMAT": "json"})
        assert ping.returncode == 4, tail(ping)  # unreachable
        assert (f"node {container.name} answered with a host key other than the one tfdist gave it at creation "
                f"(known_hosts: {known_hosts}); refusing to connect") in ping.stdout, tail(ping)
        assert "REMOTE HOST IDENTIFICATION HAS CHANGED" not in ping.stdout + ping.stderr, tail(ping)  # no ssh banner
    finally:
        restore = "cp -p /root/kept/* /etc/ssh/ && rm -rf /root/kept && systemctl restart ssh"
        assert container.exec_run(["sh", "-c", restore]).exit_code == 0
    assert pinned_ssh(ssh_key, container, known_hosts, "true").returncode == 0


def test_a_poweroff_stops_the_container_and_a_start_boots_it_from_its_disk_with_its_host_key(vm, ssh_key):
    args, container = vm
    host_key = output(container, "cat", "/etc/ssh/ssh_host_ed25519_key.pub")
    assert ssh_to(ssh_key, "debian", container, "sudo -n touch /var/tmp/written-before").returncode == 0

    ssh_to(ssh_key, "debian", container, "sudo -n systemctl poweroff")  # the connection ends with the node

    assert wait_until(lambda: container.reload() or container.status == "exited", timeout=60), container.status
    assert container.attrs["State"]["ExitCode"] == 0
    # present means running: the module starts the stopped node, as a deploy does.
    began = time.monotonic()
    result = run_module(**args)
    assert not result.get("failed") and [node["id"] for node in result["started"]] == [container.id], result
    assert cloud_init_status(container) == "status: done"
    print(f"boot to SSH and cloud-init done: {time.monotonic() - began:.1f} s")
    back = ssh_to(ssh_key, "debian", container, "test -e /var/tmp/written-before && sudo -n whoami")
    assert back.returncode == 0 and back.stdout.strip() == "root", back.stderr
    # cloud-init knew the instance: no new host key (a VM keeps its own through a reboot).
    assert output(container, "cat", "/etc/ssh/ssh_host_ed25519_key.pub") == host_key
