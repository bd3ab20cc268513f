# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Whether an action's host is the controller itself: then the action may do a module's work in its own process.

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations


def on_this_machine(action):
    """The action's host is this machine, reached as this process's user (connection local, no become): its files
    and processes are this process's to read, with no command to run."""
    return action._connection.transport == "local" and not action._play_context.become
