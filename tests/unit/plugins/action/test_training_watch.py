from ansible_collections.tfdist.cluster.plugins.action.training_watch import this_run


def test_status_of_the_running_task_is_this_runs():
    task = {"name": "chief-0", "started_at": 1000.0}
    assert this_run({"state": "done", "initial_step": 2980, "started_at": 1003.5}, task)


def test_status_left_by_the_last_run_is_not_this_runs():
    # The relaunched chief has not written its first status yet: status.json is the stopped run's.
    task = {"name": "chief-0", "started_at": 1000.0}
    assert not this_run({"state": "running", "initial_step": 620, "first_step_at": 950.0, "started_at": 940.0}, task)


def test_no_task_record_means_no_run_to_match():
    assert not this_run({"state": "running", "started_at": 1003.5}, None)
    assert not this_run({"state": "running", "started_at": 1003.5}, {"name": "chief-0"})
