"""tfdist.cluster.training_files: every task folder of a host in one call, idempotent, with the right TF_CONFIG."""

import base64
import json
import os
import sys

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.tfdist.cluster.plugins.modules import training_files

SPEC = {"ps": ["10.0.0.1:2222"], "worker": ["10.0.0.2:2222", "10.0.0.2:2223"]}
TASKS = [{"name": "worker-0", "type": "worker", "index": 0}, {"name": "worker-1", "type": "worker", "index": 1},
         {"name": "ps-0", "type": "ps", "index": 0}]


@pytest.fixture
def run(capsys, tmp_path):
    def run_module(check_mode=False, **options):
        args = dict(dict(work_dir=str(tmp_path / "job"), cluster_name="mnist", tasks=TASKS, cluster_spec=SPEC), **options)
        with patch_module_args(dict(args, _ansible_check_mode=check_mode)), pytest.raises(SystemExit):
            training_files.main()
        return json.loads(capsys.readouterr().out)
    return run_module


def test_each_task_gets_its_script_tf_config_and_environment_once(run, tmp_path):
    scripts = {"worker-0": "print('w0')\n", "worker-1": "print('w1')\n"}
    first = run(scripts=scripts, script="print('other')\n", folders=["tensorboard"])
    assert first["changed"] is True and len(first["written"]) == 9
    assert first["new_tasks"] == ["worker-0", "worker-1", "ps-0"]
    job = tmp_path / "job"
    assert (job / "tasks" / "worker-1" / "train.py").read_text() == "print('w1')\n"
    assert (job / "tasks" / "ps-0" / "train.py").read_text() == "print('other')\n"
    assert json.loads((job / "tasks" / "worker-1" / "tf_config.json").read_text()) == {
        "cluster": SPEC, "task": {"type": "worker", "index": 1}}
    assert (job / "tasks" / "ps-0" / "task.env").read_text() == (
        f"TFDIST_CLUSTER=mnist\nTFDIST_TASK=ps-0\nTFDIST_WORK_DIR={job}\nTFDIST_TASK_DIR={job}/tasks/ps-0\n")
    assert (job / "data").is_dir() and (job / "tasks" / "tensorboard").is_dir()

    second = run(scripts=scripts, script="print('other')\n", folders=["tensorboard"])
    assert second["changed"] is False and second["written"] == [] and second["new_tasks"] == []

    changed = run(scripts=dict(scripts, **{"worker-0": "print('new')\n"}), script="print('other')\n")
    assert changed["written"] == ["tasks/worker-0/train.py"] and changed["new_tasks"] == []


def test_check_mode_writes_nothing(run, tmp_path):
    result = run(check_mode=True, script="x = 1\n")
    assert result["changed"] is True and "tasks/ps-0/tf_config.json" in result["written"]
    assert result["new_tasks"] == ["worker-0", "worker-1", "ps-0"]
    assert not (tmp_path / "job").exists()


def test_gpus_are_shared_among_the_chief_and_workers_only(run, tmp_path):
    run(script="x = 1\n", gpus=1)
    env = {t["name"]: (tmp_path / "job" / "tasks" / t["name"] / "task.env").read_text() for t in TASKS}
    assert "CUDA_VISIBLE_DEVICES=0\n" in env["worker-0"] and "CUDA_VISIBLE_DEVICES=0\n" in env["worker-1"]
    assert "CUDA_VISIBLE_DEVICES=\n" in env["ps-0"]


def test_tf_keras_makes_tf_keras_every_task_s_keras_and_masks_nothing_of_the_result(run, tmp_path):
    result = run(script="x = 1\n", tf_keras=True)
    for task in TASKS:
        assert "TF_USE_LEGACY_KERAS=1\n" in (tmp_path / "job" / "tasks" / task["name"] / "task.env").read_text()
    # In task.env, not a never-logged value: a '1' of those is masked wherever it shows (worker-1, a start time).
    assert result["new_tasks"] == ["worker-0", "worker-1", "ps-0"]


def test_an_environment_given_as_json_is_masked_whole_never_value_by_value(run, tmp_path):
    # The training role passes tf_env as JSON: a user's short value ('1') is no longer masked wherever it shows.
    assert run(script="x = 1\n", env=json.dumps({"MY_FLAG": "1"}))["new_tasks"] == ["worker-0", "worker-1", "ps-0"]
    # Given as a mapping, Ansible's no_log masks each value wherever it shows: why the role passes JSON.
    masked = run(script="x = 1\n", env={"MY_FLAG": "1"}, work_dir=str(tmp_path / "other"))
    assert "worker-1" not in masked["new_tasks"]
    assert "env: must be a mapping" in run(script="x = 1\n", env="[1, 2]")["msg"]


def test_master_names_the_chief_for_estimator_era_scripts(run, tmp_path):
    run(script="x = 1\n", tasks=[{"name": "chief-0", "type": "chief", "index": 0}],
        cluster_spec={"chief": ["10.0.0.1:2222"]}, chief_name="master")
    config = json.loads((tmp_path / "job" / "tasks" / "chief-0" / "tf_config.json").read_text())
    assert config == {"cluster": {"master": ["10.0.0.1:2222"]}, "task": {"type": "master", "index": 0}}


