# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Run the training role's real files as a TF cluster of local processes.

What a node gets, made here the way the role makes it: the package tfdist (the training program) laid
down by the tfdist.cluster.node_package module's own code, and each task's train.py rendered from
roles/training/templates/train.py.j2 by Ansible's templating, with the role's defaults
(roles/training/defaults/main.yml), its vars (vars/main.yml), the script_template_vars its training_files
task passes and the task's own variables the training_files action adds; a test only overrides role
variables (training_steps...). The dataset is copied where the
training_files action lays it down (its data_src). Every task is started through the supervisor
(plugins/module_utils/_supervisor.py, as a command: run_supervisor) with TF_CONFIG, the way a node runs them.
Used by test_training_runtime.py and test_training_storage.py; also handy by hand:

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
ROLE = os.path.join(REPO, "roles", "training")
# The supervisor, run as `python -m tfdist._supervisor` runs on a node (its modules import each other relatively).
SUPERVISOR = "ansible_collections.tfdist.cluster.plugins.module_utils._supervisor"
DIGITS = os.path.join(ROLE, "files", "data", "digits.npz")
TEMPLATE_TASK = "Lay down each task's script, TF_CONFIG and environment, and the training program"


def _collection_loader():
    """Plugins by FQCN (the storage_url filter, the node_package module), as tests/conftest.py sets them up."""
    collections = os.path.join(REPO, ".collections")
    if collections not in sys.path:
        sys.path.insert(0, collections)
        from ansible.plugins.loader import init_plugin_loader

        init_plugin_loader([collections])


