"""The restart policy's filters (plugins/filter/restart.py) as playbooks/tasks/restart.yml calls them."""

import time

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

LOSS = {"task": "worker-0", "host": "n-local", "why": "exited with code 1 (exited)", "node_gone": False,
        "returncode": 1, "error": "ModuleNotFoundError: No module named 'foo'"}


def render(expression, **variables):
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(expression))


def decision(restarts):
    return render(
        "{{ watch_results | tfdist.cluster.tf_restart_decision(restarts=restarts, leader_result=leader,"
        " max_restarts=max_restarts) }}",
        watch_results=[{"failed": True, "losses": [LOSS]}], restarts=restarts, max_restarts="5",
        leader={"progressed": False, "status": {"step": 0, "target_steps": 300}})


def test_a_loss_is_decided_recorded_and_told_through_the_filters():
    before = time.time()
    first = decision([])
    assert first["give_up"] == "" and first["restart"]["backoff_seconds"] == 10
    assert before <= first["restart"]["at"] <= time.time()  # now, when the playbook passes no time

    record = render("{{ restart | tfdist.cluster.tf_restart_resumed(replaced=[], resumed_from=none,"
                    " finished_already=false) }}", restart=first["restart"])
    assert record["steps_lost"] is None and record["replaced"] == []
    assert render("{{ record | tfdist.cluster.tf_restart_line }}", record=record) == (
        "lost worker-0 on n-local (exited with code 1 (exited)) at step 0/300")

    second = decision([record])
    assert second["give_up"].startswith('the job fails the same way on every launch (worker-0: exit 1, "Module')
