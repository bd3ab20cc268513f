# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""A bench's callback (bench/docker_scaling.py enables it for its profiled deploys): each task's wall time, the
machine's CPU seconds and the containers' (the docker nodes') from its start to the next task's, written as JSON to
the file named by TFDIST_TASK_CPU_OUT when the playbook ends."""

from __future__ import annotations

import json
import os
import sys

from ansible.plugins.callback import CallbackBase

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from cpu_seconds import sample  # noqa: E402  pylint: disable=wrong-import-position

OUT = "TFDIST_TASK_CPU_OUT"


def _sample():
    moment, machine, containers = sample()
    return moment, machine, containers or 0.0


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "task_cpu"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._tasks = []
        self._current = None

    def _close(self):
        if self._current is not None:
            name, (started, machine, containers) = self._current
            ended, machine_now, containers_now = _sample()
            self._tasks.append({"task": name, "started": started, "wall_s": ended - started,
                                "machine_cpu_s": machine_now - machine, "nodes_cpu_s": containers_now - containers})
            self._current = None

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._close()
        self._current = (task.get_name(), _sample())

    def v2_playbook_on_handler_task_start(self, task):
        self.v2_playbook_on_task_start(task, False)

    def v2_playbook_on_stats(self, stats):
        self._close()
        if os.environ.get(OUT):
            with open(os.environ[OUT], "w") as handle:
                json.dump(self._tasks, handle)
