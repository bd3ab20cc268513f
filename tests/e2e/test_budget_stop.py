"""A running job whose price reaches tf_budget is stopped as at a deadline, the message saying it was the budget.

cloud=local has no price (the nodes are this machine): the test gives the price a cloud's plan would
(training_price_per_hour, which group_vars/all.yml takes from the plan's cost elsewhere).
"""

import os

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._json_files import read_json
from ansible_cli import REPO, run_playbook, tail
from processes import free_port_block, tf_processes


def test_a_job_that_has_cost_its_budget_is_stopped_and_the_message_says_budget(tmp_path, cluster_name):
    base = free_port_block(3)
    # $0.03 at $3.60/h lasts 30 s: far less than the steps asked for take.
    result = run_playbook("playbooks/deploy.yml", f"cluster_name={cluster_name}", f"tf_port_base={base}",
                          "tf_workers=1", "tf_ps=1", "tf_train_steps=1000000", "tf_budget=0.03",
                          "training_price_per_hour=3.6", env={"TFDIST_OUTCOME_FILE": str(tmp_path / "outcome.json")})
    assert result.returncode != 0
    out = " ".join(result.stdout.split())
    assert "stopped: budget ($0.03 at $3.6/h, spent 30s after" in out, tail(result)
    assert tf_processes(os.path.join(REPO, ".cache", "run", cluster_name)) == []
    # For a pipeline: stopped as asked, not a failed job (a later deploy with a larger budget resumes it).
    outcome = read_json(str(tmp_path / "outcome.json"))
    assert (outcome["outcome"], outcome["message"].startswith("stopped: budget")) == ("limit_reached", True), outcome
