# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Start or stop supervised tasks on a node; in check mode, ask the node's own copy of the package first.

A deploy asks in check mode whether its job must run (the leader's check in roles/training). The answer is the
module's rule (_task_plan.plan), which the node's copy of the package tfdist also holds: the idle guard's, checked
file by file against this version's checksums. One raw command runs it there (plugin_utils/_controller.py,
run_on_node: the "task_plans" run), with no module payload to build, send and import; on this machine (connection
local, no become: cloud=local) the action runs the rule itself. Anything else (no such copy, another version, a path
the node would expand, options the module must name as wrong, a call that changes something) runs the module.
"""

from __future__ import annotations

import json

from ansible.errors import AnsibleActionFail

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _task_plan
from ansible_collections.tfdist.cluster.plugins.plugin_utils._controller import ModuleAction, run_on_node


class ActionModule(ModuleAction):

    MODULE = "tfdist.cluster.training_task"

    def _result_for_less(self, task_vars):
        return self._check_mode_result() if self._task.check_mode else None

    def _check_mode_result(self):
        """The module's check-mode result for state=started, from the node's copy; None: the module's turn."""
        args = self._task.args
        if args.get("state", "started") != "started":
            return None
        entries = [args] + [task for task in args.get("tasks") or [] if isinstance(task, dict)]
        # A path with ~ or $VARS means the node's home or environment: the module expands it there.
        if any(c in json.dumps([entry.get(option) for entry in entries for option in _task_plan.PATH_OPTIONS])
               for c in "~$"):
            return None
        try:
            validated = self.validate_argument_spec(_task_plan.ARGUMENT_SPEC, **_task_plan.ARGUMENT_RULES)[1]
            params = _task_plan.task_params(validated)
        except (AnsibleActionFail, KeyError, TypeError, ValueError, AttributeError):
            return None
        if any(_task_plan.check_params(p) for p in params):
            return None
        results = run_on_node(self, "task_plans", params)
        if not isinstance(results, list) or len(results) != len(params):
            return None
        if validated["tasks"] is not None:
            return dict(changed=any(r["changed"] for r in results), tasks=results)
        result = results[0]
        del result["name"]
        return result
