"""The real thing on cloud=local: 1 chief, 2 workers, 1 ps train, hand back a model, resume."""

import json
import os
import signal
import time

import numpy as np
import pytest

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._json_files import read_json
from ansible_cli import REPO, run_inventory, run_playbook, start_playbook, tail
from file_modes import loose_modes
from processes import alive, free_port_block, listening_ports, process_environment, tf_processes, wait_until

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

    # What the job wrote (scripts, dataset, logs, checkpoints, model) and what came home are this user's alone.
    assert loose_modes(artifacts) == []
    assert loose_modes(os.path.join(REPO, ".cache", "run", cluster_name)) == []

    # Nothing of the job keeps running (the parameter server included); the cluster's network namespace stays.
    job_dir = os.path.join(REPO, ".cache", "run", cluster_name)
    assert tf_processes(job_dir) == []
    holder = read_json(os.path.join(job_dir, "network.json"))["pid"]
    assert alive(holder)

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
    assert not alive(holder)
    assert os.path.exists(os.path.join(artifacts, "model", "model.keras"))


def test_own_script_with_classic_flags_and_teardown(cluster_name, keras):
    base = free_port_block(3)
    result = run_playbook("playbooks/deploy.yml", f"cluster_name={cluster_name}", f"tf_port_base={base}",
                          "tf_workers=1", "tf_ps=1", "tf_script=examples/own_script_flags.py",
                          "tf_script_interface=flags", "teardown=true", "local_isolated=false")
    assert result.returncode == 0, tail(result)
    # A script of your own that must reach the network: its tasks run in this machine's, and the user is told what
    # that opens.
    said = " ".join((result.stdout + result.stderr).split())
    assert ("cloud=local with local_isolated=false: the tasks run in this machine's network. TensorFlow listens on "
            "every interface, so the cluster's TF ports (%d, %d, %d) are open" % (base, base + 1, base + 2)) in said

    artifacts = os.path.join(REPO, "artifacts", cluster_name)
    job_dir = os.path.join(REPO, ".cache", "run", cluster_name)
    # The script requires the classic flags: a run without them would have failed above.
    model = keras.models.load_model(os.path.join(artifacts, "model", "model.keras"))
    assert abs(float(model.predict(np.array([[1.0]]), verbose=0)[0][0]) - 5.0) < 0.2  # y = 3x + 2
    # teardown=true: the cluster is gone once the model is collected, its job folder and inventory source too.
    assert tf_processes(job_dir) == []
    assert not os.path.exists(job_dir)
    assert not os.path.exists(os.path.join(REPO, "inventories", "clusters", f"{cluster_name}.local.yml"))
    assert f"{cluster_name}-local" not in run_inventory("--graph", check=True).stdout


def test_a_tf_keras_multi_worker_mirrored_fit_script_trains_with_tf_keras(cluster_name):
    """TF's tutorial shape (tf.keras, MultiWorkerMirroredStrategy, model.fit) on a chief and 2 workers: Keras 3's fit()
    fails under this strategy (keras #20585); with tf_keras=true the tasks' tf.keras is tf-keras and it trains."""
    base = free_port_block(3)
    result = run_playbook("playbooks/deploy.yml", f"cluster_name={cluster_name}", f"tf_port_base={base}",
                          "tf_strategy=multi_worker_mirrored", "tf_workers=2", "tf_keras=true",
                          "tf_script=examples/keras2_multi_worker_mirrored.py",
                          # A short value of the user's, never logged, masked nowhere else (tf_env goes as JSON).
                          '{"tf_env": {"EXAMPLE_FLAG": "1"}}')
    assert result.returncode == 0, tail(result)

    artifacts = os.path.join(REPO, "artifacts", cluster_name)
    assert sorted(os.listdir(os.path.join(artifacts, "logs"))) == ["chief-0.log", "worker-0.log", "worker-1.log"]
    # What the chief saved with: Keras 2's own format.
    import tf_keras  # pylint: disable=import-outside-toplevel

    model = tf_keras.models.load_model(os.path.join(artifacts, "model", "model.keras"))
    assert abs(float(model.predict(np.array([[1.0]]), verbose=0)[0][0]) - 5.0) < 0.2  # y = 3x + 2
    # The run record names the chief's run by its start time (a masked '1' made it VALUE_SPECIFIED_IN_NO_LOG_PARAMETER).
    with open(os.path.join(artifacts, "summary.json")) as handle:
        assert float(json.load(handle)["leader_run"]) > 0


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


