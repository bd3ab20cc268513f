# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Start the idle guard on a node, after a quick look whether it already runs as asked.

On a re-run the guard usually runs with the same settings and code. The node's own copy of the guard
(module_utils/_idle_guard.py, laid down with the package tfdist) says so in one raw command (_look, the "guard"
look), with no module payload to build, send and import (about a third of the module's cost on each
host of every run).

Where it does not (a fresh node: the first contact of a deploy), the node's python3 does the module's work
(_idle_guard.ensure_started) from the package sent on the command's stdin, which it lays down as the guard's copy:
a second raw command instead of a module run (about 0.15 s of the node's CPU each, compiling Ansible's
module_utils.basic). Anything else (check mode, state=absent, options the module must name, no python3, an error)
runs the module.
"""

from __future__ import annotations

import json

from ansible.errors import AnsibleError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.tfdist.cluster.plugins.module_utils import _look
from ansible_collections.tfdist.cluster.plugins.module_utils._package import CHECKSUMS, package_files, package_zip
from ansible_collections.tfdist.cluster.plugins.modules import idle_guard
from ansible_collections.tfdist.cluster.plugins.plugin_utils._controller import AnswerFirst


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


class ActionModule(AnswerFirst):

    MODULE = "tfdist.cluster.idle_guard"

    def _answer(self, task_vars):
        if self._task.check_mode:
            return None
        options = started_options(self._task.args)
        if options is None:
            return None
        found = self._quick_look(options)
        if found:
            return dict(changed=False, started=False, running=True, pid=found["pid"], dir=found["dir"],
                        settings=found["settings"], service=found["service"])
        return self._start_on_node(options)

    def _quick_look(self, options):
        # With the guard's copy of the package: what the guard runs as, or the module's turn.
        command = _look.in_guard_folder("guard", json.dumps(options), package_files()[CHECKSUMS].decode())
        looked = self._low_level_execute_command(command)
        if looked.get("rc") != 0:
            return None
        try:
            found = json.loads(looked["stdout"].strip().splitlines()[-1])
            return found if isinstance(found.get("pid"), int) and {"dir", "settings", "service"} <= set(found) else None
        except (ValueError, IndexError, AttributeError):
            return None

    def _start_on_node(self, options):
        """The module's result from its work done by the node's python3 with the package sent on stdin; None: the
        module's turn."""
        try:
            started = self._low_level_execute_command(
                _look.with_package(), in_data=_look.package_stdin(package_zip(), "start-guard", json.dumps(options)))
            if started.get("rc") != 0:
                return None
            result = json.loads(started["stdout"].strip().splitlines()[-1])
        except (AnsibleError, ValueError, IndexError, KeyError):
            return None
        return result if isinstance(result, dict) and {"changed", "pid", "dir"} <= set(result) else None
