"""tf_restart=on_failure: a lost task or node is replaced and the same deploy command ends with the model.

Things are killed for real: a TF process on cloud=local, node containers on cloud=docker.
"""

import os
import re
import signal
import threading
import time

import numpy as np

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._json_files import read_json
from ansible_cli import REPO, start_playbook
from docker_engine import chief_status, cluster_containers
from processes import alive, free_port_block, tf_processes


def summary_of(name):
    return read_json(os.path.join(REPO, "artifacts", name, "summary.json"))


def assert_model_predicts(name):
    import keras

    model = keras.models.load_model(os.path.join(REPO, "artifacts", name, "model", "model.keras"))
    digits = np.load(os.path.join(REPO, "roles", "training", "files", "data", "digits.npz"))
    assert (model.predict(digits["x"], verbose=0).argmax(1) == digits["y"]).mean() > 0.8


def wait_until(deploy, ready, what, timeout=600):
    deadline = time.time() + timeout
    while not ready():
        assert deploy.poll() is None, f"deploy ended before {what}:\n" + deploy.stdout.read()[-5000:]
        assert time.time() < deadline, f"never saw {what}"
        time.sleep(0.5)


def finish(deploy, timeout=900):
    try:
        return deploy.communicate(timeout=timeout)[0]
    finally:
        if deploy.poll() is None:
            deploy.kill()


def follow(deploy, timeout=900):
    """The deploy's output once it has ended, as (time read, line) pairs: when each line was printed."""
    lines = []

    def read():
        for line in deploy.stdout:
            lines.append((time.time(), line))
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deploy.wait(timeout=timeout)
    finally:
        if deploy.poll() is None:
            deploy.kill()
    reader.join(timeout=10)
    return lines


def test_killed_worker_process_is_restarted_on_local(cluster_name):
    base = free_port_block(4)
    steps = 6000
    # Long enough that the job cannot reach its end between the kill and the watch's stop, even on a loaded
    # machine: with 2500 steps, a chief that trains on without the lost worker (parameter servers go on) once
    # finished first, and nothing was left to restart.
    deploy = start_playbook("playbooks/deploy.yml", f"cluster_name={cluster_name}", f"tf_port_base={base}",
                            f"tf_train_steps={steps}", "tf_restart=on_failure")
    job_dir = os.path.join(REPO, ".cache", "run", cluster_name)
    wait_until(deploy, lambda: ((read_json(os.path.join(job_dir, "status.json")) or {}).get("step") or 0) >= 200, "step 200")
    with open(os.path.join(job_dir, "tasks", "worker-1", "task.pid")) as handle:
        os.kill(int(handle.read().split()[0]), signal.SIGKILL)
    out = finish(deploy)

    assert deploy.returncode == 0, out[-5000:]
    assert "restart 1 of at most 3 (lost worker-1" in out and "resumed from the checkpoint of step" in out, out[-5000:]
    summary = summary_of(cluster_name)
    assert summary["steps"] == steps and summary["initial_step"] > 0
    [restart] = summary["restarts"]
    assert [(loss["task"], loss["node_gone"]) for loss in restart["losses"]] == [("worker-1", False)]
    assert "killed by signal 9" in restart["losses"][0]["why"]
    assert restart["replaced"] == [] and restart["resumed_from"] == summary["initial_step"]
    # The job had trained: its loss is a one-off, restarted without a wait.
    assert restart["progressed"] is True and restart["backoff_seconds"] == 0
    assert_model_predicts(cluster_name)
    assert tf_processes(job_dir) == []


