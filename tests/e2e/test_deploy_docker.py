"""cloud=docker: separate hosts (containers) over SSH, faults, and a destroy that leaves nothing."""

import calendar
import json
import os
import re
import stat
import time

import numpy as np

from ansible_cli import REPO, run_inventory, run_playbook, start_playbook, tail
from docker_engine import chief_status, cluster_containers

# Fixtures (tests/e2e/conftest.py): engine, the Docker Engine with the node images; docker_cluster, a
# cluster name destroyed (and checked gone) afterwards.


def start_deploy(name, *extra):
    return start_playbook("playbooks/deploy.yml", "cloud=docker", f"cluster_name={name}", *extra)


def wait_for_step(engine, name, deploy, step, timeout=300):
    deadline = time.time() + timeout
    while (chief_status(engine, name).get("step") or 0) < step:
        assert deploy.poll() is None, deploy.stdout.read()[-4000:]
        assert time.time() < deadline, f"the chief never reached step {step}"
        time.sleep(1)


def test_docker_cluster_trains_over_ssh_and_destroy_leaves_nothing(engine, docker_cluster):
    import keras

    name = docker_cluster
    result = run_playbook("playbooks/deploy.yml", "cloud=docker", f"cluster_name={name}", "tf_train_steps=300")
    assert result.returncode == 0, tail(result)

    # One node per TF task, on the cluster's own network only, nothing published on the host.
    containers = cluster_containers(engine, name)
    assert sorted(c.name for c in containers) == sorted(f"{name}-{t}" for t in ("chief-0", "worker-0", "worker-1", "ps-0"))
    for container in containers:
        assert list(container.attrs["NetworkSettings"]["Networks"]) == [f"tfdist-{name}"]
        assert not container.attrs["HostConfig"]["PortBindings"]
        assert not any(container.attrs["NetworkSettings"]["Ports"].values())
    # The cluster's own key pair, in a folder only the controller's user can open.
    key = os.path.join(REPO, ".cache", "keys", name)
    assert stat.S_IMODE(os.stat(os.path.dirname(key)).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    with open(key + ".pub") as handle:
        assert handle.read().split()[::2] == ["ssh-ed25519", f"tfdist-{name}"]

    graph = run_inventory("--graph", check=True).stdout
    for role in ("chief", "worker", "ps"):
        assert f"@tfdist_{name}_{role}:" in graph

    artifacts = os.path.join(REPO, "artifacts", name)
    with open(os.path.join(artifacts, "summary.json")) as handle:
        summary = json.load(handle)
    assert summary["cloud"] == "docker" and summary["steps"] == 300 and summary["accuracy"] > 0.8
    # Each task's Python imported TensorFlow while the deploy went on (training_files), and its launch took it over.
    for task in ("chief-0", "worker-0", "worker-1", "ps-0"):
        with open(os.path.join(artifacts, "logs", f"{task}.log")) as handle:
            assert "warm start: tensorflow imported since" in handle.read(), task
    model = keras.models.load_model(os.path.join(artifacts, "model", "model.keras"))
    digits = np.load(os.path.join(REPO, "roles", "training", "files", "data", "digits.npz"))
    assert (model.predict(digits["x"], verbose=0).argmax(1) == digits["y"]).mean() > 0.8
    # The tasks left no temporary files behind (TensorFlow writes one per converted function, and a task that
    # leaves by os._exit skips their clean-up): each had a folder of its own, gone once it ended.
    for container in containers:
        leftovers = container.exec_run(
            ["sh", "-c", f"ls /tmp | grep autograph; ls -d /var/lib/tfdist/{name}/tasks/*/tmp 2>/dev/null"])
        assert leftovers.output.decode() == "", (container.name, leftovers.output.decode())

    # --check names the controller's files a destroy would remove, and removes nothing.
    inventory_source = os.path.join(REPO, "inventories", "clusters", f"{name}.libcloud.yml")
    checked = run_playbook("playbooks/destroy.yml", "cloud=docker", f"cluster_name={name}", args=("--check", "-v"))
    assert checked.returncode == 0, tail(checked)
    for path in (inventory_source, key, key + ".pub"):
        assert f"would remove {path}\n" in checked.stdout, tail(checked)
        assert os.path.exists(path), path
    assert len(cluster_containers(engine, name)) == 4

    gone = run_playbook("playbooks/destroy.yml", "cloud=docker", f"cluster_name={name}")
    assert gone.returncode == 0, tail(gone)
    assert cluster_containers(engine, name) == []
    assert engine.networks.list(names=[f"tfdist-{name}"]) == []
    assert not os.path.exists(key) and not os.path.exists(key + ".pub")
    assert not os.path.exists(inventory_source)
    # A second destroy finds nothing to remove, and says so.
    again = run_playbook("playbooks/destroy.yml", "cloud=docker", f"cluster_name={name}")
    assert again.returncode == 0, tail(again)
    assert re.search(r"^localhost\s+: ok=\d+\s+changed=0\s", again.stdout, re.MULTILINE), tail(again)


def test_lost_worker_container_is_tolerated_and_reported(engine, docker_cluster):
    name = docker_cluster
    # Its node is lost once silent for training_gone_grace (60 s by default): 10 s here, judged long before the job's
    # 3,000 steps are done.
    steps = 3000
    deploy = start_deploy(name, f"tf_train_steps={steps}", "tf_worker_loss=tolerate", "training_gone_grace=10")
    try:
        wait_for_step(engine, name, deploy, 100)
        engine.containers.get(f"{name}-worker-1").kill()
        out = deploy.communicate(timeout=600)[0]
    finally:
        if deploy.poll() is None:
            deploy.kill()
    assert deploy.returncode == 0, out[-5000:]
    assert "worker-1" in out and "Training goes on with the other workers" in out, out[-5000:]
    with open(os.path.join(REPO, "artifacts", name, "summary.json")) as handle:
        summary = json.load(handle)
    # ClusterCoordinator re-runs a lost worker's closure elsewhere (at least once), so one
    # chunk of steps may count twice.
    assert steps <= summary["steps"] <= steps + 10 * 4
    assert summary["lost_tasks"] == ["worker-1"]


def test_lost_ps_fails_the_play_and_a_rerun_resumes(engine, docker_cluster):
    name = docker_cluster
    deploy = start_deploy(name, "tf_train_steps=1500")  # enough to be training at step 400, no more
    try:
        wait_for_step(engine, name, deploy, 400)
        engine.containers.get(f"{name}-ps-0").kill()
        killed = time.time()
        out = deploy.communicate(timeout=300)[0]
        reaction = time.time() - killed
    finally:
        if deploy.poll() is None:
            deploy.kill()
    assert deploy.returncode != 0
    assert "ps-0" in out, out[-5000:]
    assert reaction < 60, f"the play took {reaction:.0f}s to notice"

    # The re-run starts the stopped ps node again and resumes from the last checkpoint.
    again = run_playbook("playbooks/deploy.yml", "cloud=docker", f"cluster_name={name}", "tf_train_steps=1500")
    assert again.returncode == 0, tail(again)
    with open(os.path.join(REPO, "artifacts", name, "summary.json")) as handle:
        summary = json.load(handle)
    assert summary["initial_step"] >= 300, summary
    assert summary["steps"] == 1500
    assert len(cluster_containers(engine, name)) == 4


def test_classic_cluster_without_a_chief_on_docker_nodes(engine, docker_cluster):
    """radl/classic.radl (ps + 2 workers, no chief system) and a TF1-era flags script: worker 0 leads and
    writes the result; nothing keeps running."""
    name = docker_cluster
    result = run_playbook("playbooks/deploy.yml", "radl=radl/classic.radl", f"cluster_name={name}",
                          "tf_train_steps=300", "tf_script=examples/classic_between_graph.py",
                          "tf_script_interface=flags")
    assert result.returncode == 0, tail(result)

    containers = cluster_containers(engine, name)
    assert sorted(c.name for c in containers) == sorted(f"{name}-{t}" for t in ("worker-0", "worker-1", "ps-0"))
    graph = run_inventory("--graph", check=True).stdout
    assert f"@tfdist_{name}_leader:\n  |  |--{name}-worker-0" in graph

    with open(os.path.join(REPO, "artifacts", name, "summary.json")) as handle:
        summary = json.load(handle)
    assert summary["steps"] == 300 and summary["final_loss"] < 0.01  # y = 3x + 2 was learned
    # No TF process is left on any node (the servers stopped once worker 0 was gone).
    for container in containers:
        listing = container.exec_run(["sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"]).output.decode()
        assert "train.py" not in listing, container.name


def finished_at(container):
    """When the container stopped, in seconds since the epoch (Docker gives nanoseconds, in UTC)."""
    stamp = container.attrs["State"]["FinishedAt"]
    whole, fraction = (stamp.rstrip("Z").split(".") + ["0"])[:2]
    return calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) + float("0." + fraction)


