"""Each role's `vm` Molecule scenario: its default scenario's playbooks on the VM-like platform, one test each.

The nodes are made as cloud=docker-vm makes them (tests/molecule/vm/create.yml: the stock image tfdist/node-vm boots
systemd as PID 1 and cloud-init, which makes the login user debian from the user-data); Ansible logs in as debian and
becomes root. A file of its own beside test_molecule.py (same runner, run_scenario), so that `make test`'s workers
(pytest-xdist, a file's tests in one worker) can run these and the default scenarios side by side.
"""

import pytest

from test_molecule import run_scenario

# Cheapest first.
ROLES = [
    "provision",  # the docker-vm profile: the role's inventory source logs in as debian and becomes root
    "training",  # TensorFlow from the controller's wheelhouse (.cache/wheelhouse), as deploy.yml installs it
    "cuda",
    "tensorflow",  # the same wheelhouse; the node keeps neither the wheels nor a CA bundle
    "hdfs",  # the daemons as systemd units
]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.usefixtures("docker_engine", "docker_vm_image")  # tests/docker_engine.py: skip or, under CI, fail
def test_molecule_vm_scenario(role, tmp_path, pytestconfig):
    run_scenario(role, "vm", tmp_path, pytestconfig)
