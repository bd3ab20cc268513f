"""The training program's command line: flags over the job's settings, and the task's place in the cluster."""

import json

import pytest

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._supervisor import GONE_GRACE
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist.train import cli

# What the training role renders into a task's script (roles/training/templates/train.py.j2).
SETTINGS = {
    "job_name": "worker", "task_index": 1, "strategy": "parameter_server", "steps": 300, "batch_size": 64,
    "learning_rate": 0.01, "checkpoint_every": 50, "hidden_units": [64, 64], "data": "/data/digits.npz",
    "work_dir": "/var/lib/tfdist/job", "task_dir": "/var/lib/tfdist/job/tasks/worker-1",
    "checkpoint_url": "", "model_url": "", "tensorboard_dir": "", "gone_grace": 30.0,
}


def parse(*argv, **settings):
    return cli.parse_args(list(argv), dict(SETTINGS, **settings))


def test_the_job_settings_are_the_defaults_of_the_flags():
    args = parse()

    assert (args.strategy, args.steps, args.batch_size, args.learning_rate) == ("parameter_server", 300, 64, 0.01)
    assert (args.checkpoint_every, args.hidden_units, args.data) == (50, [64, 64], "/data/digits.npz")
    assert (args.work_dir, args.task_dir) == ("/var/lib/tfdist/job", "/var/lib/tfdist/job/tasks/worker-1")
    assert (args.checkpoint_url, args.model_url, args.tensorboard_dir) == ("", "", "")
    assert (args.steps_per_execution, args.max_in_flight, args.seed, args.test_fraction) == (10, 4, 42, 0.2)
    assert args.gone_grace == 30.0


def test_flags_win_over_the_settings():
    args = parse("--steps", "500", "--hidden_units", "32, 16", "--strategy", "multi_worker_mirrored",
                 "--model_url", "s3://bucket/models/")

    assert (args.steps, args.hidden_units, args.strategy) == (500, [32, 16], "multi_worker_mirrored")
    assert args.model_url == "s3://bucket/models"  # no trailing slash


def test_without_a_job_setting_its_flag_is_required(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.parse_args([], {})
    assert stop.value.code == 2
    err = capsys.readouterr().err
    for flag in ("--strategy", "--steps", "--batch_size", "--learning_rate", "--hidden_units", "--data", "--work_dir",
                 "--checkpoint_every"):
        assert flag in err

    args = cli.parse_args(["--strategy", "multi_worker_mirrored", "--steps", "10", "--batch_size", "8",
                           "--learning_rate", "0.1", "--hidden_units", "4", "--data", "d.npz", "--work_dir", "w",
                           "--checkpoint_every", "5"])
    assert args.steps == 10 and args.fallback_task == ("chief", 0) and args.task_dir == ""
    assert args.gone_grace == GONE_GRACE  # the servers' grace, one rule on both sides


def test_an_unknown_setting_is_named():
    with pytest.raises(SystemExit, match="unknown job settings: stepz"):
        cli.parse_args([], dict(SETTINGS, stepz=3))


@pytest.mark.parametrize("argv, message", [
    (["--steps", "0"], "--steps must be at least 1"),
    (["--batch_size", "-1"], "--batch_size must be at least 1"),
    (["--test_fraction", "1.5"], "--test_fraction must be between 0 and 1"),
    (["--hidden_units", "64,0"], "--hidden_units: hidden units must be positive integers"),
    (["--checkpoint_url", "ftp://host/ckpt"], "--checkpoint_url: ftp://host/ckpt must be a file://, hdfs://, webhdfs:// or s3:// folder URL"),
    (["--model_url", "/local/path"], "--model_url: /local/path must be a file://, hdfs://, webhdfs:// or s3:// folder URL"),
    (["--strategy", "mirrored"], "invalid choice: 'mirrored'"),
])
def test_bad_flags_are_named(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        parse(*argv)
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


def test_the_task_comes_from_tf_config_then_from_the_settings(monkeypatch):
    spec = {"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2222"], "ps": ["h3:2222"],
            "evaluator": ["h4:2222"]}
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": spec, "task": {"type": "ps", "index": 0}}))

    cluster, job, index = cli.resolve_cluster(parse())
    assert (job, index) == ("ps", 0)
    assert "evaluator" not in cluster  # evaluators are no cluster members
    assert json.loads(cli.os.environ["TF_CONFIG"])["task"] == {"type": "ps", "index": 0}

    monkeypatch.delenv("TF_CONFIG")
    assert cli.resolve_cluster(parse()) == ({}, "worker", 1)  # the task the role rendered


def test_classic_flags_replace_tf_config(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"chief": ["x:1"]}, "task": {"type": "chief"}}))
    args = parse("--chief_host", "h0:2222", "--worker_hosts", "h1:2222, h2:2222", "--ps_hosts", "h3:2222",
                 "--job_name", "master", "--task_index", "0")

    cluster, job, index = cli.resolve_cluster(args)

    assert cluster == {"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2222"], "ps": ["h3:2222"]}
    assert (job, index) == ("chief", 0)  # master is the old name of the chief


def test_a_task_outside_its_cluster_and_bad_tf_config_are_named(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"chief": ["h0:1"], "worker": ["h1:1"]},
                                                "task": {"type": "worker", "index": 3}}))
    with pytest.raises(SystemExit, match="task worker:3 is not in the cluster"):
        cli.resolve_cluster(parse())

    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(SystemExit, match="TF_CONFIG is not valid JSON"):
        cli.resolve_cluster(parse())
