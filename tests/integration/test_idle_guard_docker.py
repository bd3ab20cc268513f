"""The idle guard on containers reached over SSH like the docker cloud's nodes, driven by Ansible as a deploy drives
it (the repository's ansible.cfg: pipelining, ControlPersist), with a timeout of seconds set through the module.

- A node of the docker cloud's base image (sshd is PID 1, no systemd: the guard runs under the tfdist supervisor)
  stays up while a long command runs on it from the controller, and powers itself off after it.
- A node with systemd as PID 1 (the VM-like node image of cloud=docker-vm, started here without user-data): the
  guard is a service that state=absent removes, and that comes back after a reboot and powers the node off.

The engine comes from the docker_engine fixture (skipped without one, a failure when CI is set). Every container
is labelled with a cluster name of its own and removed at the end, even when a test fails.
"""

import io
import json
import re
import shutil
import tarfile
import time
import uuid

import pytest
import yaml

from ansible_cli import run, run_playbook, tail
from docker_engine import make_ssh_key, root_ssh_node, unavailable
from processes import wait_until

GUARD_LOG = "/root/.tfdist/idle-guard/task.log"
UNIT = "/etc/systemd/system/tfdist-idle-guard.service"
TASKS_DIR = "/var/lib/tfdist/it/tasks"


@pytest.fixture(scope="module")
def engine(docker_engine, docker_base_image):
    if not shutil.which("ssh"):
        unavailable("ssh is not installed")
    return docker_engine


@pytest.fixture(scope="module")
def ssh_key(tmp_path_factory):
    return make_ssh_key(tmp_path_factory.mktemp("ssh"))


@pytest.fixture
def node(request, engine, ssh_key, tmp_path):
    """start(image, **run_options) -> (container, inventory): a container of image reached as root with ssh_key, and
    an inventory of it (host `node`). Removed at the end."""
    containers = []

    def start(image, **options):
        container, host = root_ssh_node(engine, image, ssh_key, "it-guard-%s" % uuid.uuid4().hex[:8],
                                        {"tfdist.managed": "true", "tfdist_cluster": "it-idle-guard"}, **options)
        containers.append(container)
        inventory = tmp_path / "inventory.yml"
        inventory.write_text(yaml.safe_dump({"all": {"hosts": {"node": host}}}))
        return container, str(inventory)

    yield start
    for container in containers:
        container.remove(force=True)


def guard(inventory, **args):
    """The idle_guard module (its action first) run on the node; (CompletedProcess, its result)."""
    done = run("ansible", "node", "-i", inventory, "-m", "tfdist.cluster.idle_guard", "-a", json.dumps(args))
    try:
        return done, yaml.safe_load(done.stdout.split("=>", 1)[1])  # ansible.cfg: results as YAML
    except (IndexError, yaml.YAMLError):
        return done, {}


def wait_for_status(container, status, timeout):
    def reached():
        container.reload()
        return container.status == status
    return wait_until(reached, timeout=timeout)


def read_file(container, path):
    """A file of the container's disk, running or stopped; '' when it has none."""
    try:
        stream = container.get_archive(path)[0]
    except Exception:  # pylint: disable=broad-except  # docker.errors.NotFound: no such file
        return ""
    with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as archive:
        return archive.extractfile(archive.getmembers()[0]).read().decode(errors="replace")


