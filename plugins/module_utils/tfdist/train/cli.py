# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""The command line of the training program: flags over the job's settings, and the task's place in the cluster."""

from __future__ import annotations

import argparse
import json
import os

from .. import _storage
from .._supervisor import GONE_GRACE

STRATEGIES = ("parameter_server", "multi_worker_mirrored")
JOB_NAMES = ("chief", "master", "worker", "ps", "evaluator")

# The job's settings (the training role renders them from its variables into each task's script).
# These have no value of their own here: the role's defaults are the only defaults, so without a
# setting the flag is required.
JOB_SETTINGS = ("strategy", "steps", "batch_size", "learning_rate", "checkpoint_every", "data", "work_dir",
                "hidden_units")
# Settings whose absence means "none" (no folder, no URL), and the task's own place.
OPTIONAL_SETTINGS = {"task_dir": "", "checkpoint_url": "", "model_url": "", "tensorboard_dir": ""}
TASK_SETTINGS = {"job_name": "chief", "task_index": 0}  # a lone process is the chief
# Settings the role passes whose default is the supervisor's (the same rule on both sides).
SHARED_SETTINGS = {"gone_grace": GONE_GRACE}
KNOWN_SETTINGS = set(JOB_SETTINGS) | set(OPTIONAL_SETTINGS) | set(TASK_SETTINGS) | set(SHARED_SETTINGS)


def parse_units(value):
    if isinstance(value, str):
        value = [v for v in value.replace(" ", "").split(",") if v]
    units = [int(v) for v in value]
    if not units or min(units) < 1:
        raise ValueError("hidden units must be positive integers, got %r" % (value,))
    return units


def split_hosts(value):
    return [h.strip() for h in value.split(",") if h.strip()] if value else []


def settings_with_defaults(settings):
    """The job's settings completed with the task's fallbacks; unknown names are an error."""
    settings = dict(settings or {})
    unknown = sorted(set(settings) - KNOWN_SETTINGS)
    if unknown:
        raise SystemExit("unknown job settings: %s (known: %s)" % (", ".join(unknown), ", ".join(sorted(KNOWN_SETTINGS))))
    for name, value in list(OPTIONAL_SETTINGS.items()) + list(TASK_SETTINGS.items()) + list(SHARED_SETTINGS.items()):
        if settings.get(name) is None:
            settings[name] = value
    if settings.get("hidden_units") is not None:
        settings["hidden_units"] = ",".join(str(u) for u in parse_units(settings["hidden_units"]))
    return settings


