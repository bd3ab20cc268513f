# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Create, find or remove a cluster's nodes; on the controller, in the controller's own process.

The provision role calls the module on the controller, twice on a first deploy (the plan in check mode, then the
nodes) and once on a re-run. A module run there starts a Python that imports Ansible's module code and libcloud
and needs its payload built first: about half a second, more than the cloud's answer. Where the task runs on the
controller (connection local, no become) with the controller's own Python and no environment of its own, this
action runs the module's code (run_module) here instead, on the options validated with the module's argument
spec; anything else, or options the module must name as wrong, runs the module.
"""

from __future__ import annotations

import os
import sys

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.parameters import remove_values

from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import HAS_LIBCLOUD
from ansible_collections.tfdist.cluster.plugins.modules import libcloud_node
from ansible_collections.tfdist.cluster.plugins.plugin_utils._controller import AnswerFirst, on_this_machine


class ModuleDone(BaseException):
    """exit_json or fail_json: like the SystemExit of AnsibleModule, not an Exception the module's code catches."""


class ModuleHere:
    """What the module's code uses of AnsibleModule, in this process."""

    def __init__(self, params, check_mode, diff):
        self.params, self.check_mode, self._diff = params, check_mode, diff

    def exit_json(self, **result):
        raise ModuleDone(result)

    def fail_json(self, msg, **result):
        raise ModuleDone(dict(result, failed=True, msg=msg))


class ActionModule(AnswerFirst):

    MODULE = "tfdist.cluster.libcloud_node"

    def _answer(self, task_vars):
        return self._run_here() if self._runs_here(task_vars) else None

    def _runs_here(self, task_vars):
        """The task runs on the controller, with this process's Python (its libcloud) and environment."""
        # A play's or role's environment, even an empty one, shows up as a list of them.
        if not HAS_LIBCLOUD or not on_this_machine(self) or self._task.async_val or any(self._task.environment or []):
            return False
        interpreter = self._templar.template(task_vars.get("ansible_python_interpreter", sys.executable))
        return isinstance(interpreter, str) and (
            os.path.dirname(os.path.abspath(interpreter)) == os.path.dirname(os.path.abspath(sys.executable)))

    def _run_here(self):
        """The module's result, from its code run here; None when the module must name what is wrong."""
        try:
            validation, params = self.validate_argument_spec(libcloud_node.ARGUMENT_SPEC)
        except AnsibleActionFail:
            return None
        module = ModuleHere(params, self._task.check_mode, self._task.diff)
        try:
            libcloud_node.run_module(module)
        except ModuleDone as done:
            # As AnsibleModule does: no value of a no_log option (credentials) in what is returned.
            return remove_values(done.args[0], validation._no_log_values)
        raise AnsibleActionFail("libcloud_node returned no result")
