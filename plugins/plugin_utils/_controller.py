# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Actions that answer for their module where they can do it for less, and run the module otherwise.

An answer is a look on the host with one raw command, or the module's own code in the controller's process where
the host is the controller itself (on_this_machine, RunsHere).

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import os
import sys

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.parameters import remove_values
from ansible.plugins.action import ActionBase


def on_this_machine(action):
    """The action's host is this machine, reached as this process's user (connection local, no become): its files
    and processes are this process's to read, with no command to run."""
    return action._connection.transport == "local" and not action._play_context.become


class AnswerFirst(ActionBase):
    """Runs MODULE, the module of the same name, unless _answer gives its result first."""

    TRANSFERS_FILES = False
    MODULE = None

    def _answer(self, task_vars):
        """The module's result, found for less than its run; None: the module's turn."""
        raise NotImplementedError

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        answer = self._answer(task_vars or {})
        if answer is None:
            answer = self._execute_module(module_name=self.MODULE, module_args=self._task.args, task_vars=task_vars)
        result.update(answer)
        return result


class ModuleDone(BaseException):
    """exit_json or fail_json: like the SystemExit of AnsibleModule, not an Exception the module's code catches."""


class ModuleHere:
    """What a module's code uses of AnsibleModule (params, check_mode, _diff, no_log_values, exit_json, fail_json), in
    this process."""

    def __init__(self, params, check_mode, diff):
        self.params, self.check_mode, self._diff = params, check_mode, diff
        self.no_log_values = set()  # values the module's code marks secret, masked in its result as AnsibleModule does

    def exit_json(self, **result):
        raise ModuleDone(result)

    def fail_json(self, msg, **result):
        raise ModuleDone(dict(result, failed=True, msg=msg))


class RunsHere(AnswerFirst):
    """Runs the module's code in the controller's own process where the task runs on the controller (connection local,
    no become) with this process's Python and no environment of its own; the module anywhere else.

    A module run on the controller starts a Python that imports Ansible's module code (and libcloud) after its
    payload is built: about half a second, more than a cloud's answer. MODULE_CODE is the module's Python module: its
    ARGUMENT_SPEC, REQUIRED_IF (if any) and run_module(module), which takes a ModuleHere. Options the module must name
    as wrong, or a library missing here (HERE_NEEDS false), run the module, which names them.
    """

    MODULE_CODE = None
    HERE_NEEDS = True

    def _answer(self, task_vars):
        return self._run_here() if self._runs_here(task_vars) else None

    def _runs_here(self, task_vars):
        """The task runs on the controller, with this process's Python (its libraries) and environment."""
        # A play's or role's environment, even an empty one, shows up as a list of them.
        if not self.HERE_NEEDS or not on_this_machine(self) or self._task.async_val or any(self._task.environment or []):
            return False
        interpreter = self._templar.template(task_vars.get("ansible_python_interpreter", sys.executable))
        return isinstance(interpreter, str) and (
            os.path.dirname(os.path.abspath(interpreter)) == os.path.dirname(os.path.abspath(sys.executable)))

    def _run_here(self):
        """The module's result, from its code run here; None when the module must name what is wrong."""
        try:
            validation, params = self.validate_argument_spec(
                self.MODULE_CODE.ARGUMENT_SPEC, required_if=getattr(self.MODULE_CODE, "REQUIRED_IF", None))
        except AnsibleActionFail:
            return None
        module = ModuleHere(params, self._task.check_mode, self._task.diff)
        try:
            self.MODULE_CODE.run_module(module)
        except ModuleDone as done:
            # As AnsibleModule does: no value of a no_log option (credentials) in what is returned.
            return remove_values(done.args[0], validation._no_log_values | module.no_log_values)
        raise AnsibleActionFail("%s returned no result" % self.MODULE)
