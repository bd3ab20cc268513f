"""A task that dies mid-training fails the play within seconds, naming it and showing its log."""

import json
import os
import signal
import time

from ansible_cli import REPO, start_playbook
from processes import free_port_block, tf_processes


def test_dead_worker_fails_the_play_fast(cluster_name):
    base = free_port_block(4)
    deploy = start_playbook("playbooks/deploy.yml", f"cluster_name={cluster_name}", f"tf_port_base={base}",
                            "tf_train_steps=1000000")
    job_dir = os.path.join(REPO, ".cache", "run", cluster_name)
    status_path = os.path.join(job_dir, "status.json")
    try:
        deadline = time.time() + 300
        while time.time() < deadline:
            if os.path.exists(status_path):
                with open(status_path) as handle:
                    try:
                        if (json.load(handle).get("step") or 0) > 0:
                            break
                    except ValueError:
                        pass
            assert deploy.poll() is None, deploy.stdout.read()[-4000:]
            time.sleep(0.5)
        else:
            raise AssertionError("training never started")

        with open(os.path.join(job_dir, "tasks", "worker-1", "task.pid")) as handle:
            os.kill(int(handle.read().split()[0]), signal.SIGKILL)
        killed_at = time.time()
        out = deploy.communicate(timeout=120)[0]
        reaction = time.time() - killed_at
    finally:
        if deploy.poll() is None:
            deploy.kill()

    assert deploy.returncode != 0
    assert "TF task worker-1 on" in out and "Last lines of its log" in out, out[-4000:]
    assert reaction < 30, f"the play took {reaction:.0f}s to notice"

    # Nothing of the job keeps running unwatched.
    assert tf_processes(job_dir) == []