def test_a_task_without_a_script_is_named(run, tmp_path):
    result = run(scripts={"worker-0": "x = 1\n"})
    assert result["failed"] is True and "worker-1" in result["msg"] and "scripts" in result["msg"]
    assert not (tmp_path / "job").exists()


def test_the_training_program_comes_in_the_same_call(run, tmp_path):
    lib = tmp_path / "lib"
    first = run(script="x = 1\n", package_dest=str(lib))
    assert first["changed"] is True and "train/job.py" in first["package_written"] and "SHA256SUMS" in first["package_written"]
    sums = (lib / "tfdist" / "SHA256SUMS").read_text()
    assert "train/job.py" in sums and (lib / "tfdist" / "_cluster.py").is_file()

    (lib / "tfdist" / "train" / "old_module.py").write_text("gone = True\n")
    again = run(script="x = 1\n", package_dest=str(lib))
    assert again["changed"] is True and again["written"] == [] and again["package_removed"] == ["train/old_module.py"]
    assert run(script="x = 1\n", package_dest=str(lib))["changed"] is False


def test_a_task_whose_files_changed_gets_its_python_started_ahead_and_a_rerun_starts_none(run, tmp_path):
    from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._json_files import read_json
    from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._warm_start import WARM_FILE, stop_warm

    job = tmp_path / "job"
    folders = [str(job / "tasks" / task["name"]) for task in TASKS]
    options = dict(script="x = 1\n", warm_python=sys.executable, warm_modules=["json"])
    try:
        first = run(**options)
        assert sorted(first["warm"]) == ["ps-0", "worker-0", "worker-1"]
        records = [read_json(os.path.join(folder, WARM_FILE)) for folder in folders]
        assert all(record and record["python"] == sys.executable for record in records)
        for folder in folders:
            stop_warm(folder)

        assert run(**options)["warm"] == []  # nothing changed: nothing starts
        assert run(**dict(options, scripts={"worker-1": "x = 2\n"}))["warm"] == ["worker-1"]
        assert run(check_mode=True, **dict(options, script="x = 3\n"))["warm"] == []
    finally:
        for folder in folders:
            stop_warm(folder)


@pytest.mark.parametrize("gpus, shared", [(0, ["ps-0", "worker-0", "worker-1"]), (2, [])])
def test_tasks_that_share_an_environment_share_one_import_and_a_gpu_task_imports_alone(run, tmp_path, gpus, shared):
    from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._json_files import read_json
    from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._warm_start import WARM_FILE, stop_warm

    folders = {task["name"]: str(tmp_path / "job" / "tasks" / task["name"]) for task in TASKS}
    try:
        result = run(script="x = 1\n", gpus=gpus, warm_python=sys.executable, warm_modules=["json"])
        assert sorted(result["warm"]) == ["ps-0", "worker-0", "worker-1"]
        hosts = {name: read_json(os.path.join(folder, WARM_FILE))["host"]
                 for name, folder in folders.items()}
        # Without GPUs the three differ only in their TFDIST_* variables: one warm host. With GPUs each worker has a
        # CUDA_VISIBLE_DEVICES of its own (read when TensorFlow starts CUDA), and the ps is left alone.
        assert sorted(name for name, host in hosts.items() if host) == shared
        assert len({host for host in hosts.values() if host}) == (1 if shared else 0)
    finally:
        for folder in folders.values():
            stop_warm(folder)


def test_the_dataset_comes_in_the_same_call_and_is_rewritten_only_when_it_differs(run, tmp_path):
    data = bytes(range(256)) * 4  # binary, as an .npz is
    encoded = {"name": "digits.npz", "content": base64.b64encode(data).decode()}
    first = run(script="x = 1\n", data=encoded)
    assert "data/digits.npz" in first["written"] and (tmp_path / "job" / "data" / "digits.npz").read_bytes() == data
    assert run(script="x = 1\n", data=encoded)["written"] == []
    newer = dict(encoded, content=base64.b64encode(data[::-1]).decode())
    assert run(script="x = 1\n", data=newer)["written"] == ["data/digits.npz"]
    assert (tmp_path / "job" / "data" / "digits.npz").read_bytes() == data[::-1]


@pytest.mark.parametrize("data, field", [({"name": "../escape.npz", "content": "AAAA"}, "data: name"),
                                         ({"name": "d.npz", "content": "not base64!"}, "data: content")])
def test_a_bad_dataset_is_named_and_nothing_is_written(run, tmp_path, data, field):
    result = run(script="x = 1\n", data=data)
    assert result["failed"] and result["msg"].startswith(field), result
    assert not (tmp_path / "job").exists() and not (tmp_path / "escape.npz").exists()


@pytest.mark.parametrize("option", ["data_src", "script_template"])
def test_the_action_s_options_reaching_the_module_alone_are_named(run, tmp_path, option):
    result = run(script="x = 1\n", **{option: str(tmp_path / "on-the-controller")})
    assert result["failed"] and result["msg"].startswith(option + ":") and "action" in result["msg"]
    assert not (tmp_path / "job").exists()
