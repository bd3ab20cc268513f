# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Filters over deploy.yml's restart policy (plugins/module_utils/_restart.py): whether and how to restart a job.

playbooks/tasks/restart.yml asks these instead of deciding in Jinja. Each filter is documented in
plugins/filter/<name>.yml.
"""

from __future__ import annotations

import time

from ansible_collections.tfdist.cluster.plugins.module_utils import _restart


def tf_restart_decision(watch_results, restarts=None, leader_result=None, max_restarts=3, at=None):
    return _restart.decide(watch_results, restarts, leader_result, max_restarts, time.time() if at is None else at)


def tf_restart_resumed(restart, replaced=None, resumed_from=None, finished_already=False):
    return _restart.resumed(restart, replaced, resumed_from, finished_already)


def tf_restart_line(restart):
    return _restart.restart_line(restart)


class FilterModule:
    def filters(self):
        return {
            'tf_restart_decision': tf_restart_decision,
            'tf_restart_resumed': tf_restart_resumed,
            'tf_restart_line': tf_restart_line,
        }
