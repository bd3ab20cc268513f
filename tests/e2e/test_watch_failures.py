"""A task that dies mid-training fails the play within seconds, naming it and showing its log."""

import json
import os
import signal
import time

from ansible_cli import REPO, run_playbook, start_playbook, tail
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


def test_a_chief_that_ends_at_once_fails_the_watch_naming_it_and_its_log(cluster_name, tmp_path):
    """A script that fails at its imports (tf_keras=true's multi-worker shape): the watch fails naming the chief and
    showing its log, rather than saying ok and leaving collect to find no results."""
    script = tmp_path / "train.py"
    # Only the chief fails (the others wait, as workers do for their chief): the watch must name it, whichever task a
    # busy machine would have seen end first had they all failed.
    script.write_text("import json, os, time\nprint('reading the data')\n"
                      "if json.loads(os.environ['TF_CONFIG'])['task']['type'] == 'chief':\n"
                      "    import no_such_module\n"
                      "time.sleep(600)\n")
    base = free_port_block(3)
    result = run_playbook("playbooks/deploy.yml", f"cluster_name={cluster_name}", f"tf_port_base={base}",
                          "tf_strategy=multi_worker_mirrored", "tf_workers=2", "tf_keras=true", f"tf_script={script}")
    assert result.returncode != 0
    out = result.stdout + result.stderr
    assert "TF task chief-0 on" in out and "exited with code 1" in out, tail(result)
    assert "ModuleNotFoundError: No module named 'no_such_module'" in out and "reading the data" in out, tail(result)
    assert "Note where the leader wrote its results" not in out, tail(result)  # collect never began
    # The waiting workers are stopped with the failed chief: nothing of the job keeps running (or paying).
    assert tf_processes(os.path.join(REPO, ".cache", "run", cluster_name)) == []
