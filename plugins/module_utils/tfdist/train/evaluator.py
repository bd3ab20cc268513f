# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""The evaluator task: a side-car that evaluates each new checkpoint of the chief on the held-out set."""

from __future__ import annotations

import csv
import os
import time

from .._json_files import now, read_json, write_json
from .job import raise_if_stopped
from .model import build_model, evaluate
from .progress import log, write_scalar


def run_evaluator(tf, keras, np, args, data):
    """Evaluate each new checkpoint; leave after the final one (evaluation.json, evaluation.csv)."""
    model = build_model(keras, data["x"].shape[1], args.hidden_units, data["num_classes"])
    step = tf.Variable(0, dtype=tf.int64, trainable=False)
    checkpoint = tf.train.Checkpoint(model=model, step=step)
    ckpt_dir = os.path.join(args.work_dir, "checkpoints")
    out_json = os.path.join(args.work_dir, "evaluation.json")
    out_csv = os.path.join(args.work_dir, "evaluation.csv")
    started = time.time()
    evaluated = None
    errors = 0
    summaries = tf.summary.create_file_writer(os.path.join(args.tensorboard_dir, "eval")) if args.tensorboard_dir else None
    log("evaluator watching %s" % ckpt_dir)
    while True:
        raise_if_stopped()
        latest = tf.train.latest_checkpoint(ckpt_dir)
        if latest and latest != evaluated:
            try:
                checkpoint.restore(latest).expect_partial()
                errors = 0
            except Exception as e:  # deleted under us by max_to_keep: try the next one
                errors += 1
                if errors >= 10:  # not a race: e.g. a checkpoint of another model
                    raise SystemExit("cannot restore %s: %s" % (latest, e))
                log("cannot read %s yet: %s" % (latest, e))
                time.sleep(1)
                continue
            accuracy, loss = evaluate(np, lambda b: tf.nn.softmax(model(b, training=False)),
                                      data["x_test"], data["y_test"])
            evaluated, at = latest, int(step.numpy())
            write_json(out_json, {"step": at, "accuracy": round(accuracy, 5), "loss": round(loss, 5),
                                  "checkpoint": latest, "updated_at": now()}, indent=1)
            new_file = not os.path.exists(out_csv)
            with open(out_csv, "a", newline="") as f:
                writer = csv.writer(f)
                if new_file:
                    writer.writerow(["step", "accuracy", "loss", "wall_time"])
                writer.writerow([at, round(accuracy, 5), round(loss, 5), now()])
            log("evaluated step %d: accuracy %.4f loss %.4f" % (at, accuracy, loss))
            if summaries:
                write_scalar(tf, summaries, "accuracy", accuracy, at)
                write_scalar(tf, summaries, "loss", loss, at)
            if at >= args.steps:
                return 0
        status = read_json(os.path.join(args.work_dir, "status.json")) or {}
        if (status.get("state") in ("done", "failed") and (status.get("updated_at") or 0) >= started
                and tf.train.latest_checkpoint(ckpt_dir) == evaluated):
            log("chief is %s; evaluator leaves" % status["state"])
            return 0
        time.sleep(args.eval_interval)
