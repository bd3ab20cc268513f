"""The training job's own storage: checkpoints and the model at URLs, TensorBoard event files.

Real TF tasks as local processes (see local_cluster.py); S3 is the moto emulator's.
"""

import json
import subprocess
import sys

import numpy as np
import pytest

import local_cluster as lc
from test_training_runtime import TIMEOUT, held_out_digits, predict_in_fresh_python, read_json, run_job

READ_EVENTS = """
import json, sys, glob
import tensorflow as tf
out = {}
for path in sorted(glob.glob(sys.argv[1] + "/*/events.out.tfevents.*")):
    run = path.split("/")[-2]
    for event in tf.compat.v1.train.summary_iterator(path):
        for value in event.summary.value:
            out.setdefault(run + "/" + value.tag, []).append([event.step, float(tf.make_ndarray(value.tensor))])
print(json.dumps(out))
"""


def scalars(logdir):
    """{run/tag: [[step, value], ...]} of TensorBoard event files, read with TensorFlow's own reader."""
    out = subprocess.run([sys.executable, "-c", READ_EVENTS, str(logdir)], capture_output=True, text=True,
                         check=True, timeout=120)
    return json.loads(out.stdout)


@pytest.fixture
def bucket(ec2_emulator):
    """An S3 bucket on the emulator."""
    ec2_emulator.boto3_client("s3").create_bucket(Bucket="jobs")
    return ec2_emulator.boto3_client("s3")


@pytest.fixture
def aws_env(ec2_emulator):
    """The standard AWS variables of the emulator, for the tasks' own environment (as training_env gives them): a task
    inherits none from the process that starts it."""
    return ec2_emulator.env


def keys(s3, prefix):
    return sorted(o["Key"][len(prefix):] for o in s3.list_objects_v2(Bucket="jobs", Prefix=prefix).get("Contents", []))


def test_checkpoints_and_model_at_a_url_let_a_new_cluster_resume(bucket, aws_env, tmp_path):
    urls = {"checkpoint_url": "s3://jobs/run-1/checkpoints", "model_url": "s3://jobs/run-1/model"}
    first = tmp_path / "first-cluster"
    dirs = {}
    try:
        dirs = run_job(first, lc.layout(workers=2, ps=1), steps=400, checkpoint_every=50, env=aws_env, **urls)
    finally:
        lc.stop_all(dirs)

    # The chief's newest --keep_checkpoints (3) checkpoints and their state file; nothing rotated out stays.
    stored = keys(bucket, "run-1/checkpoints/")
    assert stored == sorted(p.name for p in (first / "checkpoints").iterdir())
    assert "checkpoint" in stored and "ckpt-400.index" in stored
    assert len({k.split(".")[0] for k in stored if k.startswith("ckpt-")}) == 3
    assert keys(bucket, "run-1/model/") == ["model.keras", "result.json"]

    # The model fetched back from the bucket loads and predicts.
    bucket.download_file("jobs", "run-1/model/model.keras", str(tmp_path / "model.keras"))
    x_test, y_test = held_out_digits()
    probs = predict_in_fresh_python(str(tmp_path / "model.keras"), x_test, tmp_path)
    assert float(np.mean(probs.argmax(axis=1) == y_test)) > 0.8

    # A new cluster (an empty work folder) resumes from the bucket, not from step 0.
    second = tmp_path / "second-cluster"
    try:
        dirs = run_job(second, lc.layout(workers=2, ps=1), steps=500, checkpoint_every=50, env=aws_env, **urls)
    finally:
        lc.stop_all(dirs)
    result = read_json(second / "result.json")
    assert (result["initial_step"], result["steps"]) == (400, 500)
    assert sum(result["worker_steps"]) == 100
    assert "ckpt-500.index" in keys(bucket, "run-1/checkpoints/")
    assert json.loads(bucket.get_object(Bucket="jobs", Key="run-1/model/result.json")["Body"].read())["steps"] == 500


def test_a_bucket_that_does_not_exist_stops_the_job_before_training(bucket, aws_env, tmp_path):
    tasks = lc.layout(workers=0, ps=0)
    dirs = lc.start_cluster(str(tmp_path), tasks, strategy="multi_worker_mirrored", steps=20,
                            model_url="s3://no-such-bucket/m", env=aws_env)
    try:
        chief = lc.wait_exit(dirs["chief-0"], TIMEOUT)
    finally:
        lc.stop_all(dirs)
    assert chief["returncode"] == 1
    status = read_json(tmp_path / "status.json")
    assert status["state"] == "failed", status
    assert status["error"] == "--model_url: s3://no-such-bucket/m: the bucket 'no-such-bucket' does not exist"
    assert status["step"] is None  # stopped before training
    assert "no-such-bucket" not in [b["Name"] for b in bucket.list_buckets()["Buckets"]]  # not made on the way


def test_tensorboard_gets_the_training_loss_and_the_evaluator_accuracy(tmp_path):
    work = tmp_path / "job"
    logdir = work / "tensorboard"  # where the role points the job with training_tensorboard
    tasks = lc.layout(workers=1, ps=0, evaluators=1)
    dirs = {}
    try:
        dirs = run_job(work, tasks, strategy="multi_worker_mirrored", steps=200, checkpoint_every=50,
                       tensorboard=True)
        assert lc.wait_exit(dirs["evaluator-0"], 60)["returncode"] == 0, lc.log_tail(dirs["evaluator-0"])
    finally:
        lc.stop_all(dirs)

    found = scalars(logdir)
    loss = found["train/loss"]
    assert loss[-1][0] == 200 and loss[-1][1] < loss[0][1]  # the curve TensorBoard draws goes down
    assert found["train/held_out_accuracy"] == [[200, pytest.approx(read_json(work / "result.json")["accuracy"], abs=1e-4)]]
    assert found["eval/accuracy"][-1][0] == 200 and found["eval/accuracy"][-1][1] > 0.8


def test_data_at_a_url_is_read_again_when_it_changes(bucket, aws_env, tmp_path):
    with np.load(lc.DIGITS) as digits:
        x, y = digits["x"], digits["y"]
    for rows, steps in ((len(x), 20), (1000, 40)):  # the same URL, new content on the second run
        buffer = tmp_path / "d.npz"
        np.savez(buffer, x=x[:rows], y=y[:rows])
        bucket.upload_file(str(buffer), "jobs", "datasets/d.npz")
        dirs = {}
        try:
            dirs = run_job(tmp_path / "job", lc.layout(workers=0, ps=0), strategy="multi_worker_mirrored",
                           steps=steps, data="s3://jobs/datasets/d.npz", env=aws_env)
        finally:
            lc.stop_all(dirs)
        result = read_json(tmp_path / "job" / "result.json")
        assert result["num_train_examples"] + result["num_test_examples"] == rows