def free_ports(count):
    socks = [socket.socket() for dummy in range(count)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _cluster():
    """The collection's cluster model (layout, cluster spec, leader)."""
    _collection_loader()
    from ansible_collections.tfdist.cluster.plugins.module_utils import _cluster as model

    return model


def layout(workers, ps, evaluators=0, chiefs=1):
    """The tasks of the cluster model's layout on free local ports; address is HOST:PORT here."""
    model = _cluster()
    tasks = model.layout(workers, ps, evaluators, chiefs=chiefs)
    for task, port in zip(tasks, free_ports(len(tasks))):
        task.update(name=model.task_name(task["type"], task["index"]), address="127.0.0.1:%d" % port)
    return tasks


def model_tasks(tasks):
    """The tasks as the cluster model holds them: address (the host) and port apart."""
    return [dict(t, address=t["address"].rsplit(":", 1)[0], port=int(t["address"].rsplit(":", 1)[1])) for t in tasks]


def cluster_spec(tasks):
    return _cluster().cluster_spec(model_tasks(tasks))


def role_variables(work_dir, **training):
    """The role's defaults and vars, with the test's role variables (training_<key>) on top.

    The job folder (__training_work_dir) is work_dir and the package goes to work_dir/lib (on a node:
    training_home/<cluster> and training_home/lib).
    """
    _collection_loader()
    from ansible.parsing.dataloader import DataLoader

    loader = DataLoader()
    values = dict(loader.load_from_file(os.path.join(ROLE, "defaults", "main.yml"), trusted_as_template=True))
    values.update(loader.load_from_file(os.path.join(ROLE, "vars", "main.yml"), trusted_as_template=True))
    values.update({"training_" + key: value for key, value in training.items()})
    values.update(role_path=ROLE, playbook_dir=work_dir, __training_work_dir=work_dir,
                  __training_lib_dir=os.path.join(work_dir, "lib"))
    return values


def template(value, variables):
    """value (a str is trusted as a template; loaded YAML is already) templated with variables."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, is_trusted_as_template, trust_as_template

    if isinstance(value, str) and not is_trusted_as_template(value):
        value = trust_as_template(value)
    return Templar(loader=DataLoader(), variables=variables).template(value)


def template_task():
    """The role's task whose action renders train.py, loaded as Ansible loads it (its templates trusted)."""
    from ansible.parsing.dataloader import DataLoader

    tasks = DataLoader().load_from_file(os.path.join(ROLE, "tasks", "main.yml"), trusted_as_template=True)
    return next(t for t in tasks if t["name"] == TEMPLATE_TASK)


def render(task, variables):
    """The task's train.py, as the role's template task renders it for this task (item)."""
    with open(os.path.join(ROLE, "templates", "train.py.j2")) as f:
        source = f.read()
    values = dict(variables)
    template_vars = template_task()["tfdist.cluster.training_files"]["script_template_vars"]
    values.update({key: template(value, values) for key, value in template_vars.items()})
    # What the training_files action adds for each task.
    work_dir = template("{{ __training_work_dir }}", values)
    values.update(training_task={"type": task["type"], "index": task["index"]},
                  training_task_dir=_cluster().task_folder(work_dir, task["name"]))
    landed = node_data(values)
    if landed:
        values["training_data_path"] = landed
    return template(source, values)


def lay_down_package(lib_dir):
    """The files node_package (and training_files) write on a node, from the collection's own code."""
    _collection_loader()
    from ansible_collections.tfdist.cluster.plugins.module_utils import _package

    for path, content in _package.package_files().items():
        target = os.path.join(lib_dir, _package.PACKAGE_NAME, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(content)


def node_data(variables):
    """Where the training_files action lays down the role's data_src (a built-in or local dataset); '' for a URL."""
    source = template("{{ __training_data_source }}", variables)
    return _cluster().data_path(template("{{ __training_work_dir }}", variables), os.path.basename(source)) if source else ""


def copy_dataset(variables):
    """As the training_files action does with its data_src: a built-in or local dataset goes into the data folder."""
    target = node_data(variables)
    if target:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy(template("{{ __training_data_source }}", variables), target)


def run_supervisor(*args, timeout=120):
    """The supervisor's command line with args: its CompletedProcess (text), the collection imported from where make
    setup links it (.collections)."""
    return subprocess.run([sys.executable, "-m", SUPERVISOR, *args], capture_output=True, text=True, timeout=timeout,
                          check=False, env=dict(os.environ, PYTHONPATH=os.path.join(REPO, ".collections")))


def supervise(*args):
    out = run_supervisor(*args)
    if out.returncode != 0:
        raise RuntimeError("the supervisor's %s failed: %s" % (args[0], out.stderr))
    return json.loads(out.stdout)


def prepare(work_dir, tasks, **training):
    """The job folder as the role lays it down: the package, the dataset, and per task train.py and tf_config.json.

    Returns {name: task_dir}.
    """
    variables = role_variables(work_dir, **training)
    lay_down_package(variables["__training_lib_dir"])
    copy_dataset(variables)
    spec = cluster_spec(tasks)
    dirs = {}
    for task in tasks:
        task_dir = _cluster().task_folder(work_dir, task["name"])
        os.makedirs(task_dir, exist_ok=True)
        with open(os.path.join(task_dir, "train.py"), "w") as f:
            f.write(render(task, variables))
        with open(os.path.join(task_dir, "tf_config.json"), "w") as f:
            json.dump(_cluster().tf_config(task, spec), f)
        dirs[task["name"]] = task_dir
    return dirs


def start_cluster(work_dir, tasks, gone_grace=5, extra_args=(), env=None, **training):
    """Lay down and start every task as the training role launches them (_cluster.launches: servers first, the
    leader last, announcing its end on its port); returns {name: task_dir}. env: the tasks' own variables (the role's
    training_env), in an environment file."""
    dirs = prepare(work_dir, tasks, **training)
    env_file = os.path.join(work_dir, "training.env")
    with open(env_file, "w") as f:
        f.writelines("%s=%s\n" % item for item in sorted((env or {}).items()))
    split = model_tasks(tasks)
    model = _cluster()
    planned = model.launches(split, work_dir, "job", model.cluster_spec(split), model.leader(split), sys.executable,
                             script_args=extra_args)
    for task, launch in zip(model.launch_order(split), planned):
        args = ["start", "--name", task["name"], "--dir", launch["dir"], "--env-file", env_file,
                "--env-from-file", "TF_CONFIG=%s" % launch["env_from_files"]["TF_CONFIG"]]
        if launch["stop_when_gone"]:
            # An evaluator ends by itself after the last checkpoint: give it time to read that one.
            grace = gone_grace + 15 if task["type"] == "evaluator" else gone_grace
            args += ["--stop-when-gone", launch["stop_when_gone"], "--gone-grace", str(grace)]
        if launch["end_grace"] is not None:
            args += ["--end-grace", str(launch["end_grace"])]
        if launch["announce_end"]:
            args += ["--announce-end", str(launch["announce_end"])]
        supervise(*args, "--", *launch["command"])
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
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
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
