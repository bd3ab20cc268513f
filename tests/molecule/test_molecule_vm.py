"""The roles' Molecule scenarios on nodes as clouds give them, one test each: each role's main test.

The nodes are made as cloud=docker-vm makes them (tests/molecule/vm/create.yml: the stock image tfdist/node-vm boots
systemd as PID 1 and cloud-init, which makes the login user debian from the user-data); Ansible logs in as debian and
becomes root. The cuda, provision and training roles have no other scenario on one node; hdfs and tensorflow run their
default scenario's playbooks here as `vm` (their default one, on root containers, is test_molecule.py's). A file of its
own beside test_molecule.py (same runner, run_scenario), so that `make test`'s workers (pytest-xdist, a file's tests
in one worker) can run these and the root-container scenarios side by side.
"""

import pytest

from test_molecule import run_scenario

# (role, scenario), cheapest first.
SCENARIOS = [
    ("provision", "default"),  # the docker-vm profile: the role's inventory source logs in as debian and becomes root
    ("training", "default"),  # TensorFlow from the controller's wheelhouse (.cache/wheelhouse), as deploy.yml installs it
    ("cuda", "default"),
    ("tensorflow", "vm"),  # the same wheelhouse; the node keeps neither the wheels nor a CA bundle
    ("hdfs", "vm"),  # the daemons as systemd units
]


@pytest.mark.parametrize(("role", "scenario"), SCENARIOS, ids=[f"{r}-{s}" for r, s in SCENARIOS])
@pytest.mark.usefixtures("docker_engine", "docker_vm_image")  # tests/docker_engine.py: skip or, under CI, fail
def test_molecule_vm_scenario(role, scenario, tmp_path, pytestconfig):
    run_scenario(role, scenario, tmp_path, pytestconfig)
