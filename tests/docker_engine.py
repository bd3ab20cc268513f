"""The Docker Engine for the tests that need one, and the one rule for when it cannot run.

A pytest plugin (tests/conftest.py lists it in pytest_plugins), so every test folder has its fixtures:

- docker_engine       (session) a docker SDK client of a running engine, started with scripts/ensure-docker.sh
- docker_base_image   (session) the base node image (scripts/build-node-image.sh --base-only), its name
- docker_node_images  (session) the base and the TensorFlow node images (scripts/build-node-image.sh)
- docker_vm_image     (session) the VM-like node image (scripts/build-node-image.sh --vm: systemd, cloud-init), its name

and the one way a test (or a bench) gets a container it reaches over SSH as root, as Ansible does a node:
make_ssh_key(folder), root_ssh_node(client, image, key, ...) -> (container, its inventory host variables),
ssh_answers(address).

When the engine cannot run here (no docker SDK, the engine does not start, a tool missing), a test that
needs it is skipped on a developer's machine and FAILS when the environment variable CI is set: a CI run
must never look green because its docker tests did not run. unavailable() is that rule; call it for any
other prerequisite of a docker-based test. An image build that fails is always a failure.
"""

import json
import os
import socket
import subprocess
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(REPO, "scripts")
BASE_IMAGE = os.environ.get("TFDIST_BASE_IMAGE", "tfdist/node:bookworm")
VM_IMAGE = os.environ.get("TFDIST_VM_IMAGE", "tfdist/node-vm:bookworm")
START_TIMEOUT = 300
BUILD_TIMEOUT = 1800
OUTPUT_LINES = 40


def in_ci():
    """Whether CI is set (to anything but an empty string, 0, false or no)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def unavailable(reason):
    """A prerequisite of a test (the Docker engine, the IM's venv) is missing: skip it, or fail it when CI is set."""
    if in_ci():
        pytest.fail(f"{reason}. CI is set, so this test must run: this is a failure, not a skip.",
                    pytrace=False)
    pytest.skip(f"{reason} (set CI=1 to make this a failure)")


def script(name, *args, timeout=BUILD_TIMEOUT):
    """Run scripts/NAME ARGS; returns the CompletedProcess (the caller decides what a failure means)."""
    return subprocess.run(["bash", os.path.join(SCRIPTS, name), *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, check=False)


def last_lines(proc, count=OUTPUT_LINES):
    return "\n".join((proc.stdout + proc.stderr).splitlines()[-count:])


def build_images(*args):
    built = script("build-node-image.sh", *args)
    if built.returncode != 0:
        pytest.fail(f"scripts/build-node-image.sh {' '.join(args)} failed (exit {built.returncode}):\n"
                    f"{last_lines(built)}", pytrace=False)


@pytest.fixture(scope="session")
def docker_engine():
    """A docker SDK client of a running engine (started by scripts/ensure-docker.sh when it is not)."""
    try:
        import docker  # only the docker-based tests need the SDK
    except ImportError:
        unavailable("the docker SDK is not installed (pip install -r requirements.txt)")
    started = script("ensure-docker.sh", timeout=START_TIMEOUT)
    if started.returncode != 0:
        unavailable(f"the Docker engine does not answer even after scripts/ensure-docker.sh "
                    f"(exit {started.returncode}):\n{last_lines(started)}")
    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException as error:
        unavailable(f"the docker SDK cannot reach the engine that scripts/ensure-docker.sh started: {error}")
    yield client
    client.close()


@pytest.fixture(scope="session")
def docker_base_image(docker_engine):
    """The base node image (Debian with python3 and sshd): what the docker driver's tests start."""
    build_images("--base-only")
    return BASE_IMAGE


@pytest.fixture(scope="session")
def docker_node_images(docker_engine):
    """The base and the TensorFlow node images: what the docker cloud and the Molecule scenarios run."""
    build_images()


@pytest.fixture(scope="session")
def docker_vm_image(docker_engine):
    """The VM-like node image (systemd as PID 1, cloud-init, no TensorFlow): what cloud=docker-vm runs."""
    build_images("--vm")
    return VM_IMAGE


def cluster_containers(client, cluster):
    """The containers (any state) labelled as nodes of `cluster`."""
    return client.containers.list(all=True, filters={"label": f"tfdist_cluster={cluster}"})


def job_file(client, cluster, node, path):
    """A file of the cluster's job folder on a node (/var/lib/tfdist/CLUSTER/PATH), read inside its container: its
    bytes, or cat's error when there is none."""
    return client.containers.get(f"{cluster}-{node}").exec_run(["cat", f"/var/lib/tfdist/{cluster}/{path}"]).output


def chief_status(client, cluster):
    """The chief's status.json, read inside its container; {} while there is none to read."""
    import docker.errors  # the engine fixture made sure the SDK is there

    try:
        return json.loads(job_file(client, cluster, "chief-0", "status.json"))
    except (docker.errors.NotFound, ValueError):  # no container (not made yet, replaced), no file, half written
        return {}
    except docker.errors.APIError as error:
        if error.status_code != 409:
            raise
        return {}  # created by the deploy but not started yet (or stopped): exec answers 409 Conflict


# What Ansible needs to reach a test container as root with a key of the test's own (no host key to remember).
SSH_ARGS = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
AUTHORIZE = "mkdir -p /root/.ssh && cat > /root/.ssh/authorized_keys && chmod 600 /root/.ssh/authorized_keys"


def make_ssh_key(folder):
    """An ed25519 key pair in folder (id_ed25519 and .pub), made once; the private key's path."""
    key = os.path.join(str(folder), "id_ed25519")
    if not os.path.exists(key):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "tfdist-test", "-f", key], check=True)
    return key


def ssh_answers(address):
    """Whether sshd answers on address:22 with its banner."""
    try:
        with socket.create_connection((address, 22), timeout=2) as connection:
            return connection.recv(4).startswith(b"SSH-")
    except OSError:
        return False


def root_ssh_node(client, image, key, name, labels, network=None, ssh_timeout=60, **options):
    """A running container of image (on network, or the default bridge) whose root accepts key over SSH, and the
    inventory host variables that reach it: (container, host_vars). The caller removes the container."""
    container = client.containers.run(image, detach=True, name=name, labels=labels, network=network, **options)
    with open(key + ".pub", "rb") as public:
        done = subprocess.run(["docker", "exec", "-i", container.id, "sh", "-c", AUTHORIZE], input=public.read(),
                              capture_output=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    container.reload()
    address = container.attrs["NetworkSettings"]["Networks"][network or "bridge"]["IPAddress"]
    deadline = time.monotonic() + ssh_timeout
    while not ssh_answers(address):
        assert time.monotonic() < deadline, container.logs().decode(errors="replace")[-3000:]
        time.sleep(0.2)
    return container, {"ansible_host": address, "ansible_user": "root", "ansible_ssh_private_key_file": key,
                       "ansible_python_interpreter": "/usr/bin/python3", "ansible_ssh_common_args": SSH_ARGS}
