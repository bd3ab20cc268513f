# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Write how the run ended (outcome.json) for a pipeline to branch on, whether it ended well or not."""

from __future__ import annotations

DOCUMENTATION = r"""
name: outcome
type: aggregate
author: tfdist maintainers (@tfdist)
version_added: 0.5.0
short_description: Writes how the run ended (success, bad_input, cloud_refused, training_failed, ...) as JSON
description:
  - ansible-playbook exits with 2 for any failed task, and nothing public lets a playbook or a plugin choose its exit
    code. This callback writes what a pipeline can branch on instead, at the end of every run, failed or not, to
    O(path)
    (schema C(docs/schemas/outcome.schema.json)) - C(schema_version), C(outcome), C(refusal), C(message), C(playbook).
  - C(outcome) is V(success); V(bad_input) (a setting refused before anything was created); V(cloud_refused) (the
    cloud refused a call, C(refusal) says why - V(credentials), V(permission), V(quota), V(capacity),
    V(spot_capacity), V(size_unavailable), V(unknown)); V(training_failed) (the job failed); V(limit_reached) (the
    job was stopped at its deadline or budget, its checkpoint kept); V(leak) (the audit found orphans); or V(error)
    (any other failure, Ansible's own included). The latest class of failure of a failed run names it, with the
    message of its first failure.
  - A run that did not fail is V(success) unless a play named another outcome with the fact C(tfdist_outcome) (the
    audit's V(leak)); a failed run with no classified failure is the outcome a play named before it (the provision
    role's C(provision_outcome), V(leak) when destroy leaves something of the cluster), else V(error).
  - From its first play to its end the file says V(error) (the run has not ended), so a run killed on the way leaves
    no earlier success behind. A run that stops before its first play (a playbook that does not parse) writes none.
  - Enabled by the tfdist.cluster repository's C(ansible.cfg); in your own, add it to C(callbacks_enabled).
requirements:
  - enable in the configuration (C(callbacks_enabled))
options:
  path:
    description:
      - The file written at the end of the run (replaced whole; its folder made where missing). A relative path is
        taken from the folder ansible-playbook runs in, as the artifacts folder is.
      - Give each run of a pipeline its own file when runs may overlap.
    type: path
    default: artifacts/outcome.json
    env:
      - name: TFDIST_OUTCOME_FILE
    ini:
      - key: path
        section: callback_outcome
"""

EXAMPLES = r"""
# ansible.cfg
# [defaults]
# callbacks_enabled = tfdist.cluster.outcome
#
# In a pipeline:
# TFDIST_OUTCOME_FILE=$PWD/run.json ansible-playbook tfdist.cluster.deploy -e cloud=aws || true
# jq -r .outcome run.json   # success, bad_input, cloud_refused, training_failed, limit_reached, leak or error
"""

import os

from ansible.plugins.callback import CallbackBase

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._json_files import write_json
from ansible_collections.tfdist.cluster.plugins.plugin_utils._outcome import OUTCOME_FACTS, Tally, record


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "tfdist.cluster.outcome"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, display=None):
        super().__init__(display)
        self._tally = Tally()
        self._playbook = ""

    def v2_playbook_on_start(self, playbook):
        self._playbook = os.path.basename(getattr(playbook, "_file_name", "") or "")
        # Until the run ends, the file says so: a run killed on the way leaves no earlier run's success behind.
        self._write(record("error", message="the run has not ended (or was killed)", playbook=self._playbook))

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if not ignore_errors:
            self._tally.failed(result._task.action, result._result)

    # A looped task's refusal is in its item's result (the audit's calls, one per region).
    def v2_runner_item_on_failed(self, result):
        if not result._task.ignore_errors:
            self._tally.failed(result._task.action, result._result)

    def v2_runner_on_unreachable(self, result):
        self._tally.failed(result._task.action, result._result)

    def v2_runner_on_ok(self, result):
        facts = result._result.get("ansible_facts") or {}
        for name in OUTCOME_FACTS:
            if facts.get(name):
                self._tally.declare(facts[name])

    def v2_playbook_on_stats(self, stats):
        run_failed = any(stats.failures.values()) or any(stats.dark.values())
        self._write(self._tally.result(run_failed, self._playbook))

    def _write(self, outcome):
        write_json(os.path.abspath(os.path.expanduser(self.get_option("path"))), outcome, indent=1)
