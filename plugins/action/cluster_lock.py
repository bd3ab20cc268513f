# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Hold a cluster's lock on the controller for the rest of the playbook (plugin_utils/_cluster_lock.py)."""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.tfdist.cluster.plugins.plugin_utils._cluster_lock import take

ARGUMENT_SPEC = {
    "path": {"type": "path", "required": True},
    "cluster": {"type": "str", "required": True},
    "wait": {"type": "int", "default": 0},
    "keep_with": {"type": "str", "default": ""},
}


def busy_message(cluster, holder, wait):
    """What a run finds when another holds the cluster: who (its pid and command) and what to do."""
    waited = "after waiting %d s" % wait if wait else "at once (lock_wait=SECONDS waits for it)"
    return ("cluster %s: another run on this controller deploys or destroys it (pid %s: %s); stopped %s. Let it end, "
            "or stop that process first" % (cluster, holder.get("pid", "?"), holder.get("command") or "command unknown",
                                            waited))


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = False  # the lock is the controller's, whatever the host of the play

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(ARGUMENT_SPEC)[1]
        if not os.path.isabs(args["path"]):
            raise AnsibleActionFail("path: must be absolute on the controller, got %s" % args["path"])
        if args["wait"] < 0:
            raise AnsibleActionFail("wait: must be 0 or more seconds, got %d" % args["wait"])
        # This task runs in a worker that Ansible forks for it from the ansible-playbook process: the lock is held for
        # that process, the worker's parent, until it ends.
        try:
            answer = take(args["path"], os.getppid(), args["wait"], args["keep_with"])
        except (OSError, RuntimeError) as error:
            raise AnsibleActionFail("path: cannot lock %s: %s" % (args["path"], error)) from None
        holder = answer.get("holder") or {}
        result.update(changed=False, path=args["path"], holder=holder, locked=answer["state"] != "busy")
        if answer["state"] == "busy":
            result.update(failed=True, msg=busy_message(args["cluster"], holder, args["wait"]))
        return result