def log_ends(job_dir, tasks):
    """The last lines of each task's log: what a test that waited in vain shows."""
    ends = {}
    for task in tasks:
        try:
            with open(os.path.join(job_dir, "tasks", task, "task.log"), errors="replace") as handle:
                ends[task] = handle.readlines()[-8:]
        except OSError as e:
            ends[task] = str(e)
    return ends


def test_deploy_interrupted_while_training_attaches_to_the_running_job(cluster_name):
    """Ctrl-C while the deploy watches, then the same deploy again: it watches that job to its end, launching nothing."""
    base = free_port_block(4)
    common = [f"cluster_name={cluster_name}", f"tf_port_base={base}", "tf_workers=2", "tf_ps=1", "tf_train_steps=10000"]
    job_dir = os.path.join(REPO, ".cache", "run", cluster_name)
    tasks = ("chief-0", "worker-0", "worker-1", "ps-0")
    # The controller's cloud credentials: no task may see them.
    first = start_playbook("playbooks/deploy.yml", *common, env={"AWS_SECRET_ACCESS_KEY": "controller-secret-0000"})
    try:
        def ended_or_at_step_100():
            return first.poll() is not None or ((read_json(os.path.join(job_dir, "status.json")) or {}).get("step")
                                                or 0) >= 100

        # A deploy that ended before step 100 says why at once (its output), rather than after the whole wait.
        assert wait_until(ended_or_at_step_100, timeout=300), ("the job never reached step 100", log_ends(job_dir, tasks))
        assert first.poll() is None, first.communicate()[0][-4000:]
        # While it trains, this machine's network shows none of its TF ports (they are in the cluster's namespace),
        # and the tasks' environments hold none of the controller's AWS variables.
        assert not set(range(base, base + 4)) & listening_ports()
        for task in tasks:
            environment = process_environment(read_json(os.path.join(job_dir, "tasks", task, "task.json"))["pid"])
            assert not [name for name in environment if name.startswith("AWS_")], (task, sorted(environment))
            assert "controller-secret-0000" not in environment.values()
        os.kill(first.pid, signal.SIGINT)  # what Ctrl-C does to ansible-playbook
        output = first.communicate(timeout=120)[0]
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode != 0, output[-3000:]
    runs = {task: read_json(os.path.join(job_dir, "tasks", task, "task.json"))["started_at"] for task in tasks}
    assert (read_json(os.path.join(job_dir, "status.json")) or {}).get("state") == "running", "the job ended too soon"

    holder = read_json(os.path.join(job_dir, "network.json"))["pid"]
    started = time.time()
    again = run_playbook("playbooks/deploy.yml", *common)
    assert again.returncode == 0, tail(again)
    assert read_json(os.path.join(job_dir, "network.json"))["pid"] == holder  # the job's namespace, kept
    print("re-run %.1f s" % (time.time() - started))
    # It watched the job it found (progress lines), and that job is the only one: every task's run is the one
    # the first deploy launched, started once.
    assert "step " in again.stdout and "/10000" in again.stdout, tail(again)
    for task in tasks:
        task_dir = os.path.join(job_dir, "tasks", task)
        assert read_json(os.path.join(task_dir, "task.json"))["started_at"] == runs[task], task
        with open(os.path.join(task_dir, "task.log")) as handle:
            launches = [line for line in handle if line.startswith("[tfdist-supervise]") and " starting " in line]
        assert len(launches) == 1, (task, launches)
    summary = read_json(os.path.join(REPO, "artifacts", cluster_name, "summary.json"))
    assert summary["steps"] == 10000 and summary["initial_step"] == 0, summary
    assert str(summary["leader_run"]) == str(runs["chief-0"]), summary
    assert tf_processes(job_dir) == []
