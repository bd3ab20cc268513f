# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Start the idle guard on a node, after a quick look whether it already runs as asked.

On a re-run the guard usually runs with the same settings and code. The node's own copy of the guard
(module_utils/_idle_guard.py, laid down with the package tfdist) says so in one raw command (_look, the "guard"
look), with no module payload to build, send and import (about a third of the module's cost on each
host of every run). Anything else (no guard yet, other settings, other code, no python3) runs the module.
"""

from __future__ import annotations

import json

from ansible_collections.tfdist.cluster.plugins.module_utils import _look
from ansible_collections.tfdist.cluster.plugins.module_utils._package import CHECKSUMS, package_files
from ansible_collections.tfdist.cluster.plugins.plugin_utils._controller import AnswerFirst


class ActionModule(AnswerFirst):

    MODULE = "tfdist.cluster.idle_guard"

    def _answer(self, task_vars):
        args = dict(self._task.args)
        found = self._quick_look(args) if self._may_look(args) else None
        if not found:
            return None
        return dict(changed=False, started=False, running=True, pid=found["pid"], dir=found["dir"],
                    settings=found["settings"])

    def _may_look(self, args):
        """Only a started guard with well-formed options: the module names what is wrong with the others."""
        if self._task.check_mode or args.get("state", "started") != "started":
            return False
        try:
            return float(args.get("idle_minutes")) > 0 and isinstance(args.get("tasks_dir"), str)
        except (TypeError, ValueError):
            return False

    def _quick_look(self, args):
        options = {"idle_minutes": float(args["idle_minutes"]), "tasks_dir": args["tasks_dir"],
                   "poweroff_command": args.get("poweroff_command")}
        # With the guard's copy of the package: what the guard runs as, or the module's turn.
        command = _look.in_guard_folder("guard", json.dumps(options), package_files()[CHECKSUMS].decode())
        looked = self._low_level_execute_command(command)
        if looked.get("rc") != 0:
            return None
        try:
            found = json.loads(looked["stdout"].strip().splitlines()[-1])
            return found if isinstance(found.get("pid"), int) and {"dir", "settings"} <= set(found) else None
        except (ValueError, IndexError, AttributeError):
            return None
