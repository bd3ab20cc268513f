# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""The end of a training run: evaluate, export model.keras, write result.json, copy both to --model_url."""

from __future__ import annotations

import os

from .. import _storage
from .._json_files import now, write_json
from .progress import log

FLAG = "--model_url"


def ensure_folders(args):
    """A bad --checkpoint_url or --model_url stops the job now, not after training."""
    for flag, url in (("--checkpoint_url", args.checkpoint_url), (FLAG, args.model_url)):
        if url:
            try:
                _storage.ensure_folder(url, flag)
            except _storage.StorageError as e:
                raise SystemExit(str(e))


def upload_results(args):
    """model.keras and result.json to --model_url."""
    try:
        fs, path = _storage.ensure_folder(args.model_url, FLAG)
    except _storage.StorageError as e:
        raise SystemExit(str(e))
    try:
        for name in ("model/model.keras", "result.json"):
            fs.put_file(os.path.join(args.work_dir, name), path + "/" + os.path.basename(name))
    except Exception as e:
        raise SystemExit("%s: %s: cannot write the model: %s" % (FLAG, args.model_url, e))
    log("model copied to %s" % args.model_url)


def finish(keras, np, args, data, state, progress, final_step, extra):
    """Evaluate, export the model, write result.json and the final status."""
    trained_at, rate, first = now(), progress.rate(), progress.first_step_at
    if state.mirror:
        state.mirror.close()
    accuracy, test_loss = state.export(keras, np, args, data)
    finished_at = now()
    result = {
        "steps": final_step,
        "initial_step": progress.initial_step,
        "target_steps": args.steps,
        "final_loss": round(progress.last_loss, 5) if progress.last_loss is not None else None,
        "test_loss": round(test_loss, 5),
        "accuracy": round(accuracy, 5),
        "examples_per_sec": round(rate * progress.examples_per_step, 1) if rate else None,
        "steps_per_sec": round(rate, 2) if rate else None,
        "training_seconds": round(trained_at - first, 3) if first else 0.0,  # first finished step to last
        "first_step_at": first,
        "finished_at": finished_at,
        "strategy": progress.strategy,
        "batch_size": args.batch_size,
        "data": args.data,
        "num_train_examples": int(len(data["x"])),
        "num_test_examples": int(len(data["x_test"])),
        "model_path": os.path.join(args.work_dir, "model", "model.keras"),
    }
    result.update(extra)
    write_json(os.path.join(args.work_dir, "result.json"), result, indent=1)
    if args.model_url:
        upload_results(args)
    progress.summary("held_out_accuracy", accuracy, final_step)
    progress.write("done", accuracy=result["accuracy"])
    log("done: step %d, held-out accuracy %.4f, model in %s" % (final_step, accuracy, result["model_path"]))
    return 0
