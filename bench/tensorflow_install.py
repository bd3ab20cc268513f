# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""How long TensorFlow takes to install on nodes of a stock image: from the index on every node, or from the
controller's wheelhouse (the tensorflow role's tensorflow_wheelhouse, as deploy.yml runs it), on 1 node and on 3.

Each case starts fresh containers of the docker cloud's base image (tfdist/node:bookworm: python3, python3-venv, sshd,
no TensorFlow) on a docker network of their own, reached over SSH as the docker cloud's nodes are, and times the
tensorflow role on them (ansible-playbook from start to end):
  index            every node pip-installs from the index itself (through this machine's proxy: the CA bundle)
  wheelhouse-cold  an empty wheelhouse: the controller downloads the wheels once, then the nodes install from them
  wheelhouse       the wheelhouse holds them already (every deploy after the first one on this controller)
Then the copy alone, to 3 fresh nodes at once: the way the role moves the wheels (one tar to each node over its SSH
connection, unpacked there) against the nodes fetching the same wheels over HTTP from a server on the controller's
address on the cluster network (pip download --no-index --find-links http://...: the design not taken).

The controller's download goes through this machine's pip settings (its index, mirrors and certificates).
Writes bench/results/tensorflow_install.json. Usage: bench/tensorflow_install.py [--nodes 1,3]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid

import yaml
from ansible.plugins.loader import init_plugin_loader

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The collection, the tests' helpers included, by its name as the ansible CLIs load it, from where make setup links it.
init_plugin_loader([os.path.join(REPO, ".collections")])

from goals import write  # noqa: E402

from ansible_collections.tfdist.cluster.tests.ansible_cli import run, run_playbook, tail  # noqa: E402
from ansible_collections.tfdist.cluster.tests.docker_engine import BASE_IMAGE, make_ssh_key, root_ssh_node  # noqa: E402
from ansible_collections.tfdist.cluster.tests.processes import wait_until  # noqa: E402

CA_BUNDLE = os.environ.get("TFDIST_CA_BUNDLE", "/etc/ssl/certs/ca-certificates.crt")
LABELS = {"tfdist.managed": "true", "tfdist_cluster": "bench-tf-install"}
PLAYBOOK = """
- name: TensorFlow on stock nodes
  hosts: all
  gather_facts: false
  roles:
    - role: tfdist.cluster.tensorflow
      vars:
        tensorflow_variant: cpu
        tensorflow_wheelhouse: {wheelhouse}
        tensorflow_wheelhouse_dir: {wheelhouse_dir}
        tensorflow_ca_bundle: {ca_bundle}
        tensorflow_manage_system_packages: false  # python3-venv is in the image
"""


class Nodes:
    """count fresh containers of the base image on a network of their own, root's key authorized; removed on exit."""

    def __init__(self, client, count, workdir):
        self.client, self.count, self.workdir = client, count, workdir
        self.containers, self.network = [], None

    def __enter__(self):
        key = make_ssh_key(self.workdir)
        suffix = uuid.uuid4().hex[:8]
        self.network = self.client.networks.create("bench-tf-%s" % suffix, labels=LABELS)
        hosts = {}
        for index in range(self.count):
            container, hosts["node%d" % index] = root_ssh_node(
                self.client, BASE_IMAGE, key, "bench-tf-%s-%d" % (suffix, index), LABELS, network=self.network.name)
            self.containers.append(container)
        self.inventory = os.path.join(self.workdir, "inventory.yml")
        with open(self.inventory, "w") as handle:
            yaml.safe_dump({"all": {"hosts": hosts}}, handle)
        return self

    def gateway(self):
        """The controller's address on the nodes' network."""
        self.network.reload()
        return self.network.attrs["IPAM"]["Config"][0]["Gateway"]

    def __exit__(self, *exc):
        for container in self.containers:
            container.remove(force=True)
        self.network.remove()


def answers(address, port):
    try:
        socket.create_connection((address, port), timeout=1).close()
        return True
    except OSError:
        return False


def install(client, count, workdir, wheelhouse_dir=None):
    """Seconds the tensorflow role takes on count fresh nodes (from the index without a wheelhouse_dir)."""
    playbook = os.path.join(workdir, "tensorflow.yml")
    with open(playbook, "w") as handle:
        handle.write(PLAYBOOK.format(wheelhouse=wheelhouse_dir is not None, ca_bundle=CA_BUNDLE,
                                     wheelhouse_dir=wheelhouse_dir or os.path.join(workdir, "unused")))
    with Nodes(client, count, workdir) as nodes:
        started = time.monotonic()
        done = run_playbook(playbook, args=("-i", nodes.inventory), timeout=3600)
        seconds = time.monotonic() - started
        if done.returncode != 0:
            sys.exit("the tensorflow role failed:\n" + tail(done))
    return seconds


def copy_over_ssh(nodes, archive):
    """The role's way: one tar per node over its SSH connection, unpacked there."""
    started = time.monotonic()
    done = run("ansible", "all", "-i", nodes.inventory, "-m", "ansible.builtin.shell",
               "-a", "mkdir -p /tmp/wheels", timeout=600)
    done = done.returncode == 0 and run("ansible", "all", "-i", nodes.inventory, "-m", "ansible.builtin.unarchive",
                                        "-a", "src=%s dest=/tmp/wheels" % archive, timeout=1800)
    if not done or done.returncode != 0:
        sys.exit("copy over SSH failed:\n" + (tail(done) if done else ""))
    return time.monotonic() - started


def fetch_over_http(nodes, folder, requirement):
    """The way not taken: a server on the controller's address on the nodes' network, each node's pip fetching."""
    gateway = nodes.gateway()
    with socket.socket() as probe:
        probe.bind((gateway, 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", gateway, "--directory", folder],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not wait_until(lambda: answers(gateway, port), timeout=10):
            sys.exit("the HTTP server on %s:%d does not answer" % (gateway, port))
        # Plain HTTP: pip must be told to trust the host (nothing authenticates the wheels it serves).
        fetch = ["python3", "-m", "pip", "download", "--quiet", "--no-index", "--trusted-host", gateway,
                 "--find-links", "http://%s:%d/" % (gateway, port), "--dest", "/tmp/wheels", requirement]
        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(len(nodes.containers)) as pool:
            codes = list(pool.map(lambda container: container.exec_run(fetch).exit_code, nodes.containers))
        if any(codes):
            sys.exit("fetch over HTTP failed: %s" % codes)
        return time.monotonic() - started
    finally:
        server.terminate()
        server.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--nodes", default="1,3", help="node counts, comma-separated (default 1,3)")
    options = parser.parse_args()
    counts = [int(count) for count in options.nodes.split(",")]
    import docker  # noqa: PLC0415 - the bench's one third-party need, the docker SDK of requirements.txt

    if subprocess.run(["bash", os.path.join(REPO, "scripts", "build-node-image.sh"), "--base-only"],
                      check=False).returncode != 0:
        sys.exit("no base image")
    client = docker.from_env()
    workdir = tempfile.mkdtemp(prefix="tfdist-bench-tf-")
    wheelhouse_dir = os.path.join(workdir, "wheelhouse")
    report = {"nodes": counts, "seconds": {}}
    try:
        def case(name, count, seconds):
            report["seconds"]["%s/%d" % (name, count)] = round(seconds, 1)
            print("%-16s %d node%s  %6.1f s" % (name, count, "" if count == 1 else "s", seconds), flush=True)

        for count in counts:
            case("index", count, install(client, count, workdir))
        case("wheelhouse-cold", counts[0], install(client, counts[0], workdir, wheelhouse_dir))
        for count in counts:
            case("wheelhouse", count, install(client, count, workdir, wheelhouse_dir))

        [folder] = [os.path.join(wheelhouse_dir, name) for name in os.listdir(wheelhouse_dir)
                    if os.path.isdir(os.path.join(wheelhouse_dir, name))]
        report["wheelhouse_mb"] = round(sum(entry.stat().st_size for entry in os.scandir(folder)) / 1e6)
        count = max(counts)
        with Nodes(client, count, workdir) as nodes:
            case("copy-ssh", count, copy_over_ssh(nodes, folder + ".tar"))
        with Nodes(client, count, workdir) as nodes:
            case("copy-http", count, fetch_over_http(nodes, folder, "tensorflow-cpu==2.21.0"))
        print("wheelhouse: %d MB" % report["wheelhouse_mb"])
        write("tensorflow_install", report)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
