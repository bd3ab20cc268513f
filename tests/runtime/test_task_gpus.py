"""Each TF task's GPU: the task.env that roles/training/tasks/main.yml lays down (the training_files module, with
the role's own `gpus` argument), and what the task's process then sees under the supervisor.

Several tasks on a host with GPUs (training_gpu_count: the cuda role's cuda_gpu_count in a deploy, else its
local fact): each chief and worker gets
one GPU, round-robin (CUDA_VISIBLE_DEVICES=<n>), a parameter server or evaluator none
(CUDA_VISIBLE_DEVICES= , an empty value: TensorFlow then sees no GPU). A lone task, a host without
GPUs or a job whose training_env sets CUDA_VISIBLE_DEVICES itself get no such line.
"""

import json
import os
import sys
import time

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from local_cluster import REPO, supervise

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _cluster

TASKS_FILE = os.path.join(REPO, "roles", "training", "tasks", "main.yml")
ROLE_DEFAULTS = os.path.join(REPO, "roles", "training", "defaults", "main.yml")
PLAY_VARS = os.path.join(REPO, "playbooks", "group_vars", "all.yml")
WORK_DIR = "/var/lib/tfdist/job"


def host_tasks(*names):
    return [{"type": name.split("-")[0], "index": int(name.split("-")[1]), "name": name, "host": "node-0"}
            for name in names]


def files_task():
    """The role's task that lays down each task's files, loaded as Ansible loads it (its templates trusted)."""
    tasks = DataLoader().load_from_file(TASKS_FILE, trusted_as_template=True)
    return next(t for t in tasks if "tfdist.cluster.training_files" in t)["tfdist.cluster.training_files"]


def gpu_count_setting(source):
    """training_gpu_count as a file sets it: the playbooks' (the cuda role's fact, else the local fact) or the role's."""
    return {"training_gpu_count": DataLoader().load_from_file(source, trusted_as_template=True)["training_gpu_count"]}


def render_env_files(my_tasks, source=PLAY_VARS, **variables):
    """{task name: task.env text} for the tasks of one host, as a deploy (or the role alone) writes them: the
    role's `gpus` argument rendered by Ansible's templating, the file by the code the training_files module writes it
    with (_cluster.task_env)."""
    values = {"training_env": {}, **gpu_count_setting(source), **variables}
    gpus = int(Templar(loader=DataLoader(), variables=values).template(files_task()["gpus"]))
    params = {"work_dir": WORK_DIR, "cluster_name": "job", "tasks": my_tasks, "gpus": gpus}
    return {task["name"]: _cluster.task_env(task, params) for task in my_tasks}


def devices(my_tasks, **variables):
    """{task name: CUDA_VISIBLE_DEVICES value, or None without the line}."""
    result = {}
    for name, text in render_env_files(my_tasks, **variables).items():
        values = dict(line.split("=", 1) for line in text.splitlines() if line)
        assert values["TFDIST_TASK"] == name
        result[name] = values.get("CUDA_VISIBLE_DEVICES")
    return result


def test_gpu_tasks_of_a_host_get_one_gpu_each_round_robin_and_servers_none():
    my_tasks = host_tasks("chief-0", "worker-0", "worker-1", "worker-2", "ps-0", "evaluator-0")
    assert devices(my_tasks, cuda_gpu_count=2) == {
        "chief-0": "0", "worker-0": "1", "worker-1": "0", "worker-2": "1", "ps-0": "", "evaluator-0": ""}
    assert devices(my_tasks, cuda_gpu_count=8) == {
        "chief-0": "0", "worker-0": "1", "worker-1": "2", "worker-2": "3", "ps-0": "", "evaluator-0": ""}


def test_workers_without_the_chief_start_at_the_first_gpu():
    assert devices(host_tasks("worker-2", "worker-3", "ps-1"), cuda_gpu_count=4) == {
        "worker-2": "0", "worker-3": "1", "ps-1": ""}


def test_the_gpu_count_of_a_later_run_comes_from_the_local_fact():
    facts = {"ansible_local": {"cuda": {"gpu_count": 2, "gpu_models": ["Tesla T4", "Tesla T4"]}}}
    assert devices(host_tasks("worker-0", "worker-1"), ansible_facts=facts) == {"worker-0": "0", "worker-1": "1"}
    # The role used alone reads the same fact.
    assert devices(host_tasks("worker-0", "worker-1"), source=ROLE_DEFAULTS, ansible_facts=facts) == {
        "worker-0": "0", "worker-1": "1"}


@pytest.mark.parametrize("case", [
    pytest.param({"cuda_gpu_count": 0}, id="host-without-gpu"),
    pytest.param({}, id="cuda-role-not-run"),
    pytest.param({"ansible_facts": {"ansible_local": {}}}, id="no-local-fact"),
    pytest.param({"cuda_gpu_count": 4, "training_env": {"CUDA_VISIBLE_DEVICES": "3"}}, id="user-sets-it"),
])
def test_no_device_line_when_there_is_nothing_to_share(case):
    assert set(devices(host_tasks("chief-0", "worker-0", "ps-0"), **case).values()) == {None}


def test_a_lone_task_sees_every_gpu():
    assert devices(host_tasks("worker-0"), cuda_gpu_count=4) == {"worker-0": None}


def task_running(task_dir):
    return supervise("status", "--dir", str(task_dir))["running"]


def test_the_task_process_sees_its_device(tmp_path):
    """task.env through the supervisor: a worker sees its GPU, a parameter server an empty list (not unset)."""
    env_files = render_env_files(host_tasks("worker-0", "worker-1", "ps-0"), cuda_gpu_count=2)
    seen = {}
    for name in ("worker-1", "ps-0"):
        task_dir = tmp_path / name
        task_dir.mkdir()
        (task_dir / "task.env").write_text(env_files[name])
        out = task_dir / "seen.json"
        code = "import json, os, sys; json.dump(os.environ.get('CUDA_VISIBLE_DEVICES'), open(sys.argv[1], 'w'))"
        supervise("start", "--name", name, "--dir", str(task_dir), "--env-file", str(task_dir / "task.env"), "--",
                  sys.executable, "-c", code, str(out))
        deadline = time.time() + 30
        while task_running(task_dir) and time.time() < deadline:
            time.sleep(0.1)
        seen[name] = json.loads(out.read_text())
    assert seen == {"worker-1": "1", "ps-0": ""}
