# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Actions that answer for their module where they can do it for less, and run the module otherwise.

An answer is a look on the host with one raw command, or the module's own code in the controller's process where
the host is the controller itself (on_this_machine).

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

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
