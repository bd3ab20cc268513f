"""deploy.yml's restart policy (module_utils/_restart.py): what was lost, whether to restart, the wait, the record."""

from ansible_collections.tfdist.cluster.plugins.module_utils._restart import (
    backoff_seconds, decide, losses, restart_line, resumed)

NO_MODULE = "ModuleNotFoundError: No module named 'foo'"


def exited(task, returncode=1, error=NO_MODULE, host=None):
    """A loss as a task's own host's watch reports it."""
    return {"task": task, "host": host or "n-" + task, "why": "exited with code %s (exited)" % returncode,
            "node_gone": False, "returncode": returncode, "error": error}


def gone(task):
    return {"task": task, "host": "n-" + task, "why": "its node stopped answering", "node_gone": True,
            "returncode": None, "error": ""}


def unanswered(task):
    """A loss as the leader's host sees another host's task: its port no longer answers."""
    return {"task": task, "host": "n-" + task, "why": "stopped answering on 10.0.0.3:2222", "node_gone": False,
            "returncode": None, "error": ""}


def watch(*lost, **result):
    return dict({"failed": True, "losses": list(lost)}, **result)


def leader(step=0, progressed=False, target=3000):
    return {"failed": True, "progressed": progressed, "status": {"step": step, "target_steps": target}}


def test_losses_name_each_task_once_and_prefer_what_knows_more():
    stopped = {"failed": True, "stopped_by": "n-chief-0"}
    lost = losses([watch(unanswered("ps-0"), unanswered("worker-1")), stopped, watch(gone("ps-0")), {},
                   watch(exited("worker-1")), watch(exited("chief-0"))])
    assert [(entry["task"], entry["why"]) for entry in lost] == [
        ("chief-0", "exited with code 1 (exited)"), ("ps-0", "its node stopped answering"),
        ("worker-1", "exited with code 1 (exited)")]
    # Whichever host's result comes first.
    assert losses([watch(gone("ps-0")), watch(unanswered("ps-0"))])[0]["node_gone"] is True
    assert losses([stopped, {}, None]) == []


def test_restart_line_names_each_loss_and_the_step():
    restart = {"losses": [gone("ps-0")], "step": 812, "target_steps": 4000}
    assert restart_line(restart) == "lost ps-0 on n-ps-0 (its node stopped answering) at step 812/4000"
    finished = dict(restart, finished_already=True)
    assert restart_line(finished).endswith(
        "at step 812/4000; the job had reached its last step by then, nothing was relaunched")
    assert restart_line({"losses": []}) == "lost nothing"
    # Tasks lost the same way are named together, with their reason once.
    import_error = "exited with code 1: ModuleNotFoundError: No module named 'foo' (raised at train.py:1 in <module>)"
    same = [dict(gone(task), why=import_error, node_gone=False) for task in ("chief-0", "ps-0")] + [gone("worker-0")]
    assert restart_line({"losses": same}) == (
        f"lost chief-0 on n-chief-0, ps-0 on n-ps-0 ({import_error}), worker-0 on n-worker-0 (its node stopped answering)")


def test_a_job_that_trained_is_restarted_at_once_and_the_record_says_so():
    decision = decide([watch(exited("worker-1", -9, "")), {"failed": True, "stopped_by": "n-worker-1"}], [],
                      leader(step=200, progressed=True, target=6000), "3", 1700000000.5)

    assert decision["give_up"] == ""
    assert decision["restart"] == {
        "restart": 1, "at": 1700000000.5, "losses": [exited("worker-1", -9, "")], "step": 200, "target_steps": 6000,
        "progressed": True, "backoff_seconds": 0}
    assert decision["line"] == (
        "restart 1 of at most 3 (lost worker-1 on n-worker-1 (exited with code -9 (exited)) at step 200/6000): "
        "replacing what is gone, then resuming from the latest checkpoint")


def test_a_job_that_fails_the_same_way_before_its_first_new_step_is_not_restarted():
    first = decide([watch(exited("worker-0"))], [], leader(), 5, 1.0)
    assert first["give_up"] == "" and first["restart"]["backoff_seconds"] == 10
    assert "waiting 10 s (the job took no step since its launch), then replacing" in first["line"]
    record = resumed(first["restart"], [], 0, False)

    second = decide([watch(exited("worker-0"))], [record], leader(), 5, 2.0)

    assert second["give_up"] == ("the job fails the same way on every launch "
                                 "(worker-0: exit 1, \"%s\"); not restarting" % NO_MODULE)


