from ansible_collections.tfdist.cluster.plugins.action.training_watch import (
    describe_failure, died, earliest_limit, stalls, this_run, unanswered)
from ansible_collections.tfdist.cluster.plugins.module_utils._liveness import Frozen, Progress


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


def test_a_task_silent_for_longer_than_a_blip_while_steps_remain_is_lost():
    status = {"state": "running", "step": 120, "target_steps": 300}
    assert unanswered([DOWN], [], status, grace_over=False) == [DOWN]


def test_a_task_that_left_after_the_last_step_is_not_lost():
    status = {"state": "running", "step": 300, "target_steps": 300}
    assert unanswered([DOWN], [], status, grace_over=True) == []
    assert unanswered([DOWN], [], {"state": "done", "step": 290, "target_steps": 300}, grace_over=True) == []


def test_without_a_status_a_task_that_answered_then_left_is_its_own_hosts_to_judge():
    # A classic flags script reports no steps: worker 1 may end cleanly before worker 0 has written its result.
    assert unanswered([DOWN], [], {}, grace_over=True) == []


def test_a_task_that_never_answered_is_lost_once_the_grace_is_over():
    assert unanswered([], [DOWN], {}, grace_over=False) == []
    assert unanswered([], [DOWN], {}, grace_over=True) == [DOWN]
    assert unanswered([], [DOWN], {"state": "starting"}, grace_over=True) == [DOWN]


def test_a_failed_task_is_named_with_its_exception_and_where_it_was_raised_before_its_last_lines():
    task = {"name": "chief-0", "returncode": 1, "reason": "exited", "log_tail": "[[1 2]\n [3 4]]",
            "error": {"error": "ValueError: bad logits: [[1 2]", "where": "train.py:9 in main",
                      "line": "raise ValueError(x)"}}
    assert describe_failure(task, "node-1") == (
        "TF task chief-0 on node-1 exited with code 1: ValueError: bad logits: [[1 2] (raised at train.py:9 in main: "
        "raise ValueError(x)). Last lines of its log:\n[[1 2]\n [3 4]]")
    # What the restart policy compares between two launches.
    assert died(task, "node-1") == {
        "task": "chief-0", "host": "node-1", "node_gone": False, "returncode": 1,
        "error": "ValueError: bad logits: [[1 2]",
        "why": "exited with code 1: ValueError: bad logits: [[1 2] (raised at train.py:9 in main: raise ValueError(x))"}


def test_a_task_killed_by_a_signal_says_so():
    task = {"name": "worker-1", "returncode": -9, "reason": "killed by signal 9", "log_tail": "", "error": {}}
    assert died(task, "h")["why"] == "exited with code -9 (killed by signal 9)"


def test_a_leader_that_said_done_is_not_stalled_while_it_exits():
    # The last step, then "done" with its results written: a ParameterServerStrategy coordinator's teardown can take
    # longer than the stall time on a loaded machine. Its exit is awaited like a server's, not judged by its step.
    leader = {"name": "chief-0", "running": True, "process": "running"}
    progress = Progress(stall_seconds=12, now=1000.0)
    status = {"state": "done", "step": 10000, "target_steps": 10000, "steps_per_sec": 190.0}
    frozen = Frozen(stall_seconds=12)

    last_step = dict(status, state="running")
    assert stalls({"chief-0": leader}, leader, last_step, True, progress, frozen, 1000.0, "h") == []

    assert stalls({"chief-0": leader}, leader, status, True, progress, frozen, 1030.0, "h", said_done=True) == []
    # Without the word "done", the same silence is a stall.
    [(task, why)] = stalls({"chief-0": leader}, leader, last_step, True, progress, frozen, 1030.0, "h")
    assert task["name"] == "chief-0" and why.startswith("stalled at step 10000/10000: no step for 30s")


def test_a_budget_is_another_deadline_and_the_earlier_stops_the_job():
    # $5.00 at $2.50/h lasts 2h: before a 3h deadline, after a 1h one.
    assert earliest_limit(3 * 3600.0, 5.0, 2.5) == (7200.0, "budget")
    assert earliest_limit(3600.0, 5.0, 2.5) == (3600.0, "deadline")
    assert earliest_limit(None, 5.0, 2.5) == (7200.0, "budget")
    # No price known (a size without one, or cloud=local): the budget cannot stop the job.
    assert earliest_limit(None, 5.0, 0.0) == (None, "deadline")
    assert earliest_limit(3600.0, 0.0, 2.5) == (3600.0, "deadline")