def test_a_long_command_from_the_controller_keeps_the_node_up_and_its_end_lets_it_power_off(
        node, docker_base_image, tmp_path):
    container, inventory = node(docker_base_image)
    idle_seconds = 6  # idle_minutes=0.1: the guard checks every second
    # One play: the guard, then at once an install that takes three times its timeout, in one SSH session.
    playbook = tmp_path / "long-install.yml"
    guard_args = {"idle_minutes": idle_seconds / 60, "tasks_dir": TASKS_DIR}
    playbook.write_text(yaml.safe_dump([{"hosts": "node", "gather_facts": False, "tasks": [
        {"name": "Guard the node", "tfdist.cluster.idle_guard": guard_args},
        {"name": "Install something for a while", "ansible.builtin.command": "sleep %d" % (idle_seconds * 3),
         "changed_when": False},
    ]}]))
    began = time.time()
    result = run_playbook(str(playbook), args=("-i", inventory))
    ended = time.time()
    # A node that powered off under the command would have cut its SSH connection: the play would fail.
    assert result.returncode == 0, tail(result) + read_file(container, GUARD_LOG)
    assert ended - began >= idle_seconds * 3
    container.reload()
    assert container.status == "running", read_file(container, GUARD_LOG)

    # Nobody at work any more: the node powers itself off within its timeout and a few checks.
    assert wait_for_status(container, "exited", timeout=idle_seconds + 30), read_file(container, GUARD_LOG)
    log = read_file(container, GUARD_LOG)
    # The guard logs the session's processes when they change: the command's shell may be all it saw (CI, loaded).
    assert re.search(r"SSH sessions at work: (?!none)\S", log), log
    powering_off = "tfdist idle guard: powering off: no TF task runs in %s, no SSH session runs a command" % TASKS_DIR
    assert powering_off in container.logs().decode(errors="replace"), log


def test_with_systemd_the_guard_is_a_service_that_comes_back_after_a_reboot(node, docker_vm_image):
    # Booted as the docker driver boots a VM-like node, with root's key given here instead of user-data.
    container, inventory = node(docker_vm_image, volumes={"/sys/fs/cgroup": {"bind": "/sys/fs/cgroup", "mode": "ro"}},
                                tmpfs={"/run": "", "/run/lock": ""})
    idle_seconds = 15  # idle_minutes=0.25: long enough to reboot the node before the guard powers it off
    options = {"idle_minutes": idle_seconds / 60, "tasks_dir": TASKS_DIR}

    def systemctl(*args):
        return container.exec_run(["systemctl", *args]).output.decode().strip()

    done, started = guard(inventory, **options)
    assert done.returncode == 0 and started.get("service") == "tfdist-idle-guard.service", tail(done)
    assert (systemctl("is-enabled", "tfdist-idle-guard"), systemctl("is-active", "tfdist-idle-guard")) == (
        "enabled", "active")
    assert systemctl("show", "--property=MainPID", "tfdist-idle-guard") == "MainPID=%d" % started["pid"]
    # A re-run: the action's look finds the service as asked, and changes nothing.
    done, again = guard(inventory, **options)
    assert done.returncode == 0 and not again["changed"] and again["pid"] == started["pid"], tail(done)

    # state=absent removes the service with the rest; started again, it comes back.
    done, removed = guard(inventory, state="absent")
    assert done.returncode == 0 and removed["changed"], tail(done)
    assert container.exec_run(["test", "-e", UNIT]).exit_code != 0
    assert systemctl("is-active", "tfdist-idle-guard") != "active"
    assert container.exec_run(["test", "-e", "/root/.tfdist/idle-guard"]).exit_code != 0
    done, started = guard(inventory, **options)
    assert done.returncode == 0 and started["started"], tail(done)

    # A reboot ends the container (as `systemctl reboot` does); started again, it boots, and the guard, back as a
    # service, powers it off with nobody at work and no word from the controller.
    container.exec_run(["systemctl", "reboot"], detach=True)
    assert wait_for_status(container, "exited", timeout=60)
    assert "powering off" not in read_file(container, GUARD_LOG)  # the reboot ended it, not the guard
    container.start()
    assert wait_for_status(container, "running", timeout=30)
    assert wait_for_status(container, "exited", timeout=idle_seconds + 60), read_file(container, GUARD_LOG)
    log = read_file(container, GUARD_LOG)
    # Two boots and three starts: the two before the reboot (started, then started again after state=absent
    # removed its log with its folder, so one is seen here), and the one at boot.
    assert log.count("watching: power off after") == 2 and log.count("powering off: no TF task runs in") == 1, log