def test_idle_guard_powers_the_nodes_off_once_the_controller_is_gone(engine, docker_cluster):
    name = docker_cluster
    idle_seconds = 60  # tf_idle_minutes=1, the least the command line takes
    result = run_playbook("playbooks/deploy.yml", "cloud=docker", f"cluster_name={name}", "tf_train_steps=200",
                          "tf_idle_minutes=1")
    ended = time.time()
    assert result.returncode == 0, tail(result)
    # The guard let the job train and be collected: every node was up at the end.
    containers = cluster_containers(engine, name)
    assert len(containers) == 4 and all(c.status == "running" for c in containers), [c.status for c in containers]

    # Nobody calls the nodes any more: each powers itself off, on its own, within the timeout and a few checks.
    def stopped():
        return all(c.status == "exited" for c in cluster_containers(engine, name))

    deadline = ended + idle_seconds + 60
    while not stopped() and time.time() < deadline:
        time.sleep(1)
    containers = cluster_containers(engine, name)
    assert stopped(), [(c.name, c.status) for c in containers]
    for container in containers:
        after = finished_at(container) - ended
        print(f"{container.name}: stopped {after:.1f} s after the deploy ended")
        assert idle_seconds - 15 <= after <= idle_seconds + 15, (container.name, after)
        log = container.logs().decode(errors="replace")
        assert "tfdist idle guard: powering off: no TF task runs in" in log, log[-2000:]

    # Destroy still removes everything of the cluster.
    gone = run_playbook("playbooks/destroy.yml", "cloud=docker", f"cluster_name={name}")
    assert gone.returncode == 0, tail(gone)
    assert cluster_containers(engine, name) == []
    assert engine.networks.list(names=[f"tfdist-{name}"]) == []


def test_a_node_that_fails_before_the_launch_stops_the_deploy_with_nothing_launched(engine, docker_cluster):
    # The job needs every one of its tasks: the other nodes must not launch theirs and wait for the missing one.
    name = docker_cluster
    created = run_playbook("playbooks/provision.yml", "cloud=docker", f"cluster_name={name}")
    assert created.returncode == 0, tail(created)
    broken = engine.containers.get(f"{name}-worker-0")
    assert broken.exec_run(["sh", "-c", "rm -rf /var/lib/tfdist && touch /var/lib/tfdist"]).exit_code == 0

    deploy = run_playbook("playbooks/deploy.yml", "cloud=docker", f"cluster_name={name}", "tf_train_steps=50", timeout=300)
    assert deploy.returncode != 0
    assert f"fatal: [{name}-worker-0]" in deploy.stdout, tail(deploy)
    for container in cluster_containers(engine, name):
        launched = container.exec_run(["sh", "-c", f"ls /var/lib/tfdist/{name}/tasks/*/supervisor.pid"])
        assert launched.exit_code != 0, f"{container.name} launched: {launched.output.decode()}"