def test_a_script_that_fails_the_same_way_at_every_launch_is_not_restarted_again(cluster_name, tmp_path):
    """A module the nodes lack fails every launch before its first step: the deploy gives up after the second
    launch, one backoff later, naming the failure, instead of spending tf_max_restarts on it (5 restarts, 310 s of
    backoff)."""
    script = tmp_path / "train.py"
    script.write_text("import tfdist_no_such_module  # noqa: F401  (no node has it)\n")
    base = free_port_block(3)
    deploy = start_playbook("playbooks/deploy.yml", f"cluster_name={cluster_name}", f"tf_port_base={base}",
                            "tf_workers=1", "tf_ps=1", f"tf_script={script}", "tf_restart=on_failure",
                            "tf_max_restarts=5")
    lines = follow(deploy)
    out = "".join(line for at, line in lines)

    assert deploy.returncode != 0, out[-5000:]
    given_up = re.search(r"the job fails the same way on every launch \(((?:chief|worker|ps)-0(?:, )?)+: exit 1, "
                         r"\"ModuleNotFoundError: No module named 'tfdist_no_such_module'\"\); not restarting", out)
    assert given_up, out[-5000:]
    # The output wraps long messages.
    assert "waiting 10 s (the job took no step since its launch)" in " ".join(out.split()), out[-5000:]
    assert "restart 2 of at most 5" not in out, out[-5000:]
    # From the first restart to the end: its 10 s of backoff, one relaunch and the look that sees it fail again.
    restarted = min(at for at, line in lines if "restart 1 of at most 5" in line)
    assert lines[-1][0] - restarted < 90, f"{lines[-1][0] - restarted:.0f} s from the first restart to the end"
    assert tf_processes(os.path.join(REPO, ".cache", "run", cluster_name)) == []


def test_a_rerun_after_a_lost_controller_and_chief_starts_every_task_of_the_job_anew(cluster_name):
    """The controller and the chief are lost together (a laptop gone to sleep, then a chief that crashes): nobody
    watches, and the parameter server and workers wait for their chief (training_gone_grace, long here). A re-run
    relaunches the chief, and every other task with it: a server of the last run would serve the new chief with
    what that run left in it."""
    base = free_port_block(4)
    settings = (f"cluster_name={cluster_name}", f"tf_port_base={base}", "tf_train_steps=3000",
                "training_gone_grace=300")
    deploy = start_playbook("playbooks/deploy.yml", *settings)
    job_dir = os.path.join(REPO, ".cache", "run", cluster_name)
    wait_until(deploy, lambda: ((read_json(os.path.join(job_dir, "status.json")) or {}).get("step") or 0) >= 100, "step 100")
    # The controller goes first (ansible-playbook and the workers it forked), then the chief.
    for pid in tf_processes(f"ansible-playbook.*cluster_name={cluster_name} "):
        os.kill(pid, signal.SIGKILL)
    finish(deploy)
    servers = ("ps-0", "worker-0", "worker-1")
    last_run = dict((task, read_json(os.path.join(job_dir, "tasks", task, "task.json"))) for task in servers)
    os.kill(read_json(os.path.join(job_dir, "tasks", "chief-0", "task.json"))["pid"], signal.SIGKILL)
    lost = time.time()
    assert all(alive(record["pid"]) for record in last_run.values()), "the servers should wait for their chief"

    again = start_playbook("playbooks/deploy.yml", *settings)
    out = finish(again)

    assert again.returncode == 0, out[-5000:]
    this_run = dict((task, read_json(os.path.join(job_dir, "tasks", task, "task.json"))) for task in servers)
    assert all(this_run[task]["started_at"] > lost for task in servers), (last_run, this_run)
    assert not any(alive(record["pid"]) for record in last_run.values())
    summary = summary_of(cluster_name)
    assert summary["steps"] == 3000 and summary["initial_step"] > 0, summary  # resumed from its checkpoint
    assert_model_predicts(cluster_name)
    assert tf_processes(job_dir) == []


