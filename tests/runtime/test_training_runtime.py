"""The training job for real: TF tasks as local processes under the supervisor.

Each cluster is laid down as the training role does it (the package tfdist, each task's train.py rendered
from roles/training/templates/train.py.j2 with the role's defaults; see local_cluster.py) and started with
TF_CONFIG on free localhost ports.
"""

import csv
import json
import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest

import local_cluster as lc
from processes import alive

EXPECTED_RESULT_KEYS = {"steps", "initial_step", "final_loss", "accuracy", "examples_per_sec", "training_seconds",
                        "first_step_at", "finished_at", "strategy", "num_workers", "num_ps"}
TIMEOUT = 180


def read_json(path):
    with open(path) as f:
        return json.load(f)


def held_out_digits():
    """The job's held-out split: seed 42, 20 % (see load_data in plugins/module_utils/tfdist/train/data.py)."""
    with np.load(lc.DIGITS) as d:
        x, y = d["x"], d["y"]
    order = np.random.RandomState(42).permutation(len(x))
    n_test = int(round(len(x) * 0.2))
    return x[order[:n_test]], y[order[:n_test]]


def predict_in_fresh_python(model_path, x, tmp_path):
    """Load model.keras with one load_model call in a new interpreter (only TF and Keras, no job code)."""
    np.save(tmp_path / "x.npy", x)
    code = ("import sys, numpy as np, keras\n"
            "model = keras.models.load_model(sys.argv[1])\n"
            "np.save(sys.argv[3], model.predict(np.load(sys.argv[2]), verbose=0))\n")
    subprocess.run([sys.executable, "-c", code, model_path, str(tmp_path / "x.npy"), str(tmp_path / "p.npy")],
                   check=True, capture_output=True, timeout=120)
    return np.load(tmp_path / "p.npy")


def run_job(work_dir, tasks, env=None, **training):
    """The job to its leader's end, its servers left the role's grace (an evaluator's last evaluation needs it)."""
    dirs = lc.start_cluster(str(work_dir), tasks, env=env, **training)
    chief = lc.wait_exit(dirs["chief-0"], TIMEOUT)
    assert chief["returncode"] == 0, lc.log_tail(dirs["chief-0"])
    return dirs


@pytest.fixture(scope="module")
def ps_job(tmp_path_factory):
    """1 chief + 2 workers + 1 ps, parameter_server, 300 steps."""
    work = tmp_path_factory.mktemp("ps-job")
    tasks = lc.layout(workers=2, ps=1)
    dirs = {}
    try:
        dirs = run_job(work, tasks, steps=300)
        yield SimpleNamespace(work=work, dirs=dirs, tasks=tasks)
    finally:
        lc.stop_all(dirs)


def test_parameter_server_job_exports_a_model_that_predicts_well(ps_job, tmp_path):
    result = read_json(ps_job.work / "result.json")
    assert EXPECTED_RESULT_KEYS <= set(result)
    assert (result["strategy"], result["num_workers"], result["num_ps"]) == ("parameter_server", 2, 1)
    assert (result["steps"], result["initial_step"]) == (300, 0)
    assert result["examples_per_sec"] > 0 and result["training_seconds"] > 0
    assert result["finished_at"] >= result["first_step_at"]

    x_test, y_test = held_out_digits()
    probs = predict_in_fresh_python(str(ps_job.work / "model" / "model.keras"), x_test, tmp_path)
    assert probs.shape == (len(x_test), 10)
    assert np.allclose(probs.sum(axis=1), 1.0, atol=1e-4)  # class probabilities
    accuracy = float(np.mean(probs.argmax(axis=1) == y_test))
    assert accuracy > 0.8, accuracy  # chance is 0.1
    assert abs(accuracy - result["accuracy"]) < 1e-3

    status = read_json(ps_job.work / "status.json")
    assert (status["state"], status["step"], status["target_steps"]) == ("done", 300, 300)
    with open(ps_job.work / "history.csv") as f:
        rows = list(csv.DictReader(f))
    assert rows and int(rows[-1]["step"]) == 300 and float(rows[-1]["loss"]) < float(rows[0]["loss"])


def test_both_workers_trained_on_their_own_shard(ps_job):
    worker_steps = read_json(ps_job.work / "result.json")["worker_steps"]
    assert len(worker_steps) == 2 and sum(worker_steps) == 300
    assert min(worker_steps) > 0  # each shard id is held by one worker: both ran steps


def test_servers_are_stopped_by_their_supervisor_after_the_chief(ps_job):
    servers = [name for name in ps_job.dirs if not name.startswith("chief")]
    assert wait_all_ended(ps_job.dirs, servers, 60)
    for name in servers:
        st = lc.status(ps_job.dirs[name])
        assert (st["returncode"], st["reason"]) == (0, "chief finished"), name
        assert not alive(st["pid"]) and not alive(st["supervisor_pid"]), name


