"""Who leads a job (the chief, or worker 0 without a chief): only the leader writes status.json.

The tasks below stop at their data (a missing file), before TensorFlow is imported.
"""

import json

import pytest

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _cluster
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist.train import job, progress


@pytest.mark.parametrize("task_type, index, spec, expected", [
    ("chief", 0, {"chief": ["h0:1"], "worker": ["h1:1"]}, True),
    ("worker", 0, {"chief": ["h0:1"], "worker": ["h1:1"]}, False),
    ("worker", 0, {"worker": ["h1:1", "h2:1"]}, True),
    ("worker", 1, {"worker": ["h1:1", "h2:1"]}, False),
    ("evaluator", 0, {"chief": ["h0:1"]}, False),
    ("chief", 0, {}, True),
])
def test_who_leads(task_type, index, spec, expected):
    assert _cluster.leads(task_type, index, spec) is expected


def run_task(tmp_path, monkeypatch, task_type, index, spec):
    work = tmp_path / ("%s-%d" % (task_type, index))
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": spec, "task": {"type": task_type, "index": index}}))
    monkeypatch.setattr(progress.Progress, "chief", None)
    settings = {"strategy": "multi_worker_mirrored", "steps": 10, "batch_size": 8, "learning_rate": 0.1,
                "checkpoint_every": 5, "hidden_units": [4], "data": str(tmp_path / "missing.npz"),
                "work_dir": str(work)}
    with pytest.raises(SystemExit, match="missing.npz does not exist"):
        job.main([], settings)
    return work


def test_worker_0_of_a_cluster_without_chief_leads(tmp_path, monkeypatch):
    spec = {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}
    leader = run_task(tmp_path, monkeypatch, "worker", 0, spec)
    other = run_task(tmp_path, monkeypatch, "worker", 1, spec)

    assert json.loads((leader / "status.json").read_text())["state"] == "starting"
    assert not (other / "status.json").exists()


def test_with_a_chief_worker_0_does_not_lead(tmp_path, monkeypatch):
    spec = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]}
    assert (run_task(tmp_path, monkeypatch, "chief", 0, spec) / "status.json").exists()
    assert not (run_task(tmp_path, monkeypatch, "worker", 0, spec) / "status.json").exists()


def test_a_stale_result_of_the_previous_run_is_removed_by_the_leader(tmp_path, monkeypatch):
    work = tmp_path / "chief-0"
    work.mkdir()
    (work / "result.json").write_text("{}")
    run_task(tmp_path, monkeypatch, "chief", 0, {"chief": ["127.0.0.1:1"]})
    assert not (work / "result.json").exists()
