"""What the chief reports while it trains: status.json snapshots and the history.csv loss curve."""

import csv
import json
from types import SimpleNamespace

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist.train import progress


def chief_progress(tmp_path, status_interval=0.0):
    args = SimpleNamespace(strategy="parameter_server", batch_size=64, work_dir=str(tmp_path), steps=300,
                           status_interval=status_interval, tensorboard_dir="")
    return progress.Progress(args)


def status(tmp_path):
    return json.loads((tmp_path / "status.json").read_text())


def test_status_json_says_starting_then_running_with_rate_and_eta(tmp_path, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(progress.time, "time", lambda: clock[0])
    monkeypatch.setattr(progress, "now", lambda: round(clock[0], 3))
    tracker = chief_progress(tmp_path)
    assert progress.Progress.chief is tracker  # a failure can still be written
    assert status(tmp_path)["state"] == "starting" and status(tmp_path)["step"] is None

    tracker.begin(100)  # resumed at step 100
    first = status(tmp_path)
    assert (first["state"], first["step"], first["initial_step"], first["target_steps"]) == ("running", 100, 100, 300)
    assert first["examples_per_sec"] is None and first["eta_seconds"] is None

    tracker.update(110, 2.0)
    clock[0] += 2.0
    tracker.update(150, 1.0)  # 40 steps in 2 s after the first finished chunk
    snapshot = tracker.snapshot("running")
    assert snapshot["steps_per_sec"] == 20.0 and snapshot["examples_per_sec"] == 1280.0
    assert snapshot["eta_seconds"] == 7.5  # 150 steps left at 20/s
    assert status(tmp_path)["loss"] == 1.0  # mean of the last interval


def test_history_csv_is_the_loss_curve_appended_across_runs(tmp_path):
    tracker = chief_progress(tmp_path, status_interval=3600)
    tracker.begin(0)
    for step, loss in ((10, 2.5), (20, 1.5), (30, 1.0)):
        tracker.update(step, loss)
    tracker.update(40, None)  # a lost worker's chunk: no loss
    tracker.flush()
    chief_progress(tmp_path, status_interval=3600).update(50, 0.5)  # a relaunch
    progress.Progress.chief.flush()

    with open(tmp_path / "history.csv") as f:
        rows = list(csv.DictReader(f))
    assert [(int(r["step"]), float(r["loss"])) for r in rows] == [(10, 2.5), (20, 1.5), (30, 1.0), (50, 0.5)]
    assert status(tmp_path)["loss"] == 0.5


def test_a_final_write_carries_extra_fields(tmp_path):
    tracker = chief_progress(tmp_path)
    tracker.write("failed", error="--data: s3://b/d.npz: the bucket does not exist")
    assert status(tmp_path)["state"] == "failed" and status(tmp_path)["error"].startswith("--data: ")


def test_the_log_prints_the_progress_line_the_watch_prints(tmp_path, monkeypatch, capsys):
    clock = [1000.0]
    monkeypatch.setattr(progress.time, "time", lambda: clock[0])
    monkeypatch.setattr(progress, "now", lambda: round(clock[0], 3))
    tracker = chief_progress(tmp_path)
    tracker.begin(0)
    tracker.update(10, 2.0)
    clock[0] += 2.0
    tracker.update(60, 0.5)  # 50 steps in 2 s: 25 steps/s, 1600 examples/s, 240 steps left
    assert capsys.readouterr().out.rstrip().endswith("] step 60/300 (20%) | loss 0.5000 | 1600 examples/s | ETA 10s")
    assert progress.format_progress(status(tmp_path)) == "step 60/300 (20%) | loss 0.5000 | 1600 examples/s | ETA 10s"
    assert progress.format_progress({"step": None, "target_steps": 0}) == "step 0/0"
