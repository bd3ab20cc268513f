# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Filters over a training job as a deploy finds it: launch it, watch it, collect its results, or leave it.

The training role's variables (roles/training/vars/main.yml) ask these instead of deciding in Jinja; the role's
tasks keep the order of things. Each filter is documented in plugins/filter/<name>.yml.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._json_files import read_json


def _ran(result):
    """Whether a registered result is that of a task that ran (neither missing nor skipped)."""
    return isinstance(result, Mapping) and bool(result) and not result.get('skipped', False)


def _leader_run(check, launch, leader_task):
    """The leader's run (its supervisor's start time, as text) as this host's launch started it, else as the check
    found it; '' where neither tells (a host whose launch started no leader)."""
    if _ran(launch):
        status = next((task['status'] for task in launch['tasks'] if task['name'] == leader_task), None)
    else:
        status = check['tasks'][0]['status'] if _ran(check) else None
    return '' if status is None else str(status.get('started_at'))


def held_run(artifacts_dir):
    """The leader's run whose results the controller holds (summary.json's leader_run), '' when it holds none."""
    if not os.path.isdir(os.path.join(artifacts_dir, 'logs')):
        return ''
    summary = read_json(os.path.join(artifacts_dir, 'summary.json'))
    return summary.get('leader_run', '') if isinstance(summary, Mapping) else ''


def tf_job_decision(check, leader_new=False, launch=None, leader_task='', artifacts_dir=''):
    """What this deploy does with the job, from the leader's check (training_task in check mode) and its launch."""
    check = check if isinstance(check, Mapping) else {}
    changed = bool(check.get('changed', False))
    # Found finished with these settings: the check would change nothing and the leader's task is not running.
    finished = _ran(check) and not changed and not check['tasks'][0]['status']['running']
    # str(): the run as summary.json records it (the start time's text).
    found_run = str(check['tasks'][0]['status'].get('started_at')) if finished else ''
    return {
        'launch': bool(leader_new) or changed,
        'finished': finished,
        'results_held': finished and held_run(artifacts_dir) == found_run,
        'leader_run': _leader_run(check, launch, leader_task),
    }


class FilterModule:
    def filters(self):
        return {
            'tf_job_decision': tf_job_decision,
        }
