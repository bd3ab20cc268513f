# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Print a TF task's log, and with follow, what it writes until it ends (as `tail -f` would, ending with the task).

Runs on the controller for the task's host and reads the log there with the read-only tfdist.cluster.training_log
module: once for the last lines, then, following, again and again from where the last read ended, each call waiting
on the host (up to poll_interval seconds) for the log to grow. A module alone could not print while it runs; an
action plugin can print between calls.
"""

from __future__ import annotations

import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

MODULE = "tfdist.cluster.training_log"
READ_EVERY = 1.0
ARGUMENT_SPEC = {
    "dir": {"type": "str", "required": True},
    "lines": {"type": "int", "default": 50},
    "follow": {"type": "bool", "default": False},
    # Seconds each call waits on the host for new lines: how long a follower may lag behind the log at most.
    "poll_interval": {"type": "float", "default": 5.0},
}


def print_log(read, show, task_dir, lines, follow, poll_interval):
    """Show the last `lines` lines of the log in task_dir, and with follow what it gets until the task has ended.

    read(**args): the training_log module's answer to args; show(text): print lines. Returns the first read's answer,
    with the offset and running state of the last.
    """
    first = read(dir=task_dir, lines=lines)
    if not first["exists"]:
        raise AnsibleActionFail("%s has no log: the task has never run on this host" % task_dir)
    show(first["text"])
    last = first
    # Until the task has ended and its log is read to its end (a task found ended has written all of it).
    while follow and (last["running"] or last["text"]):
        began = time.monotonic()
        last = read(dir=task_dir, offset=last["offset"], wait=poll_interval)
        show(last["text"])
        # A busy log is read in batches, one call a second at most: each call starts a Python on the host.
        time.sleep(max(0.0, READ_EVERY - (time.monotonic() - began)))
    return dict(first, offset=last["offset"], running=last["running"])


def show(text):
    if text:
        display.display(text.rstrip("\n"))


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(ARGUMENT_SPEC)[1]

        def read(**module_args):
            answer = self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars)
            if answer.get("failed") or answer.get("unreachable"):
                raise AnsibleActionFail("could not read the log in %s: %s" % (args["dir"], answer.get("msg")),
                                        result=answer)
            return answer

        read_at_last = print_log(read, show, args["dir"], args["lines"], args["follow"], args["poll_interval"])
        result.update(changed=False, text=read_at_last["text"], offset=read_at_last["offset"],
                      running=read_at_last["running"])
        return result
