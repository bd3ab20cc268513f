"""plugin_utils/_outcome: how a run ended, named from its failed tasks' results; every record checked against
docs/schemas/outcome.schema.json."""

import json
import os

import jsonschema
import pytest

from ansible_collections.tfdist.cluster.plugins.module_utils._provider import REFUSALS
from ansible_collections.tfdist.cluster.plugins.plugin_utils._outcome import OUTCOMES, Tally, failure_class, record

SCHEMA = os.path.join(os.path.dirname(__file__), *[os.pardir] * 4, "docs", "schemas", "outcome.schema.json")


def valid(outcome):
    with open(SCHEMA) as handle:
        jsonschema.validate(outcome, json.load(handle))
    return outcome


def test_the_schema_names_every_outcome_and_every_refusal():
    with open(SCHEMA) as handle:
        properties = json.load(handle)["properties"]
    assert properties["outcome"]["enum"] == list(OUTCOMES)
    assert properties["refusal"]["enum"] == list(REFUSALS) + [None]


@pytest.mark.parametrize("action, result, expected", [
    ("tfdist.cluster.libcloud_node", {"msg": "worker: AWS refused ...", "refusal": "quota"}, "cloud_refused"),
    ("tfdist.cluster.libcloud_access", {"msg": "AWS refused the key pair", "refusal": "credentials"}, "cloud_refused"),
    ("tfdist.cluster.check_command_line", {"msg": "tf_workers: must be a whole number >= 1"}, "bad_input"),
    # A role's meta/argument_specs.yml, checked by Ansible itself.
    ("ansible.builtin.validate_argument_spec", {"msg": "Validation of arguments failed", "argument_errors": ["x"]},
     "bad_input"),
    ("tfdist.cluster.training_watch", {"msg": "TF task chief-0 on localhost exited with code 1"}, "training_failed"),
    # Stopped as asked, at its deadline or budget: not a failed job.
    ("tfdist.cluster.training_watch", {"msg": "stopped: budget ...", "deadline_reached": True, "limit": "budget"},
     "limit_reached"),
    # A cloud's failure without a refusal class (a network error), a failed shell command: no class.
    ("tfdist.cluster.libcloud_node", {"msg": "connection reset"}, None),
    ("ansible.builtin.command", {"msg": "non-zero return code", "rc": 1}, None),
])
def test_a_failed_task_is_classified_by_its_result_and_action(action, result, expected):
    assert failure_class(action, result) == expected


def test_a_run_that_did_not_fail_is_a_success_even_after_a_rescued_failure():
    tally = Tally()
    tally.failed("tfdist.cluster.training_watch", {"msg": "worker-1 died"})  # rescued: the job restarted
    assert valid(tally.result(run_failed=False, playbook="deploy.yml")) == {
        "schema_version": 1, "outcome": "success", "refusal": None, "message": "", "playbook": "deploy.yml"}


def test_the_latest_class_of_failure_names_a_failed_run_with_its_first_message():
    tally = Tally()
    # A job that lost a worker (rescued: tf_restart=on_failure), whose restart the cloud refused.
    tally.failed("tfdist.cluster.training_watch", {"msg": "TF task worker-1 on w1 died"})
    tally.failed("tfdist.cluster.training_watch", {"msg": "stopped: another host failed"})
    assert tally.result(run_failed=True)["message"] == "TF task worker-1 on w1 died"
    tally.failed("tfdist.cluster.libcloud_node", {"msg": "worker: AWS refused g4dn.xlarge\n in us-east-1a: no capacity",
                                                  "refusal": "capacity"})
    # What failed because of it afterwards, outside any class, does not rename the run.
    tally.failed("ansible.builtin.fail", {"msg": "the cluster is not up"})
    assert valid(tally.result(run_failed=True)) == {
        "schema_version": 1, "outcome": "cloud_refused", "refusal": "capacity",
        "message": "worker: AWS refused g4dn.xlarge in us-east-1a: no capacity", "playbook": ""}


def test_a_failure_no_class_names_is_an_error_with_its_message():
    tally = Tally()
    tally.failed("ansible.builtin.command", {"msg": "non-zero return code"})
    tally.failed("ansible.builtin.ping", {"msg": "unreachable"})
    assert valid(tally.result(run_failed=True))["outcome"] == "error"
    assert tally.result(run_failed=True)["message"] == "non-zero return code"
    # A run that failed with nothing seen (a template error is a failed task too, so rare): still an error.
    assert valid(Tally().result(run_failed=True))["outcome"] == "error"


def test_a_play_names_the_outcome_of_a_run_that_did_not_fail():
    tally = Tally()
    tally.declare("leak")
    assert valid(tally.result(run_failed=False, playbook="audit.yml"))["outcome"] == "leak"
    with pytest.raises(ValueError, match="unknown outcome 'leaky'"):
        tally.declare("leaky")


def test_a_play_names_what_fails_next_but_not_a_classified_failure():
    tally = Tally()
    tally.declare("leak")  # destroy: something of the cluster is left
    tally.failed("ansible.builtin.fail", {"msg": "cluster c: 1 resource(s) of it are left on cloud=aws: volume vol-1."})
    assert valid(tally.result(run_failed=True))["outcome"] == "leak"
    assert tally.result(run_failed=True)["message"].startswith("cluster c: 1 resource(s)")
    tally.failed("tfdist.cluster.libcloud_node", {"msg": "AWS refused", "refusal": "credentials"})
    assert tally.result(run_failed=True)["outcome"] == "cloud_refused"


def test_an_unknown_outcome_is_refused():
    with pytest.raises(ValueError, match="unknown outcome 'ok' .one of success, bad_input"):
        record("ok")
