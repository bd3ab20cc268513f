"""The tensorflow role's look at a virtualenv (roles/tensorflow/files/read_venv.py), run as the role runs it.

The role gives the file to the virtualenv's Python with `python -c` and the requirements as arguments; here the
virtualenv is this test's own, whose packages are known.
"""

import json
import os
import subprocess
import sys
from importlib import metadata

import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "roles", "tensorflow", "files", "read_venv.py")
ANSIBLE = metadata.version("ansible-core")
JINJA = metadata.version("jinja2")


def read_venv(*specs):
    with open(SCRIPT) as handle:
        source = handle.read()
    run = subprocess.run([sys.executable, "-c", source, *specs], capture_output=True, text=True, check=True)
    return json.loads(run.stdout.splitlines()[-1])


@pytest.mark.parametrize("spec", ["ansible-core==%s" % ANSIBLE, "Ansible_Core==%s" % ANSIBLE,
                                  "ansible-core[extra]==%s" % ANSIBLE, "ansible-core>=2.0", "ansible-core"])
def test_an_installed_requirement_is_met_and_its_version_read(spec):
    assert read_venv(spec, "jinja2==%s" % JINJA) == {"version": ANSIBLE, "unmet": []}


def test_another_version_or_a_missing_package_is_unmet():
    found = read_venv("ansible-core==0.0.1", "jinja2<1", "no-such-package-tfdist==1.0", "jinja2==%s" % JINJA)
    assert found == {"version": ANSIBLE, "unmet": ["ansible-core==0.0.1", "jinja2<1", "no-such-package-tfdist==1.0"]}


def test_a_missing_first_package_has_no_version():
    assert read_venv("no-such-package-tfdist==1.0") == {"version": None, "unmet": ["no-such-package-tfdist==1.0"]}


def test_what_it_cannot_parse_is_left_to_pip():
    assert read_venv("ansible-core==%s" % ANSIBLE, "./a/local/path")["unmet"] == ["./a/local/path"]
