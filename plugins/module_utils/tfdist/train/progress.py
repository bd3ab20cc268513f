# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""What the chief tells the world while it trains: status.json, history.csv, log lines, TensorBoard scalars."""

from __future__ import annotations

import csv
import os
import sys
import time

from .._json_files import now, write_json


def log(message):
    sys.stdout.write("[train %s] %s\n" % (time.strftime("%H:%M:%S"), message))
    sys.stdout.flush()


def format_progress(status):
    """The progress line of a status.json (the node's log and the watch on the controller print the same)."""
    step, target = status.get("step") or 0, status.get("target_steps") or 0
    pct = f" ({100.0 * step / target:.0f}%)" if target else ""
    parts = [f"step {step}/{target}{pct}"]
    if status.get("loss") is not None:
        parts.append(f"loss {status['loss']:.4f}")
    if status.get("examples_per_sec"):
        parts.append(f"{status['examples_per_sec']:.0f} examples/s")
    if status.get("eta_seconds") is not None:
        parts.append(f"ETA {status['eta_seconds']:.0f}s")
    return " | ".join(parts)


def write_scalar(tf, writer, tag, value, step):
    """A scalar for TensorBoard, with the low-level op: tf.summary.scalar is in the tensorboard package."""
    from tensorflow.core.framework import summary_pb2

    metadata = summary_pb2.SummaryMetadata()
    metadata.plugin_data.plugin_name = "scalars"
    with writer.as_default():
        tf.summary.write(tag, tf.constant(float(value), tf.float32), step=int(step), metadata=metadata)
    writer.flush()


class Progress:
    """status.json, history.csv and a log line, every status_interval seconds (chief only)."""

    chief = None  # the chief's Progress, so a failure can still be written to status.json

    def __init__(self, args):
        Progress.chief = self
        self.args = args
        self.strategy = args.strategy
        self.examples_per_step = args.batch_size
        self.status_path = os.path.join(args.work_dir, "status.json")
        self.history_path = os.path.join(args.work_dir, "history.csv")
        self.started_at = now()
        self.first_step_at = None
        self.first_step = None
        self.initial_step = None
        self.step = None
        self.loss = None  # mean training loss of the last status interval
        self.last_loss = None  # loss of the last finished chunk of steps
        self.losses = []
        self.rows = []  # (step, loss, time) of every finished chunk, for the loss curve
        self.last_write = 0.0
        self.tf = None  # TensorFlow, once imported, for --tensorboard_dir
        self.summaries = None
        self.write("starting")

    def summary(self, tag, value, step):
        if not (self.tf and self.args.tensorboard_dir) or value is None or step is None:
            return
        if self.summaries is None:  # not before the strategy: MultiWorkerMirrored must configure TF first
            self.summaries = self.tf.summary.create_file_writer(os.path.join(self.args.tensorboard_dir, "train"))
        write_scalar(self.tf, self.summaries, tag, value, step)

    def rate(self):
        """Steps per second since the first finished step (excludes start-up time)."""
        if self.first_step_at is None or self.step is None:
            return None
        elapsed = time.time() - self.first_step_at
        return (self.step - self.first_step) / elapsed if elapsed > 0 else None

    def snapshot(self, state):
        rate = self.rate()
        target = self.args.steps
        return {
            "state": state,
            "step": self.step,
            "target_steps": target,
            "initial_step": self.initial_step,
            "loss": self.loss,
            "examples_per_sec": round(rate * self.examples_per_step, 1) if rate else None,
            "steps_per_sec": round(rate, 2) if rate else None,
            "eta_seconds": round(max(0, target - self.step) / rate, 1) if rate else None,
            "started_at": self.started_at,
            "first_step_at": self.first_step_at,
            "updated_at": now(),
            "strategy": self.strategy,
        }

    def write(self, state, **extra):
        data = self.snapshot(state)
        data.update(extra)
        write_json(self.status_path, data, indent=1)
        self.last_write = time.time()
        return data

    def begin(self, initial_step):
        self.initial_step = self.step = initial_step
        self.write("running")

    def update(self, step, loss):
        """One finished chunk of steps; writes at most every status_interval seconds."""
        if self.first_step_at is None:
            self.first_step_at, self.first_step = now(), step
        self.step = step
        if loss is not None:
            self.last_loss = loss
            self.losses.append(loss)
            self.rows.append([step, round(loss, 5), now()])
        if time.time() - self.last_write >= self.args.status_interval:
            self.flush()

    def flush(self):
        if self.losses:
            self.loss = round(sum(self.losses) / len(self.losses), 5)
            self.losses = []
        if self.rows:
            new_file = not os.path.exists(self.history_path) or os.path.getsize(self.history_path) == 0
            with open(self.history_path, "a", newline="") as f:
                writer = csv.writer(f)
                if new_file:
                    writer.writerow(["step", "loss", "wall_time"])
                writer.writerows(self.rows)
            self.rows = []
        data = self.write("running")
        if self.first_step_at is None:
            return  # nothing trained in this run: no progress line
        self.summary("loss", self.loss, self.step)
        self.summary("examples_per_sec", data["examples_per_sec"], self.step)
        log(format_progress(data))
