# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Run the training role's real files as a TF cluster of local processes.

Renders roles/training/templates/train.py.j2 once per task (plain Jinja2 with
StrictUndefined, the variables the role passes) and starts every task through
roles/training/files/tfdist-supervise with TF_CONFIG, the way a node runs them.
Used by test_training_runtime.py; also handy by hand:

    .venv/bin/python tests/runtime/local_cluster.py /tmp/job --workers 2 --ps 1 --steps 300
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TEMPLATE = os.path.join(REPO, "roles", "training", "templates", "train.py.j2")
SUPERVISOR = os.path.join(REPO, "plugins", "module_utils", "_supervisor.py")
DIGITS = os.path.join(REPO, "roles", "training", "files", "data", "digits.npz")


def free_ports(count):
    socks = [socket.socket() for _ in range(count)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def layout(workers, ps, evaluators=0):
    tasks = [("chief", 0)] + [("worker", i) for i in range(workers)] + [("ps", i) for i in range(ps)]
    tasks += [("evaluator", i) for i in range(evaluators)]
    ports = free_ports(len(tasks))
    return [{"type": t, "index": i, "name": "%s-%d" % (t, i), "address": "127.0.0.1:%d" % p}
            for (t, i), p in zip(tasks, ports)]


def cluster_spec(tasks):
    spec = {}
    for task in tasks:
        if task["type"] != "evaluator":
            spec.setdefault(task["type"], []).append(task["address"])
    return spec


def render(task, work_dir, task_dir, **training):
    import jinja2

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    with open(TEMPLATE) as f:
        template = env.from_string(f.read())
    values = {
        "training_task": {"type": task["type"], "index": task["index"]},
        "training_strategy": "parameter_server",
        "training_steps": 300,
        "training_batch_size": 64,
        "training_learning_rate": 0.01,
        "training_checkpoint_every": 100,
        "training_data": "builtin:digits",
        "training_work_dir": work_dir,
        "training_task_dir": task_dir,
        "training_hidden_units": [64, 64],
    }
    values.update({"training_" + k: v for k, v in training.items()})
    return template.render(**values)


def supervise(*args):
    out = subprocess.run([sys.executable, SUPERVISOR, *args], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError("tfdist-supervise %s failed: %s" % (args[0], out.stderr))
    return json.loads(out.stdout)


def start_cluster(work_dir, tasks, gone_grace=5, extra_args=(), **training):
    """Render and start every task (servers first, chief last); returns {name: task_dir}."""
    spec = cluster_spec(tasks)
    chief = next(t for t in tasks if t["type"] == "chief")
    dirs = {}
    order = {"ps": 0, "worker": 1, "evaluator": 2, "chief": 3}
    for task in sorted(tasks, key=lambda t: (order[t["type"]], t["index"])):
        task_dir = os.path.join(work_dir, "tasks", task["name"])
        os.makedirs(task_dir, exist_ok=True)
        shutil.copy(DIGITS, os.path.join(task_dir, "digits.npz"))
        script = os.path.join(task_dir, "train.py")
        with open(script, "w") as f:
            f.write(render(task, work_dir, task_dir, **training))
        with open(os.path.join(task_dir, "tf_config.json"), "w") as f:
            json.dump({"cluster": spec, "task": {"type": task["type"], "index": task["index"]}}, f)
        args = ["start", "--name", task["name"], "--dir", task_dir,
                "--env-from-file", "TF_CONFIG=%s" % os.path.join(task_dir, "tf_config.json")]
        if task["type"] != "chief":
            # An evaluator ends by itself after the last checkpoint: give it time to read that one.
            grace = gone_grace + 15 if task["type"] == "evaluator" else gone_grace
            args += ["--stop-when-gone", chief["address"], "--gone-grace", str(grace)]
        supervise(*args, "--", sys.executable, script, *extra_args)
        dirs[task["name"]] = task_dir
    return dirs


def status(task_dir):
    return supervise("status", "--dir", task_dir)


def wait_exit(task_dir, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        st = status(task_dir)
        if not st["running"]:
            return st
        time.sleep(0.5)
    raise TimeoutError("task in %s still running after %ss; log:\n%s" % (task_dir, timeout, log_tail(task_dir)))


def stop_all(dirs):
    for task_dir in dirs.values():
        supervise("stop", "--dir", task_dir)


def log_tail(task_dir, lines=40):
    try:
        with open(os.path.join(task_dir, "task.log"), errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return "(no log)"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("work_dir")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--ps", type=int, default=1)
    p.add_argument("--evaluators", type=int, default=0)
    p.add_argument("--strategy", default="parameter_server", choices=["parameter_server", "multi_worker_mirrored"])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--timeout", type=float, default=600)
    a = p.parse_args()
    work_dir = os.path.abspath(a.work_dir)
    ps = a.ps if a.strategy == "parameter_server" else 0
    dirs = start_cluster(work_dir, layout(a.workers, ps, a.evaluators), strategy=a.strategy, steps=a.steps)
    try:
        chief = wait_exit(dirs["chief-0"], a.timeout)
    finally:
        time.sleep(1)
    print(json.dumps(chief))
    with open(os.path.join(work_dir, "result.json")) as f:
        print(f.read())
    return 0 if chief["returncode"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
