"""What ends a job on cloud=local besides its end: a stall, a deadline, an exception; never running long.

Things are done to real TF processes: the chief's process group is stopped with SIGSTOP, as the kernel holds a task
on a hung disk or a debugger does.
"""

import os
import re
import signal
import threading
import time

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._json_files import read_json
from ansible_cli import REPO, start_playbook
from processes import free_port_block, tf_processes

STALL_MINUTES = 0.5  # 30 s: longer than a loaded machine's start-up, short enough for a test


class Output:
    """A playbook run's output, read as it comes, with the moment each line arrived."""

    def __init__(self, process):
        self.process = process
        self.lines = []
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self):
        for line in self.process.stdout:
            self.lines.append((time.time(), line))

    def text(self):
        return "".join(line for moment, line in self.lines)

    def first(self, pattern):
        """When the first line matching pattern arrived, None if none has."""
        return next((moment for moment, line in self.lines if re.search(pattern, line)), None)

    def wait_until(self, ready, what, timeout=600):
        deadline = time.time() + timeout
        while not ready():
            assert self.process.poll() is None, f"deploy ended before {what}:\n" + self.text()[-5000:]
            assert time.time() < deadline, f"never saw {what}"
            time.sleep(0.5)

    def finish(self, timeout=900):
        try:
            self.process.wait(timeout=timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
        self.reader.join(timeout=10)
        return self.text()


def deploy(cluster_name, *settings):
    base = free_port_block(4)
    return Output(start_playbook("playbooks/deploy.yml", f"cluster_name={cluster_name}", f"tf_port_base={base}",
                                 *settings))


def job_status(cluster_name):
    return read_json(os.path.join(REPO, ".cache", "run", cluster_name, "status.json")) or {}


def stop_chief(cluster_name):
    """SIGSTOP to every process of the chief's task (its process group), as a hung disk holds them."""
    record = read_json(os.path.join(REPO, ".cache", "run", cluster_name, "tasks", "chief-0", "task.json"))
    os.killpg(record["pid"], signal.SIGSTOP)
    return time.time()


def test_a_stopped_chief_fails_the_play_within_the_stall_time_naming_it_and_its_step(cluster_name):
    run = deploy(cluster_name, "tf_train_steps=1000000", f"tf_stall_minutes={STALL_MINUTES}")
    run.wait_until(lambda: (job_status(cluster_name).get("step") or 0) >= 300, "step 300")
    stopped_at = stop_chief(cluster_name)
    out = run.finish()

    assert run.process.returncode != 0
    match = re.search(r"TF task chief-0 on \S+ stalled at step (\d+)/1000000: no step for (\d+)s \(last step "
                      r"[0-9:]+; its process is stopped \(SIGSTOP\)\)", out)
    assert match, out[-5000:]
    assert int(match.group(1)) >= 300 and int(match.group(2)) >= STALL_MINUTES * 60
    named_after = run.first(r"stalled at step") - stopped_at
    print(f"SIGSTOP of the chief -> the play names the stall: {named_after:.1f} s (tf_stall_minutes={STALL_MINUTES})")
    assert named_after < STALL_MINUTES * 60 + 30, named_after
    # The stopped chief is not left frozen, holding its port and memory: nothing of the job runs.
    assert tf_processes(os.path.join(REPO, ".cache", "run", cluster_name)) == []


def test_a_stalled_job_is_restarted_from_its_checkpoint_and_finishes(cluster_name):
    steps = 1500  # the chief stops at step 300: the rest is the restarted run's
    run = deploy(cluster_name, f"tf_train_steps={steps}", f"tf_stall_minutes={STALL_MINUTES}", "tf_restart=on_failure")
    run.wait_until(lambda: (job_status(cluster_name).get("step") or 0) >= 300, "step 300")
    stopped_at = stop_chief(cluster_name)
    run.wait_until(lambda: (job_status(cluster_name).get("first_step_at") or 0) > stopped_at, "the job resuming")
    print(f"SIGSTOP of the chief -> training again: {job_status(cluster_name)['first_step_at'] - stopped_at:.1f} s")
    out = run.finish()

    assert run.process.returncode == 0, out[-5000:]
    assert "restart 1 of at most 3" in out, out[-5000:]
    summary = read_json(os.path.join(REPO, "artifacts", cluster_name, "summary.json"))
    assert summary["steps"] == steps and summary["initial_step"] >= 300, summary
    [restart] = summary["restarts"]
    assert [loss["task"] for loss in restart["losses"]] == ["chief-0"], restart
    assert re.match(rf"stalled at step \d+/{steps}: no step for \d+s \(last step [0-9:]+; its process is "
                    r"stopped \(SIGSTOP\)\)$", restart["losses"][0]["why"]), restart


def test_a_job_that_trains_longer_than_the_stall_time_is_never_stopped_for_running_long(cluster_name):
    stall_minutes = 0.2  # 12 s: the job trains several times as long, making progress all along
    run = deploy(cluster_name, "tf_train_steps=10000", f"tf_stall_minutes={stall_minutes}")
    out = run.finish()

    assert run.process.returncode == 0, out[-5000:]
    summary = read_json(os.path.join(REPO, "artifacts", cluster_name, "summary.json"))
    assert summary["steps"] == 10000 and summary["restarts"] == []
    trained = summary["seconds"]["training"]
    print(f"trained {trained:.0f} s with tf_stall_minutes={stall_minutes}")
    assert trained > 2 * stall_minutes * 60, summary["seconds"]


def test_a_deadline_stops_the_job_with_a_checkpoint_and_says_so(cluster_name):
    # The deadline counts from the launch: a minute outlasts the start-up of a loaded machine (the job trains when
    # it comes), and the job never reaches its target before it.
    run = deploy(cluster_name, "tf_train_steps=1000000", "tf_deadline=60s")
    out = run.finish()

    assert run.process.returncode != 0
    match = re.search(r"the job reached its deadline \(1m after [0-9:]+\) and was stopped at step (\d+)/1000000", out)
    assert match, out[-5000:]
    job_dir = os.path.join(REPO, ".cache", "run", cluster_name)
    assert tf_processes(job_dir) == []
    # The chief, stopped first, kept the steps since its last periodic checkpoint (or had just written one).
    with open(os.path.join(job_dir, "tasks", "chief-0", "task.log")) as handle:
        chief_log = handle.read()
    saved = re.findall(r"stopped at step (\d+): (?:checkpoint written|the last checkpoint holds it)", chief_log)
    assert saved and int(saved[-1]) >= int(match.group(1)), chief_log[-3000:]


def test_an_exception_whose_message_is_a_tensor_is_named_with_the_line_that_raised_it(cluster_name, tmp_path):
    script = tmp_path / "bad_logits.py"
    script.write_text(
        "import numpy as np\n"
        "\n"
        "\n"
        "def check(logits):\n"
        "    raise ValueError(f'logits out of range: {logits}')\n"
        "\n"
        "\n"
        "check(np.ones((80, 10)))\n")
    run = deploy(cluster_name, f"tf_script={script}", "tf_workers=1")
    out = run.finish(timeout=600)

    assert run.process.returncode != 0
    assert re.search(r"exited with code 1: ValueError: logits out of range: \[\[1\. 1\. .*\(raised at "
                     r"\S+\.py:5 in check: raise ValueError\(f'logits out of range: {logits}'\)\)", out), \
        out[-5000:]