def parse_args(argv=None, settings=None):
    """Flags over settings (a dict of JOB_SETTINGS and OPTIONAL_SETTINGS, e.g. from the per-task script)."""
    settings = settings_with_defaults(settings)

    def setting(name, **options):
        """default= the job's setting; a flag without one must be given."""
        if settings.get(name) is None:
            return dict(options, required=True)
        return dict(options, default=settings[name])

    p = argparse.ArgumentParser(prog="tfdist.train", description="tfdist.cluster distributed training job")
    g = p.add_argument_group("cluster (override TF_CONFIG when given)")
    g.add_argument("--job_name", "--task_type", dest="job_name", choices=JOB_NAMES,
                   help="this task's type (default: TF_CONFIG, else %s)" % settings["job_name"])
    g.add_argument("--task_index", type=int, help="this task's index (default: TF_CONFIG, else %d)"
                   % int(settings["task_index"]))
    g.add_argument("--chief_host", "--master_host", help="HOST:PORT of the chief (coordinator), if the cluster has one")
    g.add_argument("--worker_hosts", help="comma-separated HOST:PORT of the workers")
    g.add_argument("--ps_hosts", help="comma-separated HOST:PORT of the parameter servers")
    t = p.add_argument_group("training")
    t.add_argument("--strategy", **setting("strategy", choices=STRATEGIES))
    t.add_argument("--steps", **setting("steps", type=int, help="target global step"))
    t.add_argument("--batch_size", **setting("batch_size", type=int, help="examples per step per worker"))
    t.add_argument("--learning_rate", **setting("learning_rate", type=float, help="Adam learning rate"))
    t.add_argument("--hidden_units", **setting("hidden_units", help="comma-separated sizes of the hidden layers"))
    t.add_argument("--steps_per_execution", type=int, default=10,
                   help="training steps run by one scheduled function (fewer round trips)")
    t.add_argument("--max_in_flight", type=int, default=4,
                   help="parameter_server: scheduled functions queued ahead per worker")
    t.add_argument("--gone_grace", type=float, default=float(settings["gone_grace"]),
                   help="multi_worker_mirrored: seconds a task whose step failed as its leader left waits to be "
                        "stopped with the job (a deadline, the watch) before it fails; the servers' rule, the same "
                        "seconds (training_gone_grace)")
    t.add_argument("--seed", type=int, default=42, help="seed of the train/test split and the model init")
    d = p.add_argument_group("data and files")
    data_help = ("builtin:digits, a path, file://, http(s)://, hdfs://, webhdfs:// or s3:// URL of an .npz "
                 "(x, y[, x_test, y_test]) or a .csv (label in the last column)")
    d.add_argument("--data", **setting("data", help=data_help))
    d.add_argument("--test_fraction", type=float, default=0.2, help="held-out share when the data has no test set")
    d.add_argument("--work_dir", **setting("work_dir"))
    d.add_argument("--task_dir", default=settings["task_dir"], help="this task's own directory")
    d.add_argument("--checkpoint_every", **setting("checkpoint_every", type=int, help="steps"))
    d.add_argument("--keep_checkpoints", type=int, default=3)
    d.add_argument("--status_interval", type=float, default=1.0, help="seconds between status.json updates")
    d.add_argument("--eval_interval", type=float, default=2.0, help="evaluator: seconds between checkpoint polls")
    d.add_argument("--checkpoint_url", default=settings["checkpoint_url"],
                   help="folder URL (hdfs://, webhdfs://, s3://, file://) that keeps a copy of the checkpoints")
    d.add_argument("--model_url", default=settings["model_url"],
                   help="folder URL that gets model.keras and result.json at the end")
    d.add_argument("--tensorboard_dir", default=settings["tensorboard_dir"],
                   help="folder of TensorBoard event files (loss, accuracy); empty: none")
    args = p.parse_args(argv)
    try:
        args.hidden_units = parse_units(args.hidden_units)
    except ValueError as e:
        p.error("--hidden_units: %s" % e)
    for name in ("steps", "batch_size", "checkpoint_every", "steps_per_execution", "max_in_flight"):
        if getattr(args, name) < 1:
            p.error("--%s must be at least 1" % name)
    if not 0.0 < args.test_fraction < 1.0:
        p.error("--test_fraction must be between 0 and 1")
    args.work_dir = os.path.abspath(args.work_dir)
    args.task_dir = os.path.abspath(args.task_dir) if args.task_dir else ""
    for name in ("checkpoint_url", "model_url"):
        url = getattr(args, name).rstrip("/")
        if url and _storage.folder_url_error(url, "--" + name):
            p.error(_storage.folder_url_error(url, "--" + name))
        setattr(args, name, url)
    args.fallback_task = (settings["job_name"], int(settings["task_index"]))
    return args


def resolve_cluster(args):
    """(cluster dict without evaluators, task type, task index); also exports TF_CONFIG."""
    try:
        tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    except ValueError as e:
        raise SystemExit("TF_CONFIG is not valid JSON: %s" % e)
    cluster = {k: list(v) for k, v in (tf_config.get("cluster") or {}).items()}
    task = tf_config.get("task") or {}
    if args.chief_host or args.worker_hosts or args.ps_hosts:
        cluster = {}
        for job, hosts in (("chief", split_hosts(args.chief_host)), ("worker", split_hosts(args.worker_hosts)),
                           ("ps", split_hosts(args.ps_hosts))):
            if hosts:
                cluster[job] = hosts
    fallback_job, fallback_index = args.fallback_task
    job = args.job_name or task.get("type") or fallback_job
    index = args.task_index if args.task_index is not None else int(task.get("index", fallback_index))
    if job == "master":  # Estimator-era TF_CONFIG: the chief is called master
        job = "chief"
    if "master" in cluster:
        cluster["chief"] = cluster.pop("master")
    cluster.pop("evaluator", None)  # evaluators read checkpoints; they are no cluster members
    if cluster and job != "evaluator" and index >= len(cluster.get(job, [])):
        raise SystemExit("task %s:%d is not in the cluster %s" % (job, index, json.dumps(cluster)))
    if cluster:
        os.environ["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": job, "index": index}})
    return cluster, job, index
