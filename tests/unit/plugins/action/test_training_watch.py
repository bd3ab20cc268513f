from ansible_collections.tfdist.cluster.plugins.action.training_watch import this_run, unanswered


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


UP, DOWN = "10.0.0.2:2222", "10.0.0.3:2222"


def test_a_task_that_stopped_answering_while_steps_remain_is_lost():
    status = {"state": "running", "step": 120, "target_steps": 300}
    assert unanswered({DOWN}, {UP, DOWN}, status, grace_over=False) == [DOWN]


def test_a_task_that_left_after_the_last_step_is_not_lost():
    status = {"state": "running", "step": 300, "target_steps": 300}
    assert unanswered({DOWN}, {UP, DOWN}, status, grace_over=True) == []
    assert unanswered({DOWN}, {UP, DOWN}, {"state": "done", "step": 290, "target_steps": 300}, grace_over=True) == []


def test_without_a_status_a_task_that_answered_then_left_is_its_own_hosts_to_judge():
    # A classic flags script reports no steps: worker 1 may end cleanly before worker 0 has written its result.
    assert unanswered({DOWN}, {UP, DOWN}, {}, grace_over=True) == []


def test_a_task_that_never_answered_is_lost_once_the_grace_is_over():
    assert unanswered({DOWN}, {UP}, {}, grace_over=False) == []
    assert unanswered({DOWN}, {UP}, {}, grace_over=True) == [DOWN]
    assert unanswered({DOWN}, {UP}, {"state": "starting"}, grace_over=True) == [DOWN]
