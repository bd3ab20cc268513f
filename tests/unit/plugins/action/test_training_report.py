"""tfdist.cluster.training_report: the run's summary.json and its loss curve, written again only when they change."""

import importlib.util
import json
import os
import sys

import jsonschema
import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.tfdist.cluster.plugins.action import training_report
from ansible_collections.tfdist.cluster.plugins.plugin_utils._outcome import OUTCOMES

SUMMARY_SCHEMA = os.path.join(os.path.dirname(__file__), *[os.pardir] * 4, "docs", "schemas", "summary.schema.json")


@pytest.fixture
def report(tmp_path):
    def run_action(warnings=None, **options):
        params = {name: spec.get("default") for name, spec in training_report.ARGUMENT_SPEC.items()}
        params.update(artifacts_dir=str(tmp_path), cluster="mnist", cloud="local",
                      clock={"deploy_started": 100.0, "provisioned": 102.5, "installed": 104.0, "launched": 105.0})
        params.update(options)
        return training_report.report(params, (warnings if warnings is not None else []).append)
    return run_action


@pytest.fixture
def finished_run(tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "model.keras").write_bytes(b"model")
    (tmp_path / "result.json").write_text(json.dumps({"steps": 300, "first_step_at": 110.0, "strategy": "parameter_server"}))
    (tmp_path / "history.csv").write_text("step,loss,time\n100,2.1,1.0\n200,0.9,2.0\n300,0.4,3.0\n")
    return tmp_path


def test_the_summary_and_the_loss_curve_are_written_once(report, finished_run):
    first = report()
    assert first["changed"] and first["summary"]["steps"] == 300 and first["missing"] == []
    assert first["summary"]["seconds"]["provision"] == 2.5 and first["summary"]["seconds"]["launch_to_first_step"] == 5.0
    assert json.loads((finished_run / "summary.json").read_text())["cluster"] == "mnist"
    curve = finished_run / "loss.png"
    if importlib.util.find_spec("matplotlib"):
        assert first["loss_curve_path"] == str(curve) and curve.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    else:  # ansible-test's units virtualenv: without the optional library, no curve and no path to one
        assert first["loss_curve_path"] == "" and not curve.exists()

    drawn = os.path.getmtime(curve) if curve.exists() else None
    # A re-run that launched nothing keeps the phases of the run's own deploy.
    second = report(clock={}, leader_run="1795659544.7")
    assert second["changed"] and second["summary"]["seconds"]["provision"] == 2.5
    # One that collected nothing either (the controller held the results) keeps the run the summary names.
    third = report(clock={})
    assert not third["changed"] and third["summary"]["leader_run"] == "1795659544.7"
    assert (os.path.getmtime(curve) if curve.exists() else None) == drawn


def test_a_missing_result_is_named(report, tmp_path):
    with pytest.raises(AnsibleActionFail, match="^artifacts_dir: no result.json in %s" % tmp_path):
        report()


def test_a_script_of_your_own_may_write_no_result(report, tmp_path):
    warnings = []
    result = report(warnings=warnings, required=False, source="chief-host:/var/lib/tfdist/mnist")
    assert not result["summary"].get("steps") and result["model_path"] == ""
    assert result["missing"] == ["chief-host:/var/lib/tfdist/mnist/result.json", "chief-host:/var/lib/tfdist/mnist/model/model.keras"]
    assert [w for w in warnings if w.startswith("your script wrote no result.json: looked for it in chief-host:")]


def test_a_broken_matplotlib_costs_the_curve_not_the_summary(report, finished_run, monkeypatch):
    def broken(*_args):
        raise ImportError("libfreetype.so.6: cannot open shared object file")

    warnings = []
    monkeypatch.setattr(training_report, "draw_loss_curve", broken)
    result = report(warnings=warnings)
    assert result["summary"]["steps"] == 300
    assert result["loss_curve_path"] == "" and not (finished_run / "loss.png").exists()
    assert [w for w in warnings if "matplotlib could not draw the loss curve" in w and "libfreetype" in w]


def test_without_matplotlib_the_summary_is_written_and_the_report_says_how_to_draw_the_curve(
        report, finished_run, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` fails as if it were not installed
    warnings = []
    result = report(warnings=warnings)
    assert result["changed"] and json.loads((finished_run / "summary.json").read_text())["steps"] == 300
    assert result["loss_curve_path"] == "" and not (finished_run / "loss.png").exists()
    assert warnings == [training_report.NO_MATPLOTLIB] and "`pip install matplotlib`" in warnings[0]


def test_the_summary_has_its_schema_version_and_outcome_and_matches_its_schema(report, finished_run):
    summary = json.loads((finished_run / report()["summary_path"]).read_text())
    assert summary["schema_version"] == 1 and summary["outcome"] == "success" and "success" in OUTCOMES
    with open(SUMMARY_SCHEMA) as handle:
        jsonschema.validate(summary, json.load(handle))


def test_the_message_tells_how_the_run_went_and_where_its_results_are(report, finished_run, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    (finished_run / "result.json").write_text(json.dumps(
        {"steps": 300, "initial_step": 100, "final_loss": 0.12, "accuracy": 0.96, "examples_per_sec": 2500.0}))
    lost = {"task": "worker-1", "host": "n-1", "why": "its node stopped answering", "node_gone": True}
    message = report(restarts=[{"restart": 1, "losses": [lost], "step": 812, "target_steps": 4000}],
                     model_urls=["s3://models/mnist", "hdfs:///models/mnist"], checkpoint_url="s3://ckpt/mnist",
                     tensorboard=True, leader_address="10.0.0.5", tensorboard_port=6006)["message"]
    assert message == [
        "cluster mnist on local: 300 steps (resumed from 100), final loss 0.12, held-out accuracy 0.96,"
        " 2500.0 examples/s",
        "restarts: lost worker-1 on n-1 (its node stopped answering) at step 812/4000",
        f"model: {finished_run}/model/model.keras",
        f"summary: {finished_run}/summary.json",
        "loss curve: not drawn",
        "model also at: s3://models/mnist, hdfs:///models/mnist",
        "checkpoints: s3://ckpt/mnist",
        "TensorBoard: http://10.0.0.5:6006 (runs until destroy)",
    ]


def test_the_message_says_what_a_run_did_not_have_and_how_to_get_it(report, tmp_path):
    message = report(required=False)["message"]
    assert message == [
        "cluster mnist on local: ? steps (resumed from 0), final loss ?, held-out accuracy ?, ? examples/s",
        "restarts: none",
        "model: none written by your script",
        f"summary: {tmp_path}/summary.json",
        "loss curve: not drawn",
        "model also at: nowhere else (set tf_model_url)",
        "checkpoints: on the leader only (set tf_checkpoint_url)",
        "TensorBoard: off (set tf_tensorboard=true)",
    ]
