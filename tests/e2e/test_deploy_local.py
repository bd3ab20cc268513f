"""The real thing on cloud=local: 1 chief, 2 workers, 1 ps train, hand back a model, resume."""

import json
import os

import numpy as np
import pytest

from ansible_cli import REPO, run_inventory, run_playbook, tail
from processes import free_port_block, tf_processes

DIGITS = os.path.join(REPO, "roles", "training", "files", "data", "digits.npz")


@pytest.fixture(scope="module")
def keras():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras as keras_module

    return keras_module


def test_deploy_trains_collects_and_resumes(cluster_name, keras):
    base = free_port_block(4)
    common = [f"cluster_name={cluster_name}", f"tf_port_base={base}", "tf_workers=2", "tf_ps=1"]
    first = run_playbook("playbooks/deploy.yml", *common, "tf_train_steps=200")
    assert first.returncode == 0, tail(first)

    # The user saw progress while it trained.
    assert "step " in first.stdout and "examples/s" in first.stdout and "ETA" in first.stdout

    artifacts = os.path.join(REPO, "artifacts", cluster_name)
    with open(os.path.join(artifacts, "summary.json")) as handle:
        summary = json.load(handle)
    assert summary["steps"] == 200
    assert summary["initial_step"] == 0
    assert summary["accuracy"] > 0.8, summary  # 10 classes: chance is 0.1
    assert summary["examples_per_sec"] > 0
    for phase in ("provision", "install", "launch_to_first_step", "training"):
        assert summary["seconds"][phase] is not None and summary["seconds"][phase] >= 0, phase
    for task in ("chief-0", "worker-0", "worker-1", "ps-0"):
        assert os.path.getsize(os.path.join(artifacts, "logs", f"{task}.log")) > 0, task
    assert os.path.getsize(os.path.join(artifacts, "loss.png")) > 0

    # The model loads with one call and predicts digits far better than chance.
    model = keras.models.load_model(os.path.join(artifacts, "model", "model.keras"))
    data = np.load(DIGITS)
    predicted = np.argmax(model.predict(data["x"], verbose=0), axis=1)
    assert (predicted == data["y"]).mean() > 0.8

    # Nothing of the job keeps running (the parameter server included).
    job_dir = os.path.join(REPO, ".cache", "run", cluster_name)
    assert tf_processes(job_dir) == []

    # The cluster shows in the inventory, grouped by TF role.
    graph = run_inventory("--graph", check=True).stdout
    group = "tfdist_" + cluster_name
    for role in ("chief", "worker", "ps"):
        assert f"@{group}_{role}:" in graph, graph
    assert f"{cluster_name}-local" in graph

    # A second deploy with a higher target resumes from the checkpoint.
    second = run_playbook("playbooks/deploy.yml", *common, "tf_train_steps=300")
    assert second.returncode == 0, tail(second)
    with open(os.path.join(artifacts, "summary.json")) as handle:
        resumed = json.load(handle)
    assert resumed["initial_step"] == 200
    assert resumed["steps"] == 300
    assert tf_processes(job_dir) == []

    # Destroy leaves nothing of the cluster behind but its collected artifacts.
    gone = run_playbook("playbooks/destroy.yml", f"cluster_name={cluster_name}")
    assert gone.returncode == 0, tail(gone)
    assert not os.path.exists(os.path.join(REPO, "inventories", "clusters", f"{cluster_name}.local.yml"))
    assert not os.path.exists(job_dir)
    assert os.path.exists(os.path.join(artifacts, "model", "model.keras"))


def test_own_script_with_classic_flags(cluster_name, keras):
    base = free_port_block(3)
    result = run_playbook("playbooks/deploy.yml", f"cluster_name={cluster_name}", f"tf_port_base={base}",
                          "tf_workers=1", "tf_ps=1", "tf_script=examples/own_script_flags.py",
                          "tf_script_interface=flags")
    assert result.returncode == 0, tail(result)

    artifacts = os.path.join(REPO, "artifacts", cluster_name)
    job_dir = os.path.join(REPO, ".cache", "run", cluster_name)
    # The script requires the classic flags: a run without them would have failed above.
    model = keras.models.load_model(os.path.join(artifacts, "model", "model.keras"))
    assert abs(float(model.predict(np.array([[1.0]]), verbose=0)[0][0]) - 5.0) < 0.2  # y = 3x + 2
    assert tf_processes(job_dir) == []


def test_classic_cluster_without_a_chief_led_by_worker_0(cluster_name):
    """A TF1-era between-graph script on ps + 2 workers, no chief: worker 0 leads and writes the result."""
    base = free_port_block(3)
    result = run_playbook("playbooks/deploy.yml", f"cluster_name={cluster_name}", f"tf_port_base={base}",
                          "tf_chief=0", "tf_workers=2", "tf_ps=1", "tf_train_steps=300",
                          "tf_script=examples/classic_between_graph.py", "tf_script_interface=flags")
    assert result.returncode == 0, tail(result)

    artifacts = os.path.join(REPO, "artifacts", cluster_name)
    with open(os.path.join(artifacts, "summary.json")) as handle:
        summary = json.load(handle)
    assert summary["steps"] == 300 and summary["final_loss"] < 0.01  # y = 3x + 2 was learned
    # The script writes no model: the summary says where tfdist looked, and the run still ends well.
    assert [path.rsplit("/", 1)[-1] for path in summary["missing"]] == ["model.keras"]
    assert "wrote no model/model.keras" in result.stdout + result.stderr
    # Only three tasks ran (no chief was started), and none is left.
    logs = sorted(os.listdir(os.path.join(artifacts, "logs")))
    assert logs == ["ps-0.log", "worker-0.log", "worker-1.log"]
    assert tf_processes(os.path.join(REPO, ".cache", "run", cluster_name)) == []
