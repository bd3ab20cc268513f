# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Run the training role's real files as a TF cluster of local processes.

A node's job folder is laid down and launched by the collection's own modules, run as a node runs them (a Python
importing the collection from where make setup links it), with the options the training role gives them:
tfdist.cluster.training_files writes each task's train.py, TF_CONFIG and task.env, the dataset and the package tfdist
(the training program); tfdist.cluster.training_task starts each task under the supervisor
(plugins/module_utils/tfdist/_supervisor.py) from the launches of the tf_launches filter (_cluster.launches). Each train.py
is rendered here as the training_files action renders it: roles/training/templates/train.py.j2 through Ansible's
templating, with the role's defaults (roles/training/defaults/main.yml), its vars (vars/main.yml), the
script_template_vars of its training_files task and the task's own variables the action adds. A test sets role
variables only (training_steps..., through keyword arguments without the prefix). The job folder is
training_home/training_cluster_name, as on a node: work_dir is that folder and its parent the training_home.
Used by test_training_runtime.py, test_training_storage.py and bench/checkpoint_mirror.py; also handy by hand:

    .venv/bin/python tests/runtime/local_cluster.py /tmp/job --workers 2 --ps 1 --steps 300
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ROLE = os.path.join(REPO, "roles", "training")
COLLECTIONS = os.path.join(REPO, ".collections")  # ansible_collections/tfdist/cluster -> the repository (make setup)
# The collection's modules and its supervisor, run as `python -m` as on a node (their modules import each other).
PACKAGE = "ansible_collections.tfdist.cluster.plugins"
SUPERVISOR = PACKAGE + ".module_utils.tfdist._supervisor"
DIGITS = os.path.join(ROLE, "files", "data", "digits.npz")
# The role's one call of the training_files action, whose script_template_vars render train.py.
TRAINING_FILES = "tfdist.cluster.training_files"


def _collection_loader():
    """Plugins by FQCN (the storage_url filter), as tests/conftest.py sets them up where nothing did (the bench)."""
    if not any(type(finder).__name__ == "_AnsibleCollectionFinder" for finder in sys.meta_path):
        from ansible.plugins.loader import init_plugin_loader

        if COLLECTIONS not in sys.path:
            sys.path.insert(0, COLLECTIONS)
        init_plugin_loader([COLLECTIONS])


def _cluster():
    """The collection's cluster model (layout, cluster spec, leader, launches)."""
    _collection_loader()
    from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _cluster as model

    return model


def layout(workers, ps, evaluators=0, chiefs=1):
    """The tasks of the cluster model's layout on free local ports; address is HOST:PORT here."""
    model = _cluster()
    from ansible_collections.tfdist.cluster.tests.processes import free_port_block

    tasks = model.layout(workers, ps, evaluators, chiefs=chiefs)
    base = free_port_block(len(tasks))
    for task, port in zip(tasks, range(base, base + len(tasks))):
        task.update(name=model.task_name(task["type"], task["index"]), address="127.0.0.1:%d" % port)
    return tasks


def model_tasks(tasks):
    """The tasks as the cluster model holds them: address (the host) and port apart."""
    return [dict(t, address=t["address"].rsplit(":", 1)[0], port=int(t["address"].rsplit(":", 1)[1])) for t in tasks]


def cluster_spec(tasks):
    return _cluster().cluster_spec(model_tasks(tasks))


def role_variables(work_dir, **training):
    """The role's defaults and vars for the job folder work_dir (training_home its parent, training_cluster_name its
    name), with the test's role variables (training_<key>) on top."""
    _collection_loader()
    from ansible.parsing.dataloader import DataLoader

    loader = DataLoader()
    values = dict(loader.load_from_file(os.path.join(ROLE, "defaults", "main.yml"), trusted_as_template=True))
    values.update(loader.load_from_file(os.path.join(ROLE, "vars", "main.yml"), trusted_as_template=True))
    values.update(training_home=os.path.dirname(work_dir), training_cluster_name=os.path.basename(work_dir))
    values.update({"training_" + key: value for key, value in training.items()})
    values.update(role_path=ROLE, playbook_dir=work_dir)
    return values


