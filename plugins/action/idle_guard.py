# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Start the idle guard on a node with the module's own work, done by the node's python3: no module run.

On a re-run the guard usually runs with the same settings and code. The node's python3 runs the module's work
(_idle_guard.ensure_started) from the guard's own copy of the package tfdist, when it is this version's: one raw
command (plugin_utils/_controller.py, run_on_node), with no module payload to build, send and import (about 0.15 s
of the node's CPU each, compiling Ansible's module_utils.basic).

Where the node holds no such copy (a fresh node: the first contact of a deploy), the same work runs from the package
sent on the command's stdin, which it lays down as the guard's copy: a second raw command instead of a module run.
Anything else (check mode, state=absent, options the module must name, no python3, an error) runs the module.
"""

from __future__ import annotations

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._node_run import GUARD_LIB
from ansible_collections.tfdist.cluster.plugins.modules import idle_guard
from ansible_collections.tfdist.cluster.plugins.plugin_utils._controller import ModuleAction, run_on_node


def started_options(args):
    """The module's options of a started guard, checked as the module checks them; None for anything else
    (state=absent, options the module must name as wrong): the module's turn."""
    checked = ArgumentSpecValidator(idle_guard.ARGUMENT_SPEC, required_if=idle_guard.REQUIRED_IF).validate(dict(args))
    p = checked.validated_parameters
    if checked.error_messages or p["state"] != "started" or idle_guard.started_error(p):
        return None
    # tasks_dir as given: the module's path type would expand ~ and $VARS here, on the controller, where the node
    # expands them (_idle_guard.node_options).
    if not isinstance(args["tasks_dir"], str):
        return None
    return {"idle_minutes": p["idle_minutes"], "tasks_dir": args["tasks_dir"], "poweroff_command": p["poweroff_command"],
            "quiet_seconds": p["quiet_seconds"]}


# What the module's result holds, whichever copy of the package the node ran it from.
RESULT_KEYS = frozenset(("changed", "started", "running", "pid", "dir", "settings", "service"))


class ActionModule(ModuleAction):

    MODULE = "tfdist.cluster.idle_guard"

    def _result_for_less(self, task_vars):
        if self._task.check_mode:
            return None
        options = started_options(self._task.args)
        if options is None:
            return None
        # The guard's copy of this version's package first (a re-run); the package sent with the command otherwise.
        for lib in (GUARD_LIB, None):
            result = run_on_node(self, "idle_guard", options, lib=lib)
            if isinstance(result, dict) and RESULT_KEYS <= set(result):
                return result
        return None
