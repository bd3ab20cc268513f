"""The tensorflow role's wheelhouse, on nodes of the stock base image that have no route to any package index.

The nodes are containers of the docker cloud's base image (tfdist/node:bookworm: Debian with python3, python3-venv
and sshd, no TensorFlow) on a docker network of their own made with no route out (internal), reached over SSH as the
docker cloud's nodes are. The role runs as deploy.yml runs it: tensorflow_wheelhouse on, this machine's CA bundle given
(its proxy re-signs HTTPS), a wheelhouse of the test's own, so that the controller's download happens here:

- a node installs TensorFlow 2.21.0 that computes: from the wheelhouse, as the node cannot reach PyPI;
- the controller downloaded it once; a second run on that node changes nothing;
- a second node installs from the same wheelhouse, which is left as it was: nothing downloaded again;
- the nodes keep no copy of the wheels, and get no CA bundle (they reach no index).

The OS packages (python3-venv) are in the image already: with no route to Debian's mirror either, the role is told not
to manage them. The engine comes from the docker_engine fixture (skipped without one, a failure when CI is set); every
container and the network are labelled and removed at the end, even when a test fails.
"""

import json
import os
import shutil
import time
import uuid

import pytest
import yaml

from ansible_cli import run_playbook, tail
from docker_engine import make_ssh_key, root_ssh_node, unavailable

CA_BUNDLE = os.environ.get("TFDIST_CA_BUNDLE", "/etc/ssl/certs/ca-certificates.crt")
VENV_PYTHON = "/opt/tfdist/venv/bin/python"
NODE_WHEELS = "/var/cache/tfdist/wheelhouse"
CA_DEST = "/usr/local/share/tfdist/ca-bundle.pem"
FOLDER_PREFIX = "tensorflow-cpu-2.21.0-cp311-manylinux_"
DOWNLOAD_TASK = "Download the wheels into the controller's wheelhouse"
LABELS = {"tfdist.managed": "true", "tfdist_cluster": "it-wheelhouse"}
PLAYBOOK = """
- name: TensorFlow from the controller's wheelhouse
  hosts: all
  gather_facts: false
  roles:
    - role: tfdist.cluster.tensorflow
      vars:
        tensorflow_variant: cpu
        tensorflow_wheelhouse: true
        tensorflow_wheelhouse_dir: {wheelhouse}
        tensorflow_ca_bundle: {ca_bundle}
        tensorflow_manage_system_packages: false
"""
TF_CHECK = "import tensorflow as tf; print(tf.__version__, float(tf.reduce_sum(tf.ones([2, 2]))))"


@pytest.fixture(scope="module")
def offline_nodes(docker_engine, docker_base_image, tmp_path_factory):
    """Two running containers of the base image on an internal network, root's key authorized; (containers, inventory)."""
    if not shutil.which("ssh"):
        unavailable("ssh is not installed")
    if not os.path.isfile(CA_BUNDLE):
        unavailable("no CA bundle at %s (set TFDIST_CA_BUNDLE)" % CA_BUNDLE)
    home = tmp_path_factory.mktemp("wheelhouse-nodes")
    key = make_ssh_key(home)
    suffix = uuid.uuid4().hex[:8]
    network = docker_engine.networks.create("it-wheelhouse-%s" % suffix, internal=True, labels=LABELS)
    containers, hosts = {}, {}
    try:
        for name in ("node1", "node2"):
            containers[name], hosts[name] = root_ssh_node(docker_engine, docker_base_image, key, "it-wheelhouse-%s-%s" % (
                name, suffix), LABELS, network=network.name)
        inventory = home / "inventory.yml"
        inventory.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
        yield containers, str(inventory)
    finally:
        for container in containers.values():
            container.remove(force=True)
        network.remove()


def converge(inventory, playbook, *hosts):
    """The playbook on hosts, reported by the json callback: (CompletedProcess, its report, seconds)."""
    started = time.monotonic()
    done = run_playbook(str(playbook), args=("-i", inventory, "-l", ",".join(hosts)),
                        env={"ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"}, timeout=1200)
    seconds = time.monotonic() - started
    try:
        return done, json.loads(done.stdout[done.stdout.index("{"):]), seconds
    except ValueError:
        return done, {}, seconds


def task_results(report, name_start):
    """Each host's result of the tasks whose name starts with name_start."""
    results = {}
    for play in report["plays"]:
        for task in play["tasks"]:
            if task["task"]["name"].split(" : ")[-1].startswith(name_start):  # the role's name may come first
                results.update(task["hosts"])
    return results


def files_of(folder):
    """name -> (size, mtime_ns) of every file of a folder: what a second download would change."""
    return {entry.name: (entry.stat().st_size, entry.stat().st_mtime_ns) for entry in os.scandir(folder)}


def run_in(container, *argv):
    """(exit code, what it printed) of a command in the container; its standard error (TensorFlow's log) only when
    it printed nothing else."""
    result = container.exec_run(list(argv), demux=True)
    out, err = ((text or b"").decode(errors="replace").strip() for text in result.output)
    return result.exit_code, out or err


def test_offline_nodes_install_tensorflow_from_one_download_on_the_controller(offline_nodes, tmp_path, capsys):
    containers, inventory = offline_nodes
    wheelhouse = tmp_path / "wheelhouse"
    playbook = tmp_path / "tensorflow.yml"
    playbook.write_text(PLAYBOOK.format(wheelhouse=wheelhouse, ca_bundle=CA_BUNDLE))
    # The nodes have no route out: whatever they install comes from the controller.
    code, said = run_in(containers["node1"], "python3", "-c",
                        "import socket; socket.create_connection(('pypi.org', 443), 5)")
    assert code != 0, said

    done, report, first_seconds = converge(inventory, playbook, "node1")
    assert done.returncode == 0, tail(done)
    assert task_results(report, DOWNLOAD_TASK)["node1"]["changed"], [
        task["task"]["name"] for play in report["plays"] for task in play["tasks"]]
    [folder] = [entry for entry in os.listdir(wheelhouse) if os.path.isdir(wheelhouse / entry)]
    assert folder.startswith(FOLDER_PREFIX) and (wheelhouse / (folder + ".tar")).is_file()
    downloaded = files_of(wheelhouse / folder)
    assert any(name.startswith("tensorflow_cpu-2.21.0-cp311-") for name in downloaded), sorted(downloaded)
    assert run_in(containers["node1"], VENV_PYTHON, "-c", TF_CHECK) == (0, "2.21.0 4.0")

    # Again on that node, and a new node: the first changes nothing, the second installs, nothing is downloaded.
    done, report, second_seconds = converge(inventory, playbook, "node1", "node2")
    assert done.returncode == 0, tail(done)
    assert report["stats"]["node1"]["changed"] == 0, report["stats"]
    assert task_results(report, DOWNLOAD_TASK).keys() == {"node2"}
    assert not task_results(report, DOWNLOAD_TASK)["node2"]["changed"]
    assert files_of(wheelhouse / folder) == downloaded
    assert run_in(containers["node2"], VENV_PYTHON, "-c", TF_CHECK) == (0, "2.21.0 4.0")

    for container in containers.values():
        assert run_in(container, "test", "-e", NODE_WHEELS)[0] != 0  # the copy is gone
        assert run_in(container, "test", "-e", CA_DEST)[0] != 0  # no index, no bundle
    with capsys.disabled():
        print("\nwheelhouse: node1 with the download %.0f s; node1 again and node2 from the wheelhouse %.0f s"
              % (first_seconds, second_seconds))
