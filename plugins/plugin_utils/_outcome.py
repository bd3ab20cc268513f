# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""How a run ended, in words a pipeline can branch on: the one home of the outcome names.

ansible-playbook's exit code cannot say it: it is 2 for any failed task, and nothing public lets a playbook or a
plugin choose it (a callback's exceptions are warnings). So the run's result is a small JSON file, written by the
outcome callback (plugins/callback/outcome.py) whether the run ends well or not, with the same `outcome` field as
summary.json and audit.json (schemas in docs/schemas/).

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

# Raised when a key of outcome.json changes meaning or goes away (new keys may appear).
SCHEMA_VERSION = 1

# Each outcome and what it means; a failure no class names is `error` (Ansible's own, an unreachable node, ...).
OUTCOMES = {
    "success": "the run did what it was asked",
    "bad_input": "a setting or argument was refused before anything was created; the message names the field",
    "cloud_refused": "the cloud refused a call (see `refusal`: credentials, permission, quota, capacity, ...)",
    "training_failed": "the job failed (a task of it died or stalled)",
    "limit_reached": "the job was stopped at its deadline or its budget, keeping its latest checkpoint",
    "leak": "the audit found resources of this controller with no cluster here (orphans)",
    "error": "any other failure: Ansible's own error, an unreachable node, a task outside the classes above",
}

# The actions whose failure is the user's input, and the job's watch, whose failure is the job's.
BAD_INPUT_ACTIONS = frozenset((
    "tfdist.cluster.check_command_line",
    "ansible.builtin.validate_argument_spec",
))
TRAINING_ACTIONS = frozenset(("tfdist.cluster.training_watch",))

# The facts that name a run's outcome: of a run that did not fail (the audit's leak), or of what fails next (destroy's
# check that nothing of the cluster is left). A playbook sets tfdist_outcome, the provision role provision_outcome
# (a role's variables carry its prefix).
OUTCOME_FACTS = ("tfdist_outcome", "provision_outcome")


def failure_class(action, result):
    """The outcome a failed task's result stands for, or None when no class names it.

    action: the task's action as written (short names such as `fail` are not matched; the collection's tasks are
    fully qualified). result: the task's result dict (a refusal class, argument_errors).
    """
    if result.get("refusal"):
        return "cloud_refused"
    # Ansible's own check of a role's meta/argument_specs.yml runs as validate_argument_spec, with argument_errors.
    if action in BAD_INPUT_ACTIONS or result.get("argument_errors"):
        return "bad_input"
    if action in TRAINING_ACTIONS:
        # The watch stopped a job that was doing well, as asked (tf_deadline, tf_budget): a later deploy resumes it.
        return "limit_reached" if result.get("deadline_reached") else "training_failed"
    return None


def record(outcome, refusal=None, message="", playbook=""):
    """The outcome as written to outcome.json (and, for the keys they share, summary.json and audit.json)."""
    if outcome not in OUTCOMES:
        raise ValueError("unknown outcome %r (one of %s)" % (outcome, ", ".join(OUTCOMES)))
    return {
        "schema_version": SCHEMA_VERSION,
        "outcome": outcome,
        "refusal": refusal,
        "message": " ".join(str(message or "").split()),
        "playbook": playbook,
    }


class Tally:
    """Follows a run's failures and says how it ended.

    The latest class of failure names a failed run, with the message of its first failure: a job whose restart the
    cloud refused stopped on the refusal, not on the loss before it; a job that failed on every host stopped on the
    task that died first, not on the hosts that stopped with it. A failure a block rescued (a job restarted after a
    loss) counts only if the run failed.
    """

    def __init__(self):
        self.first = None  # (outcome, refusal, message) of the first failure of the latest class
        self.first_error = None  # the message of the first failure no class names
        self.declared = None  # an outcome a play named with the tfdist_outcome fact (the audit's or destroy's leak)

    def failed(self, action, result):
        outcome = failure_class(action, result)
        message = result.get("msg") or ""
        if outcome and (self.first is None or self.first[0] != outcome):
            self.first = (outcome, result.get("refusal") or None, message)
        elif outcome is None and self.first_error is None:
            self.first_error = message

    def declare(self, outcome):
        if outcome not in OUTCOMES:
            raise ValueError("unknown outcome %r (one of %s)" % (outcome, ", ".join(OUTCOMES)))
        self.declared = outcome

    def result(self, run_failed, playbook=""):
        """The record of the run: run_failed says whether any host failed or was unreachable at the end."""
        if not run_failed:
            return record(self.declared or "success", playbook=playbook)
        if self.first is not None:
            outcome, refusal, message = self.first
            return record(outcome, refusal, message, playbook)
        # A play may name what fails next (destroy's check that nothing of the cluster is left: a leak).
        return record(self.declared or "error", message=self.first_error or "", playbook=playbook)
