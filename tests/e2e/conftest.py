"""Fixtures of the tests that run the real playbooks (helpers: tests/ansible_cli.py, processes.py, docker_engine.py)."""

import uuid

import pytest

from ansible_cli import remove_artifacts, run_playbook
from docker_engine import cluster_containers


@pytest.fixture
def cluster_name():
    """A cluster name of its own for each test; its artifacts go away afterwards."""
    name = f"t{uuid.uuid4().hex[:8]}"
    yield name
    run_playbook("playbooks/destroy.yml", f"cluster_name={name}")
    remove_artifacts(name)


@pytest.fixture(scope="session")
def engine(docker_engine, docker_node_images):
    """The Docker Engine (a docker SDK client), once the docker cloud's node images are built."""
    return docker_engine


@pytest.fixture
def docker_cluster(engine, cluster_name):
    """A cluster name on the docker cloud; destroyed (and checked gone) afterwards."""
    yield cluster_name
    run_playbook("playbooks/destroy.yml", "cloud=docker", f"cluster_name={cluster_name}")
    assert cluster_containers(engine, cluster_name) == []


@pytest.fixture
def aws_cluster(ec2_emulator, cluster_name):
    """A cluster name on cloud=aws (the EC2 emulator); destroyed there afterwards."""
    yield cluster_name
    run_playbook("playbooks/destroy.yml", "cloud=aws", f"cluster_name={cluster_name}", env=ec2_emulator.env)


@pytest.fixture
def docker_vm_cluster(docker_engine, docker_vm_image, cluster_name):
    """A cluster name on cloud=docker-vm (VM-like nodes); destroyed (and checked gone) afterwards."""
    yield cluster_name
    run_playbook("playbooks/destroy.yml", "cloud=docker-vm", f"cluster_name={cluster_name}")
    assert cluster_containers(docker_engine, cluster_name) == []
