# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""One task of the training job, from its command line to its exit code."""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback

from .._cluster import coordinated, leads
from .cli import parse_args, resolve_cluster
from .data import load_data
from .progress import Progress, log
from .results import ensure_folders


def main(argv=None, settings=None):
    """Run this task (chief, worker, ps or evaluator); returns its exit code."""
    args = parse_args(argv, settings)
    cluster, job, index = resolve_cluster(args)
    is_chief = leads(job, index, cluster)
    if args.strategy == "parameter_server" and cluster:
        # Without a chief, worker 0 coordinates and the other workers compute (one rule: _cluster.coordinated).
        cluster, job, index = coordinated(cluster, job, index)
        os.environ["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": job, "index": index}})
    os.environ.setdefault("GRPC_FAIL_FAST", "use_caller")  # TF's advice for parameter-server clusters
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    log("task %s:%d, strategy %s, cluster %s" % (job, index, args.strategy, json.dumps(cluster) or "none"))

    if job in ("ps", "worker") and args.strategy == "parameter_server":
        import tensorflow as tf

        from .strategies import run_server

        return run_server(tf, cluster, job, index)

    os.makedirs(args.work_dir, exist_ok=True)
    if args.task_dir:
        os.makedirs(args.task_dir, exist_ok=True)
    progress = None
    if is_chief:
        # A stale result of the previous run must not pass for this run's.
        try:
            os.remove(os.path.join(args.work_dir, "result.json"))
        except FileNotFoundError:
            pass
        progress = Progress(args)
        ensure_folders(args)  # a bad URL stops the job now, not after training

    import numpy as np

    data = load_data(args, np)  # before importing TensorFlow: bad data fails in a second
    log("data %s: %d train / %d held-out examples, %d features, %d classes" % (
        data["path"], len(data["x"]), len(data["x_test"]), data["x"].shape[1], data["num_classes"]))

    import tensorflow as tf
    import keras

    from .evaluator import run_evaluator
    from .strategies import train_parameter_server, train_synchronous

    if progress:
        progress.tf = tf
    if job == "evaluator":
        return run_evaluator(tf, keras, np, args, data)
    if args.strategy == "parameter_server" and cluster:
        return train_parameter_server(tf, keras, np, args, data, cluster, progress)
    return train_synchronous(tf, keras, np, args, data, cluster, progress)


class Terminated(BaseException):
    """SIGTERM (a stop from the supervisor): leave through the failure path, exit 128+signal."""


# The signal a stop came with, once one came. The handler's exception is lost when the signal finds Python in a
# __del__ method (TensorFlow's objects have many; Python prints "Exception ignored in ..." and goes on): the training
# loops look here too, between steps, so that a stop is never trained through.
stop_signal = None


def on_sigterm(signum, frame):
    global stop_signal
    stop_signal = signum
    raise_if_stopped()


def raise_if_stopped():
    """Terminated, if a stop came (whether or not its handler's exception got through)."""
    if stop_signal is not None:
        raise Terminated("terminated by signal %d" % stop_signal, 128 + stop_signal)


def run(argv=None, settings=None):
    """The task as a process: main(), a failure written to the chief's status.json, and os._exit with the code."""
    handle_stops()
    try:
        code = main(argv, settings)
    except BaseException as error:
        # Exit from here, the exception alive: dropping it would free the frames it holds, and with them TensorFlow's
        # objects, whose destructors can block for good on a peer that left (seen on a multi_worker_mirrored task
        # stopped after its peer); os._exit ends them all.
        end(*exit_code_and_reason(error))
    else:
        end(code, None)


def handle_stops():
    """SIGTERM (the supervisor's stop) raises Terminated; installed again by whoever took it over."""
    signal.signal(signal.SIGTERM, on_sigterm)


def end(code, why):
    """Say why a task that did not succeed ended (its log, the chief's status.json), then os._exit with its code."""
    if code:
        sys.stderr.write("[train] %s: %s\n" % ("stopped" if code == 128 + signal.SIGTERM else "FAILED", why))
        sys.stderr.flush()
        if Progress.chief is not None:
            Progress.chief.write("failed", error=why)
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit: the coordinator's RPC threads can otherwise hold the interpreter at exit.
    os._exit(code)


def exit_code_and_reason(error):
    """(exit code, why) of a task that main() left with this exception."""
    if isinstance(error, Terminated):
        why, code = error.args
        return code, why
    if isinstance(error, SystemExit):  # our own clear messages, and argparse's exits
        return (error.code if isinstance(error.code, int) else 1), str(error.code)
    traceback.print_exception(type(error), error, error.__traceback__)
    return 1, "%s: %s" % (type(error).__name__, error)


# `python -m tfdist.train.job [FLAGS]` on a node: one task of the training job, flags only.
if __name__ == "__main__":
    run()