def test_lost_ps_and_worker_nodes_are_replaced_and_the_job_resumes(engine, docker_cluster):
    name = docker_cluster
    # A node gone is a loss once it has been silent for training_gone_grace (60 s by default, longer than a network
    # blip): 10 s here, or the job could reach its last step before worker-1's loss is seen.
    # The job must still run when worker-1's loss is judged, 10 s after it goes (at step 400 or so) and the watch's
    # next look: the 3,600 steps left are over 40 s of training on an idle 2-core machine.
    steps = 4000
    deploy = start_playbook("playbooks/deploy.yml", "cloud=docker", f"cluster_name={name}", f"tf_train_steps={steps}",
                            "tf_restart=on_failure", "training_gone_grace=10")
    wait_until(deploy, lambda: (chief_status(engine, name).get("step") or 0) >= 300, "step 300")
    worker_before = engine.containers.get(f"{name}-worker-1").id
    engine.containers.get(f"{name}-ps-0").kill()
    killed = time.time()

    # Once the job has resumed (a run whose first step is after the kill), its worker-1 node goes away for good.
    def resumed():
        status = chief_status(engine, name)
        return (status.get("first_step_at") or 0) > killed and (status.get("step") or 0) >= (status.get("initial_step") or 0) + 50
    wait_until(deploy, resumed, "the job resuming after the ps was killed")
    first_step_after_kill = chief_status(engine, name)["first_step_at"] - killed
    engine.containers.get(f"{name}-worker-1").remove(force=True)
    out = finish(deploy)

    assert deploy.returncode == 0, out[-5000:]
    summary = summary_of(name)
    # ClusterCoordinator re-runs a lost worker's closure elsewhere (at least once), so one chunk of steps may
    # count twice before the job is stopped and restarted.
    assert steps <= summary["steps"] <= steps + 10 * 4 and summary["initial_step"] > 0, summary
    first, second = summary["restarts"]
    assert ("ps-0", True) in [(loss["task"], loss["node_gone"]) for loss in first["losses"]], first
    assert first["replaced"] == [f"{name}-ps-0"] and first["resumed_from"] > 0
    assert ("worker-1", True) in [(loss["task"], loss["node_gone"]) for loss in second["losses"]], second
    assert second["replaced"] == [f"{name}-worker-1"], second
    # The last run's first step is what the last restart resumed from (also when it had few steps left).
    assert second["resumed_from"] == summary["initial_step"] >= first["resumed_from"], summary["restarts"]
    # The same four nodes by name, worker-1 a new container, on the cluster's network only.
    containers = cluster_containers(engine, name)
    assert sorted(c.name for c in containers) == sorted(f"{name}-{t}" for t in ("chief-0", "worker-0", "worker-1", "ps-0"))
    assert engine.containers.get(f"{name}-worker-1").id != worker_before
    assert all(list(c.attrs["NetworkSettings"]["Networks"]) == [f"tfdist-{name}"] for c in containers)
    assert_model_predicts(name)
    print(f"kill of the ps node -> first step after the restart: {first_step_after_kill:.1f} s")


def test_restarts_give_up_after_tf_max_restarts_naming_each_loss(engine, docker_cluster):
    name = docker_cluster
    deploy = start_playbook("playbooks/deploy.yml", "cloud=docker", f"cluster_name={name}", "tf_train_steps=100000",
                            "tf_restart=on_failure", "tf_max_restarts=1", "training_gone_grace=10")
    wait_until(deploy, lambda: (chief_status(engine, name).get("step") or 0) >= 200, "step 200")
    engine.containers.get(f"{name}-ps-0").kill()
    killed = time.time()
    wait_until(deploy, lambda: (chief_status(engine, name).get("first_step_at") or 0) > killed, "the job resuming")
    engine.containers.get(f"{name}-worker-0").kill()
    out = finish(deploy)

    assert deploy.returncode != 0
    assert "tf_restart=on_failure gave up after 1 restart(s) (tf_max_restarts=1)" in out, out[-5000:]
    assert f"ps-0 on {name}-ps-0 (its node stopped answering)" in out, out[-5000:]
    assert f"worker-0 on {name}-worker-0 (its node stopped answering)" in out, out[-5000:]
    # Nothing trains on unwatched.
    for container in cluster_containers(engine, name):
        if container.status != "running":
            continue
        listing = container.exec_run(["sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"]).output.decode()
        assert f"/var/lib/tfdist/{name}/" not in listing, container.name