def test_the_same_failure_is_one_task_failing_alike_whichever_others_were_seen_failing_too():
    # Every task runs the same script: which of them the watch saw dead depends on when it looked.
    first = decide([watch(exited("chief-0"), exited("ps-0"), exited("worker-0"), exited("worker-1"))], [], leader(),
                   5, 1.0)
    record = resumed(first["restart"], [], None, False)
    second = decide([watch(exited("chief-0"), exited("worker-0"), exited("worker-1", -9, ""))], [record], leader(),
                    5, 2.0)
    assert second["give_up"] == ("the job fails the same way on every launch "
                                 "(chief-0, worker-0: exit 1, \"%s\"); not restarting" % NO_MODULE)


def test_failures_that_differ_or_come_after_new_steps_are_restarted():
    record = resumed(decide([watch(exited("worker-0"))], [], leader(), 5, 1.0)["restart"], [], 0, False)

    other_error = decide([watch(exited("worker-0", 1, "OSError: [Errno 28] No space left on device"))], [record],
                         leader(), 5, 2.0)
    other_code = decide([watch(exited("worker-0", 2))], [record], leader(), 5, 2.0)
    other_task = decide([watch(exited("worker-1"))], [record], leader(), 5, 2.0)
    after_steps = decide([watch(exited("worker-0"))], [record], leader(step=40, progressed=True), 5, 2.0)

    assert [d["give_up"] for d in (other_error, other_code, other_task, after_steps)] == ["", "", "", ""]
    assert other_error["restart"]["backoff_seconds"] == 20  # the second loss in a row before a first step
    assert after_steps["restart"]["backoff_seconds"] == 0


def test_nodes_gone_twice_before_a_first_step_are_no_failure_of_the_job():
    # A spot node taken back twice during the start says nothing about the script: restarted, with a longer wait.
    record = resumed(decide([watch(gone("ps-0"))], [], leader(), 5, 1.0)["restart"], ["n-ps-0"], None, False)
    again = decide([watch(gone("ps-0")), watch(unanswered("ps-0"))], [record], leader(), 5, 2.0)
    assert again["give_up"] == "" and again["restart"]["backoff_seconds"] == 20


def test_a_watch_that_lost_no_task_is_not_restarted():
    deadline = {"failed": True, "msg": "training did not finish within timeout=60s (last progress: none)"}
    stopped = {"failed": True, "stopped_by": "n-chief-0", "msg": "the job failed on n-chief-0"}
    decision = decide([deadline, stopped, {}], [], leader(), 3, 1.0)
    assert decision["give_up"] == ("the job failed and tf_restart=on_failure has nothing to replace: "
                                   "training did not finish within timeout=60s (last progress: none)")


def test_after_max_restarts_the_deploy_gives_up_naming_every_loss():
    first = decide([watch(gone("ps-0"))], [], leader(step=300, progressed=True), 1, 1.0)
    record = resumed(first["restart"], ["n-ps-0"], 280, False)
    second = decide([watch(gone("worker-0"))], [record], leader(step=350, progressed=True), 1, 2.0)
    assert second["give_up"] == (
        "tf_restart=on_failure gave up after 1 restart(s) (tf_max_restarts=1). What the job lost: "
        "lost ps-0 on n-ps-0 (its node stopped answering) at step 300/3000; "
        "lost worker-0 on n-worker-0 (its node stopped answering) at step 350/3000. "
        "Nothing of the job is running; a re-run of deploy resumes from the latest checkpoint.")
    assert decide([watch(gone("ps-0"))], [], leader(), 0, 1.0)["give_up"].startswith(
        "tf_restart=on_failure gave up after 0 restart(s) (tf_max_restarts=0)")


def test_the_backoff_doubles_for_losses_in_a_row_without_a_step_up_to_five_minutes():
    no_step, trained = {"progressed": False}, {"progressed": True}
    waits = [backoff_seconds([no_step] * before, progressed=False) for before in range(8)]
    assert waits == [10, 20, 40, 80, 160, 300, 300, 300]
    # A run that trained ends the streak: the next loss without a step waits 10 s again, a loss after steps none.
    assert backoff_seconds([no_step, no_step, trained, no_step], progressed=False) == 20
    assert backoff_seconds([no_step] * 6, progressed=True) == 0


def test_the_record_of_a_relaunch_says_what_it_replaced_and_lost():
    record = {"restart": 1, "losses": [gone("ps-0")], "step": 620, "backoff_seconds": 0}
    done = resumed(record, ["n-ps-0"], 600, False)
    assert done == dict(record, replaced=["n-ps-0"], resumed_from=600, steps_lost=20, finished_already=False)
    # A checkpoint past the step seen (the leader saved after the last status), and a resumed step never seen.
    assert resumed(record, [], 640, False)["steps_lost"] == 0
    assert resumed(record, [], None, True)["steps_lost"] is None