def template(value, variables):
    """value (a str is trusted as a template; loaded YAML is already) templated with variables."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, is_trusted_as_template, trust_as_template

    if isinstance(value, str) and not is_trusted_as_template(value):
        value = trust_as_template(value)
    return Templar(loader=DataLoader(), variables=variables).template(value)


def training_files_args():
    """The arguments of the role's training_files task, loaded as Ansible loads them (their templates trusted)."""
    from ansible.parsing.dataloader import DataLoader

    tasks = DataLoader().load_from_file(os.path.join(ROLE, "tasks", "main.yml"), trusted_as_template=True)
    [task] = [t for t in tasks if TRAINING_FILES in t]
    return task[TRAINING_FILES]


def run_module(name, **args):
    """The collection's module `name` with these options, run as a node runs it: its result (RuntimeError if it
    failed)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as args_file:
        json.dump({"ANSIBLE_MODULE_ARGS": args}, args_file)
        args_file.flush()
        out = subprocess.run([sys.executable, "-m", "%s.modules.%s" % (PACKAGE, name), args_file.name],
                             capture_output=True, text=True, timeout=300, check=False,
                             env=dict(os.environ, PYTHONPATH=COLLECTIONS))
    try:
        result = json.loads(out.stdout)
    except ValueError:
        result = {"failed": True, "msg": out.stdout + out.stderr}
    if result.get("failed"):
        raise RuntimeError("%s failed: %s" % (name, result.get("msg")))
    return result


def render(task, work_dir, template_vars):
    """The task's train.py, as the training_files action renders the role's template for it."""
    with open(os.path.join(ROLE, "templates", "train.py.j2")) as f:
        source = f.read()
    own = {"training_task": {"type": task["type"], "index": task["index"]},
           "training_task_dir": _cluster().task_folder(work_dir, task["name"])}
    return template(source, dict(template_vars, **own))


def prepare(work_dir, tasks, **training):
    """The job folder as the role lays it down with training_files: the package, the dataset, and each task's
    train.py, tf_config.json and task.env. Returns {name: task_dir}."""
    model = _cluster()
    variables = role_variables(work_dir, **training)
    args = training_files_args()
    template_vars = dict(variables, **{key: template(value, variables)
                                       for key, value in args["script_template_vars"].items()})
    data = None
    source = template("{{ __training_data_source }}", variables)
    if source:  # a built-in or local dataset: the action sends it, and points the script at where it lands
        template_vars["training_data_path"] = model.data_path(work_dir, os.path.basename(source))
        with open(source, "rb") as f:
            data = {"name": os.path.basename(source), "content": base64.b64encode(f.read()).decode("ascii")}
    run_module("training_files", work_dir=work_dir, cluster_name=variables["training_cluster_name"],
               tasks=model_tasks(tasks), scripts={t["name"]: render(t, work_dir, template_vars) for t in tasks},
               cluster_spec=cluster_spec(tasks), chief_name=template(args["chief_name"], variables),
               gpus=int(template(args["gpus"], variables)), tf_keras=template(args["tf_keras"], variables),
               package_dest=template_vars["training_lib_dir"], data=data)
    return {t["name"]: model.task_folder(work_dir, t["name"]) for t in tasks}


def start_cluster(work_dir, tasks, env=None, **training):
    """Lay down and start every task as the training role launches them: training_task with the tf_launches of the
    host's tasks (servers first, the leader last, announcing its end on its port). env: the tasks' own variables (the
    role's training_env). Returns {name: task_dir}."""
    dirs = prepare(work_dir, tasks, **training)
    variables = role_variables(work_dir, **training)
    split = model_tasks(tasks)
    model = _cluster()
    launches = model.launches(split, work_dir, variables["training_cluster_name"], model.cluster_spec(split),
                              model.leader(split), sys.executable,
                              interface=template("{{ training_script_interface }}", variables),
                              chief_name=template("{{ training_chief_name }}", variables),
                              script_args=template("{{ training_script_args }}", variables))
    run_module("training_task", tasks=launches, state="started", env=json.dumps(env or {}), rerun_finished=True,
               restart=True, gone_grace=int(template("{{ training_gone_grace }}", variables)))
    return dirs


def run_supervisor(*args, timeout=120):
    """The supervisor's command line with args: its CompletedProcess (text), the collection imported from where make
    setup links it (.collections)."""
    return subprocess.run([sys.executable, "-m", SUPERVISOR, *args], capture_output=True, text=True, timeout=timeout,
                          check=False, env=dict(os.environ, PYTHONPATH=COLLECTIONS))


def supervise(*args):
    out = run_supervisor(*args)
    if out.returncode != 0:
        raise RuntimeError("the supervisor's %s failed: %s" % (args[0], out.stderr))
    return json.loads(out.stdout)


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