def test_relaunch_with_a_larger_target_resumes_from_the_checkpoint(ps_job):
    before = read_json(ps_job.work / "result.json")
    assert wait_all_ended(ps_job.dirs, list(ps_job.dirs), 60)

    run_job(ps_job.work, lc.layout(workers=2, ps=1), steps=before["steps"] + 100)

    after = read_json(ps_job.work / "result.json")
    assert after["initial_step"] == before["steps"]
    assert after["steps"] == before["steps"] + 100
    assert after["accuracy"] > 0.8
    assert sum(after["worker_steps"]) == 100


def test_parameter_server_job_without_a_chief_is_coordinated_by_worker_0(tmp_path):
    """A classic cluster (workers and a ps, no chief): worker 0 coordinates, the other workers compute."""
    tasks = lc.layout(workers=3, ps=1, chiefs=0)
    dirs = {}
    try:
        dirs = lc.start_cluster(str(tmp_path), tasks, gone_grace=3, steps=120)
        leader = lc.wait_exit(dirs["worker-0"], TIMEOUT)
        assert leader["returncode"] == 0, lc.log_tail(dirs["worker-0"])
        result = read_json(tmp_path / "result.json")
        assert (result["strategy"], result["num_workers"], result["num_ps"], result["steps"]) == (
            "parameter_server", 2, 1, 120)
        assert min(result["worker_steps"]) > 0  # worker-1 and worker-2 both computed
        assert (tmp_path / "model" / "model.keras").is_file()
        servers = ["worker-1", "worker-2", "ps-0"]
        assert wait_all_ended(dirs, servers, 60)
        for name in servers:
            st = lc.status(dirs[name])
            assert (st["returncode"], st["reason"]) == (0, "chief finished"), name
    finally:
        lc.stop_all(dirs)


def test_multi_worker_mirrored_job_without_a_chief(tmp_path):
    """Two workers and no chief: worker 0 leads, writes the model and the result."""
    tasks = lc.layout(workers=2, ps=0, chiefs=0)
    dirs = {}
    try:
        dirs = lc.start_cluster(str(tmp_path), tasks, gone_grace=3, steps=60, strategy="multi_worker_mirrored")
        for name in ("worker-0", "worker-1"):
            st = lc.wait_exit(dirs[name], TIMEOUT)
            assert st["returncode"] == 0, lc.log_tail(dirs[name])
        result = read_json(tmp_path / "result.json")
        assert (result["strategy"], result["num_workers"], result["steps"]) == ("multi_worker_mirrored", 2, 60)
        assert (tmp_path / "model" / "model.keras").is_file()
    finally:
        lc.stop_all(dirs)


def test_multi_worker_mirrored_job_with_an_evaluator(tmp_path):
    work = tmp_path / "mwms"
    tasks = lc.layout(workers=1, ps=0, evaluators=1)
    dirs = {}
    try:
        dirs = run_job(work, tasks, strategy="multi_worker_mirrored", steps=150, checkpoint_every=50)
        result = read_json(work / "result.json")
        assert (result["strategy"], result["num_workers"], result["num_ps"]) == ("multi_worker_mirrored", 2, 0)
        assert result["steps"] == 150 and result["accuracy"] > 0.8

        worker = lc.wait_exit(dirs["worker-0"], 60)
        assert (worker["returncode"], worker["reason"]) == (0, "exited")  # it ends by itself
        evaluator = lc.wait_exit(dirs["evaluator-0"], 60)
        assert evaluator["returncode"] == 0, lc.log_tail(dirs["evaluator-0"])
        evaluation = read_json(work / "evaluation.json")
        assert evaluation["step"] == 150 and evaluation["accuracy"] > 0.8

        x_test, y_test = held_out_digits()
        probs = predict_in_fresh_python(str(work / "model" / "model.keras"), x_test, tmp_path)
        assert float(np.mean(probs.argmax(axis=1) == y_test)) > 0.8

        # Relaunch at the same target: resumes at the end, trains nothing, exports again.
        os.remove(work / "model" / "model.keras")
        run_job(work, lc.layout(workers=1, ps=0), strategy="multi_worker_mirrored", steps=150)
        again = read_json(work / "result.json")
        assert (again["initial_step"], again["steps"]) == (150, 150)
        assert os.path.exists(work / "model" / "model.keras")
    finally:
        lc.stop_all(dirs)


