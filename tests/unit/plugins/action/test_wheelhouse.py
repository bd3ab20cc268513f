"""tfdist.cluster.wheelhouse: what the node said is checked first, and a failure names the wheelhouse and the cause.

(The wheelhouse's rules: tests/unit/plugins/module_utils/test__wheelhouse.py.)
"""

import re
import sys

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.tfdist.cluster.plugins.action import wheelhouse

NODE = {"python_version": "3.11", "implementation": "cpython", "platform": "linux-x86_64", "glibc": "2.36"}


def params(path, **options):
    values = {name: spec.get("default") for name, spec in wheelhouse.ARGUMENT_SPEC.items()}
    values.update(path=str(path), requirements=["tensorflow-cpu==2.21.0"], node=NODE)
    values.update(options)
    return values


def test_a_node_description_without_its_platform_is_refused_naming_what_is_missing(tmp_path):
    with pytest.raises(AnsibleActionFail, match="^node: implementation, platform missing"):
        wheelhouse.download(params(tmp_path, node={"python_version": "3.11"}), [sys.executable, "-m", "pip"])


def test_a_node_the_wheels_cannot_fit_fails_naming_the_wheelhouse(tmp_path):
    with pytest.raises(AnsibleActionFail, match="^wheelhouse %s: a node with glibc is needed" % tmp_path):
        wheelhouse.download(params(tmp_path, node=dict(NODE, glibc=None)), [sys.executable, "-m", "pip"])


def test_a_controller_python_without_pip_is_named(tmp_path):
    no_pip = [sys.executable, "-c", "import sys; sys.exit('/usr/bin/python3: No module named pip')"]
    expected = r"^wheelhouse .*: the controller's Python \(%s\) has no pip$" % re.escape(sys.executable)
    with pytest.raises(AnsibleActionFail, match=expected):
        wheelhouse.download(params(tmp_path), no_pip)
