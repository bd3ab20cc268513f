"""tfdist.cluster.tf_job_decision as the training role asks it: launch, leave finished, collect or keep the results."""

import json

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

LEADER = "mnist/chief-0"


def render(expression, **variables):
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(expression))


def check_result(running=False, changed=False, started_at=1764430000.25):
    return {"changed": changed, "tasks": [{"name": LEADER, "status": {"running": running, "started_at": started_at}}]}


@pytest.fixture
def decide(tmp_path):
    def decision(check, leader_new=False, launch=None):
        return render(
            "{{ check | tfdist.cluster.tf_job_decision(leader_new=leader_new, launch=launch, leader_task=leader,"
            " artifacts_dir=artifacts) }}",
            check=check, leader_new=leader_new, launch=launch, leader=LEADER, artifacts=str(tmp_path))
    return decision


def hold_results(folder, leader_run):
    (folder / "logs").mkdir(exist_ok=True)
    (folder / "summary.json").write_text(json.dumps({"steps": 300, "leader_run": leader_run}))


def test_a_new_leader_is_launched_with_nothing_checked(decide):
    skipped = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}
    for check in (skipped, None):
        assert decide(check, leader_new=True) == {
            "launch": True, "finished": False, "results_held": False, "leader_run": ""}


def test_a_job_the_check_would_start_is_launched_and_its_run_is_the_launched_one(decide):
    launch = {"changed": True, "tasks": [{"name": "mnist/ps-0", "status": {"started_at": 1.5}},
                                         {"name": LEADER, "status": {"started_at": 1764430999.5}}]}
    job = decide(check_result(changed=True), launch=launch)
    assert job["launch"] and not job["finished"] and not job["results_held"]
    assert job["leader_run"] == "1764430999.5"


def test_a_running_job_is_not_finished(decide):
    job = decide(check_result(running=True))
    assert not job["launch"] and not job["finished"] and not job["results_held"]


def test_a_finished_job_is_left_and_collected_until_the_controller_holds_its_run(decide, tmp_path):
    job = decide(check_result())
    assert job == {"launch": False, "finished": True, "results_held": False, "leader_run": "1764430000.25"}

    hold_results(tmp_path, "1764420000.0")  # another run's results
    assert not decide(check_result())["results_held"]

    hold_results(tmp_path, "1764430000.25")
    assert decide(check_result())["results_held"]

    (tmp_path / "summary.json").write_text("{half")  # a summary cut short holds nothing
    assert not decide(check_result())["results_held"]


def test_a_summary_without_its_logs_holds_nothing(decide, tmp_path):
    hold_results(tmp_path, "1764430000.25")
    (tmp_path / "logs").rmdir()
    assert not decide(check_result())["results_held"]


def test_a_host_whose_launch_started_no_leader_names_no_run(decide):
    launch = {"changed": True, "tasks": [{"name": "mnist/worker-1", "status": {"started_at": 2.0}}]}
    assert decide(check_result(changed=True), launch=launch)["leader_run"] == ""
