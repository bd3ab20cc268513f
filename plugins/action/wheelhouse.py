# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Download the wheels a node needs into the controller's wheelhouse, once for every node of the same kind.

Runs in the controller's own process with the controller's pip (the Python running ansible-playbook); the rules are
plugins/module_utils/_wheelhouse.py. Each host of a play calls it with what its own Python said: the first one
downloads, the others wait on the folder's lock and find the download recorded.
"""

from __future__ import annotations

import sys

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.tfdist.cluster.plugins.module_utils._wheelhouse import WheelhouseError, ensure

ARGUMENT_SPEC = {
    "path": {"type": "path", "required": True},
    "requirements": {"type": "list", "elements": "str", "required": True},
    "node": {"type": "dict", "required": True},
    "ca_bundle": {"type": "str", "default": ""},
    "no_deps": {"type": "list", "elements": "str", "default": []},
}
NODE_KEYS = ("python_version", "implementation", "platform")


def download(params, pip, check_mode=False):
    """The action's result for validated params (the unit tests call this with a pip of their own)."""
    if not params["requirements"]:
        raise AnsibleActionFail("requirements: at least one (the pinned TensorFlow first)")
    missing = [key for key in NODE_KEYS if not params["node"].get(key)]
    if missing:
        raise AnsibleActionFail("node: %s missing (what roles/tensorflow/files/read_platform.py prints)"
                                % ", ".join(missing))
    try:
        return ensure(params["path"], params["requirements"], params["node"], pip, params["ca_bundle"], check_mode,
                      params["no_deps"])
    except WheelhouseError as error:
        raise AnsibleActionFail("wheelhouse %s: %s" % (params["path"], error)) from None
    except OSError as error:
        raise AnsibleActionFail("wheelhouse %s: %s: %s" % (params["path"], error.filename, error.strerror)) from None


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = False  # the wheelhouse is the controller's

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        params = self.validate_argument_spec(ARGUMENT_SPEC)[1]
        result.update(download(params, [sys.executable, "-m", "pip"], self._task.check_mode))
        return result