def test_a_stopped_multi_worker_mirrored_job_keeps_its_last_step_and_resumes_there(tmp_path):
    """A stop between periodic checkpoints (a deadline; the watch stops the leader first, then the rest) writes a
    checkpoint of the step the chief reached, and a relaunch resumes at that step."""
    work = tmp_path / "mwms-stop"
    tasks = lc.layout(workers=1, ps=0)
    dirs = lc.start_cluster(str(work), tasks, strategy="multi_worker_mirrored", steps=100000, checkpoint_every=50000)
    try:
        reached = wait_for_step(work, 300, TIMEOUT)
        assert 300 <= reached < 50000, "chief at step %s; log:\n%s" % (reached, lc.log_tail(dirs["chief-0"]))
        lc.stop_all(dirs)  # chief-0 first, as the watch does
        chief_log = lc.log_tail(dirs["chief-0"], 400)
        [stopped_at] = [int(line.split("stopped at step ")[1].split(":")[0]) for line in chief_log.splitlines()
                        if "stopped at step " in line and "checkpoint written" in line] or [None]
        assert stopped_at is not None and stopped_at >= reached, chief_log
        assert (work / "checkpoints" / ("ckpt-%d.index" % stopped_at)).is_file(), os.listdir(work / "checkpoints")
        # Each one left through its stop (128 + SIGTERM), none by the SIGKILL that follows a stop ignored: the worker
        # too, whose step failed as the chief left first, and which waited for its own stop (no failure of its own).
        for name in dirs:
            ended = lc.status(dirs[name])
            assert (ended["returncode"], ended["reason"]) == (143, "stopped"), (name, lc.log_tail(dirs[name]))
            assert "sending SIGKILL" not in lc.log_tail(dirs[name], 400), lc.log_tail(dirs[name])

        dirs = run_job(work, tasks, strategy="multi_worker_mirrored", steps=stopped_at + 20)
        result = read_json(work / "result.json")
        assert (result["initial_step"], result["steps"]) == (stopped_at, stopped_at + 20), result
    finally:
        lc.stop_all(dirs)


def test_chief_finishes_when_a_worker_is_killed_mid_run(tmp_path):
    work = tmp_path / "kill"
    dirs = lc.start_cluster(str(work), lc.layout(workers=2, ps=1), gone_grace=3, steps=1500)
    try:
        reached = wait_for_step(work, 200, TIMEOUT)
        # The kill must happen mid-run: after step 200, before the last step.
        assert 200 <= reached < 1500, "chief at step %s; log:\n%s" % (reached, lc.log_tail(dirs["chief-0"]))
        victim = lc.status(dirs["worker-1"])
        assert victim["running"], victim
        os.kill(victim["pid"], signal.SIGKILL)

        chief = lc.wait_exit(dirs["chief-0"], TIMEOUT)
        assert chief["returncode"] == 0, lc.log_tail(dirs["chief-0"])
        result = read_json(work / "result.json")
        assert result["steps"] >= 1500 and result["accuracy"] > 0.8
        killed = lc.status(dirs["worker-1"])
        assert (killed["returncode"], killed["reason"]) == (-9, "killed by signal 9")
    finally:
        lc.stop_all(dirs)


def test_bad_data_fails_fast_with_the_reason_in_status_json(tmp_path):
    dirs = lc.prepare(str(tmp_path), lc.layout(workers=0, ps=0))
    script = os.path.join(dirs["chief-0"], "train.py")

    out = subprocess.run([sys.executable, script, "--data", str(tmp_path / "missing.npz")],
                         capture_output=True, text=True, timeout=120, check=False)

    assert out.returncode == 1
    assert "missing.npz does not exist" in out.stderr
    status = read_json(tmp_path / "status.json")
    assert status["state"] == "failed" and "missing.npz" in status["error"]


def test_a_bad_flag_is_named_and_fails_with_exit_code_2(tmp_path):
    dirs = lc.prepare(str(tmp_path), lc.layout(workers=0, ps=0))

    out = subprocess.run([sys.executable, os.path.join(dirs["chief-0"], "train.py"), "--steps", "0"],
                         capture_output=True, text=True, timeout=120, check=False)

    assert out.returncode == 2 and "--steps must be at least 1" in out.stderr


def wait_for_step(work, step, timeout):
    """The chief's step once status.json says it reached `step` (or the last step seen at the timeout)."""
    deadline = time.time() + timeout
    seen = 0
    while time.time() < deadline:
        status = read_json(work / "status.json") if (work / "status.json").exists() else {}
        seen = status.get("step") or 0
        if seen >= step:
            return seen
        time.sleep(0.2)
    return seen


def wait_all_ended(dirs, names, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not any(lc.status(dirs[n])["running"] for n in names):
            return True
        time.sleep(0.5)
    return False
