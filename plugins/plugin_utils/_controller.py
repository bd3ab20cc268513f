# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Actions that give their module's result for less than a module run, with the module's own code, or run the module.

A module run builds a payload, sends it and starts a Python that imports it: about half a second on the controller
(Ansible's module code and libcloud), about 0.15 s of a node's CPU. Two ways to its result cost less, each used by
every action that can:

- the module's code in the controller's process, where the task runs on the controller with its Python and
  environment (InControllerAction, with InProcessModule for what the code uses of AnsibleModule): the libcloud_*
  modules, whose work is a cloud's API;
- the module's work done by the node's python3 from the node's copy of the package tfdist, one raw command
  (run_on_node; module_utils/tfdist/_node_run.py holds the functions it runs, which are the modules' own), or in this
  process where the node is this machine and the run only reads it: idle_guard, training_files, training_task.

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import json
import os
import sys

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.module_utils.common.parameters import remove_values
from ansible.plugins.action import ActionBase

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _node_run
from ansible_collections.tfdist.cluster.plugins.module_utils._package import CHECKSUMS, package_files, package_zip


def on_this_machine(action):
    """The action's host is this machine, reached as this process's user (connection local, no become): its files
    and processes are this process's to read, with no command to run."""
    return action._connection.transport == "local" and not action._play_context.become


def run_on_node(action, run, params, lib=_node_run.GUARD_LIB, this_version=True):
    """The module's result from the node run `run` (a key of _node_run.RUNS) with the module's params, one raw
    command: the package from the node's copy in lib (this version's only, with this_version), or sent as a zip when
    lib is None. A READ_ONLY run on this machine runs in this process. None: the module's turn."""
    if run in _node_run.READ_ONLY and on_this_machine(action):
        return _node_run.run_here(run, params, package_files)
    checksums = package_files()[CHECKSUMS].decode() if lib and this_version else None
    stdin = _node_run.request(run, params, lib, checksums) + (b"" if lib else package_zip())
    try:
        done = action._low_level_execute_command(_node_run.COMMAND, in_data=stdin)
        if done.get("rc") != 0:
            return None
        return json.loads(done["stdout"].strip().splitlines()[-1])
    except (AnsibleError, ValueError, IndexError, KeyError):
        return None


class ModuleAction(ActionBase):
    """Runs MODULE, the module of the same name, unless _result_for_less gives its result first."""

    TRANSFERS_FILES = False
    MODULE = None

    def _result_for_less(self, task_vars):
        """The module's result, found for less than its run; None: the module's turn."""
        raise NotImplementedError

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        answer = self._result_for_less(task_vars or {})
        if answer is None:
            answer = self._execute_module(module_name=self.MODULE, module_args=self._task.args, task_vars=task_vars)
        result.update(answer)
        return result


class ModuleExit(BaseException):
    """exit_json or fail_json: like the SystemExit of AnsibleModule, not an Exception the module's code catches."""


class InProcessModule:
    """What a module's code uses of AnsibleModule (params, check_mode, _diff, no_log_values, exit_json, fail_json), in
    this process."""

    def __init__(self, params, check_mode, diff):
        self.params, self.check_mode, self._diff = params, check_mode, diff
        self.no_log_values = set()  # values the module's code marks secret, masked in its result as AnsibleModule does

    def exit_json(self, **result):
        raise ModuleExit(result)

    def fail_json(self, msg, **result):
        raise ModuleExit(dict(result, failed=True, msg=msg))


class InControllerAction(ModuleAction):
    """Runs the module's code in the controller's own process where the task runs on the controller (connection local,
    no become) with this process's Python and no environment of its own; the module anywhere else.

    A module run on the controller starts a Python that imports Ansible's module code (and libcloud) after its
    payload is built: about half a second, more than a cloud's answer. MODULE_CODE is the module's Python module: its
    ARGUMENT_SPEC, REQUIRED_IF (if any) and run_module(module), which takes an InProcessModule. Options the module must
    name as wrong, or a library missing here (LIBRARIES_HERE false), run the module, which names them.
    """

    MODULE_CODE = None
    LIBRARIES_HERE = True

    def _result_for_less(self, task_vars):
        return self._run_module_code() if self._controller_can_run_it(task_vars) else None

    def _controller_can_run_it(self, task_vars):
        """The task runs on the controller, with this process's Python (its libraries) and environment."""
        # A play's or role's environment, even an empty one, shows up as a list of them.
        if (not self.LIBRARIES_HERE or not on_this_machine(self) or self._task.async_val
                or any(self._task.environment or [])):
            return False
        interpreter = self._templar.template(task_vars.get("ansible_python_interpreter", sys.executable))
        return isinstance(interpreter, str) and (
            os.path.dirname(os.path.abspath(interpreter)) == os.path.dirname(os.path.abspath(sys.executable)))

    def _run_module_code(self):
        """The module's result, from its code run here; None when the module must name what is wrong."""
        try:
            validation, params = self.validate_argument_spec(
                self.MODULE_CODE.ARGUMENT_SPEC, required_if=getattr(self.MODULE_CODE, "REQUIRED_IF", None))
        except AnsibleActionFail:
            return None
        module = InProcessModule(params, self._task.check_mode, self._task.diff)
        try:
            self.MODULE_CODE.run_module(module)
        except ModuleExit as done:
            # As AnsibleModule does: no value of a no_log option (credentials) in what is returned.
            return remove_values(done.args[0], validation._no_log_values | module.no_log_values)
        raise AnsibleActionFail("%s returned no result" % self.MODULE)
