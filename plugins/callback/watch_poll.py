# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""While a training watch runs, the controller checks on its workers ten times a second, not a thousand."""

from __future__ import annotations

DOCUMENTATION = r"""
name: watch_poll
type: aggregate
author: tfdist maintainers (@tfdist)
version_added: 0.5.0
short_description: The controller waits quietly while training is watched
description:
  - Ansible's controller checks for its workers' results every C(internal_poll_interval) seconds (1 ms by default)
    until every host has finished the task. A short task needs that, but the task that watches training
    (M(tfdist.cluster.training_watch)) runs for as long as the job does, and a thousand wake-ups a second take
    about 3 % of the training's speed where the TF processes share the controller's cores (C(cloud=local)).
  - While that task runs, this callback makes the controller check every O(interval) seconds; from the next task on,
    it checks as often as before. Progress lines are not delayed (Ansible shows them as they come), and the end of
    the watch is seen at most O(interval) seconds later.
  - Enabled by the tfdist.cluster repository's C(ansible.cfg); in your own, add it to C(callbacks_enabled).
requirements:
  - enable in the configuration (C(callbacks_enabled))
options:
  interval:
    description: Seconds between the controller's checks for results while a training watch runs.
    type: float
    default: 0.1
    env:
      - name: TFDIST_WATCH_POLL_INTERVAL
    ini:
      - key: interval
        section: callback_watch_poll
"""

EXAMPLES = r"""
# ansible.cfg
# [defaults]
# callbacks_enabled = tfdist.cluster.watch_poll
"""

from ansible import constants as C
from ansible.plugins.callback import CallbackBase

# The tasks that wait as long as training runs.
LONG_WAITS = frozenset(("tfdist.cluster.training_watch",))


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "tfdist.cluster.watch_poll"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Ansible's strategies read this setting at every check, so the next check follows it.
        self._usual = C.DEFAULT_INTERNAL_POLL_INTERVAL

    def _poll_for(self, task):
        waits = LONG_WAITS & {task.action, getattr(task, "resolved_action", None)}
        C.DEFAULT_INTERNAL_POLL_INTERVAL = max(self._usual, self.get_option("interval")) if waits else self._usual

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._poll_for(task)

    def v2_playbook_on_handler_task_start(self, task):
        self._poll_for(task)

    def v2_playbook_on_stats(self, stats):
        C.DEFAULT_INTERNAL_POLL_INTERVAL = self._usual
