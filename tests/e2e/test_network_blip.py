"""A network blip is not the end of a job: the leader's node is cut off from the cluster network for 20 s.

Its container is disconnected from the cluster's Docker network for real and connected again (the same address
comes back), as a switch that reboots or a flapping route does to a VM.
"""

import json
import re
import time

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._json_files import read_json
from ansible_cli import REPO, start_playbook
from docker_engine import chief_status, job_file

BLIP_SECONDS = 20
STEPS = 1500  # the blip starts at step 300 and the job cannot step while its leader is cut off


def task_log(engine, cluster, node, task):
    return job_file(engine, cluster, node, f"tasks/{task}/task.log").decode(errors="replace")


def ends_only_after_an_announcement(log):
    """Whether every 'chief finished' of a server's supervisor came after the leader announced the end of the job."""
    announced = False
    for line in log.splitlines():
        if "announces the end of the job" in line:
            announced = True
        elif "starting " in line and line.startswith("[tfdist-supervise]"):
            announced = False  # a new run of the task: its own end is still to come
        elif "stopping task: chief finished" in line and not announced:
            return False
    return True


def test_a_leader_cut_off_from_the_cluster_for_20_s_does_not_end_the_job(engine, docker_cluster):
    name = docker_cluster
    deploy = start_playbook("playbooks/deploy.yml", "cloud=docker", f"cluster_name={name}", f"tf_train_steps={STEPS}",
                            "tf_restart=on_failure")
    try:
        deadline = time.time() + 600
        while (chief_status(engine, name).get("step") or 0) < 300:
            assert deploy.poll() is None, deploy.stdout.read()[-5000:]
            assert time.time() < deadline, "never saw step 300"
            time.sleep(0.5)
        ps_run = read_ps_run(engine, name)
        network = engine.networks.get(f"tfdist-{name}")
        chief = engine.containers.get(f"{name}-chief-0")
        network.disconnect(chief)
        time.sleep(BLIP_SECONDS)
        network.connect(chief)
        back = time.time()
        step_back = chief_status(engine, name).get("step") or 0
        # Training again: a step beyond the one the blip ended at (in this run, or in a restarted one).
        while not ((chief_status(engine, name).get("step") or 0) > step_back
                   or (chief_status(engine, name).get("first_step_at") or 0) > back):
            assert deploy.poll() is None, deploy.stdout.read()[-5000:]
            assert time.time() < deadline, "training never went on after the blip"
            time.sleep(0.5)
        print(f"network back -> training again: {time.time() - back:.1f} s")
        out = deploy.communicate(timeout=900)[0]
    finally:
        if deploy.poll() is None:
            deploy.kill()

    assert deploy.returncode == 0, out[-5000:]
    summary = read_json(f"{REPO}/artifacts/{name}/summary.json")
    # ClusterCoordinator re-runs a closure whose result was lost, so a chunk of steps may count twice.
    assert STEPS <= summary["steps"] <= STEPS + 40, summary
    restarts = summary["restarts"]
    print(f"restarts after the blip: {restarts}")
    if not restarts:
        # The parameter server kept serving through the blip: the same run of it served the job to its end.
        assert read_ps_run(engine, name) == ps_run
    # Nobody took the blip for the end of the job.
    assert "chief finished" not in out
    for node, task in (("ps-0", "ps-0"), ("worker-0", "worker-0"), ("worker-1", "worker-1")):
        log = task_log(engine, name, node, task)
        assert ends_only_after_an_announcement(log), log[-3000:]
    for restart in restarts:
        assert not any(re.search("chief finished|leader unreachable", loss["why"]) for loss in restart["losses"]), restart


def read_ps_run(engine, cluster):
    """The parameter server's run: its supervisor's record of when it started."""
    return json.loads(job_file(engine, cluster, "ps-0", "tasks/ps-0/task.json"))["started_at"]
