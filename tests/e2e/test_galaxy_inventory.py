"""The roles by FQCN from the built, installed collection, on a consumer's plain static inventory.

The nodes are docker containers (created by playbooks/provision.yml -e cloud=docker, destroyed afterwards);
the consumer's inventory lists them in groups `ps` and `worker` with their connection settings only: no
tfdist group, no tfdist host variables, no chief (worker 0 leads). The playbook is the one the Galaxy roles guide
(docs/docsite/rst/guide_galaxy_roles.rst) shows, run with none of the repository's configuration.
"""

import glob
import json
import os
import re
import textwrap

import numpy as np
import pytest
import yaml

from ansible_cli import REPO, run, run_inventory, run_playbook, tail
from docker_engine import cluster_containers

GUIDE = os.path.join(REPO, "docs", "docsite", "rst", "guide_galaxy_roles.rst")
DIGITS = os.path.join(REPO, "roles", "training", "files", "data", "digits.npz")


def code_blocks(rst):
    """(language, text) of each `.. code-block::` of an rst text, the text unindented."""
    blocks = []
    for match in re.finditer(r"^\.\. code-block:: *(\S+)\n\n((?:(?:   .*)?\n)+)", rst, re.M):
        blocks.append((match.group(1), textwrap.dedent(match.group(2)).strip() + "\n"))
    return blocks


def galaxy_section_blocks():
    """The inventory (ini) and the playbook (yaml) that the guide's section on the roles shows."""
    with open(GUIDE) as handle:
        text = handle.read()
    section = text.split("\nThe roles on your own inventory\n", 1)[1]
    section = re.split(r"\n\S.*\n-{4,}\n", section, maxsplit=1)[0]  # up to the next section
    blocks = code_blocks(section)
    inventory = next(body for lang, body in blocks if lang == "ini")
    playbook = next(body for lang, body in blocks if lang == "yaml")
    return inventory, playbook


@pytest.fixture(scope="module")
def installed_collection(tmp_path_factory):
    """The collection as a user gets it: built into a tarball, installed into a collections path."""
    where = tmp_path_factory.mktemp("galaxy")
    built = run("ansible-galaxy", "collection", "build", "--output-path", where, REPO, config=None, cwd=where)
    assert built.returncode == 0, tail(built)
    tarball = glob.glob(str(where / "tfdist-cluster-*.tar.gz"))[0]
    installed = run("ansible-galaxy", "collection", "install", "--force", tarball, "-p", where / "collections",
                    config=None, cwd=where)
    assert installed.returncode == 0, tail(installed)
    return where / "collections"


def plain(value):
    """A value of `ansible-inventory --list`, without its unsafe wrapping."""
    return value["__ansible_unsafe"] if isinstance(value, dict) and "__ansible_unsafe" in value else value


def consumer_inventory(name, example):
    """The guide's inventory with the docker nodes in place of its hosts: groups ps and worker, each host with
    its connection settings (ansible_*) only."""
    source = os.path.join(REPO, "inventories", "clusters", f"{name}.libcloud.yml")
    listed = json.loads(run_inventory("-i", source, "--list", check=True).stdout)["_meta"]["hostvars"]
    hostvars = {host: {k: plain(v) for k, v in variables.items()} for host, variables in listed.items()}
    nodes = {role: sorted((h for h, v in hostvars.items() if v.get("tfdist_role") == role),
                          key=lambda h: int(hostvars[h]["tfdist_index"])) for role in ("ps", "worker")}
    assert len(nodes["ps"]) == 1 and len(nodes["worker"]) == 2, hostvars
    example_hosts = [line.split()[0] for line in example.splitlines() if line and not line.startswith(("[", "#"))]
    example_groups = [line.strip("[]") for line in example.splitlines() if line.startswith("[")]
    assert example_groups == ["ps", "worker"] and len(example_hosts) == 3, example
    lines = []
    for group in ("ps", "worker"):
        lines.append(f"[{group}]")
        for host in nodes[group]:
            connection = {k: v for k, v in hostvars[host].items() if k.startswith("ansible_")}
            assert not any(k.startswith("tfdist_") for k in connection)
            lines.append(host + "".join(f" {k}={json.dumps(v) if ' ' in str(v) else v}" for k, v in connection.items()))
    return "\n".join(lines) + "\n", nodes


def test_roles_from_galaxy_train_on_a_static_ps_worker_inventory(engine, docker_cluster, installed_collection, tmp_path):
    import keras

    name = docker_cluster
    provisioned = run_playbook("playbooks/provision.yml", "cloud=docker", f"cluster_name={name}",
                               "tf_chief=0", "tf_workers=2", "tf_ps=1")
    assert provisioned.returncode == 0, tail(provisioned)

    example_inventory, example_playbook = galaxy_section_blocks()
    inventory, nodes = consumer_inventory(name, example_inventory)
    project = tmp_path / "project"
    project.mkdir()
    (project / "hosts.ini").write_text(inventory)
    (project / "train.yml").write_text(example_playbook)
    plays = yaml.safe_load(example_playbook)
    cluster_name = plays[0]["vars"]["training_cluster_name"]
    assert [r["role"] for r in plays[0]["roles"]] == ["tfdist.cluster.tensorflow", "tfdist.cluster.training"]

    # A user's own project: none of our ansible.cfg or ANSIBLE_* settings, the collection's own callback.
    env = {"ANSIBLE_COLLECTIONS_PATH": str(installed_collection), "ANSIBLE_HOST_KEY_CHECKING": "False",
           "ANSIBLE_STDOUT_CALLBACK": "tfdist.cluster.concise"}
    # pip inside the containers goes through this machine's TLS-intercepting proxy
    result = run_playbook("train.yml", "training_steps=50", "tensorflow_ca_bundle=/etc/ssl/certs/ca-certificates.crt",
                          args=["-i", "hosts.ini"], env=env, config=None, cwd=project)
    assert result.returncode == 0, tail(result)
    # The watch's progress lines still show with the concise callback.
    assert "step" in result.stdout and "failed=0" in result.stdout, tail(result)

    # Worker 0 (first host of the worker group) led the job: its model came back and predicts digits.
    artifacts = project / "artifacts" / cluster_name
    model = keras.models.load_model(artifacts / "model" / "model.keras")
    with np.load(DIGITS) as digits:
        assert model.predict(digits["x"][:10], verbose=0).shape == (10, 10)

    # No TF task is left on any node.
    for container in cluster_containers(engine, name):
        processes = container.exec_run(["ps", "-eo", "args"]).output.decode()
        assert f"/{cluster_name}/tasks/" not in processes, (container.name, processes)
