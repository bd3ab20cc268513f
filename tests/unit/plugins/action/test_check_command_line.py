"""The command line's rules (the check_command_line action): the first one broken, naming its field."""

import pytest

from ansible_collections.tfdist.cluster.plugins.action.check_command_line import SETTINGS, first_error
from ansible_collections.tfdist.cluster.plugins.module_utils._storage import storage_plan

# The playbooks' defaults, as the task passes them (strings where the command line gives strings).
DEFAULTS = {"cloud": "local", "tf_chief": "1", "tf_workers": "2", "tf_ps": "1", "tf_evaluators": "0",
            "tf_train_steps": "2000", "tf_batch_size": "64", "tf_port_base": "2222", "tf_tensorboard_port": "6006",
            "tf_max_restarts": "3", "tf_chief_name": "chief", "tf_strategy": "parameter_server", "tf_spot": "False",
            "tf_restart": "never", "tf_idle_minutes": "30", "tf_deadline": "", "tf_stall_minutes": "15",
            "tf_worker_loss": "fail", "tf_script": "",
            "tf_script_interface": "tf_config", "tf_hdfs": False, "tf_stage_data": "", "tf_data": "builtin:digits",
            "tf_tensorboard": False, "tf_ssh_from": [], "tf_hdfs_ports": [8020, 9864, 9866, 9867, 9870],
            "teardown": False, "image": "stock"}


def error_of(radl=None, radl_path="", script_path="", **changes):
    settings = dict(DEFAULTS, **changes)
    storage = storage_plan(settings["tf_data"], settings["tf_stage_data"], "", "", settings["tf_hdfs"] is True, "/tmp",
                           "/tmp/cache", "")
    return first_error(settings, storage, radl or {}, radl_path, script_path)


def test_the_defaults_break_no_rule():
    assert set(DEFAULTS) == set(SETTINGS)
    assert error_of() == ""


@pytest.mark.parametrize("changes, message", [
    ({"tf_workers": "0"}, "tf_workers: must be a whole number >= 1 (workers run the training steps), got '0'"),
    ({"tf_workers": "two"}, "tf_workers: must be a whole number >= 1"),
    ({"tf_ps": "-1"}, "tf_ps: must be a whole number >= 1"),
    ({"tf_port_base": "80"}, "tf_port_base: must be a whole number >= 1024 (first TF port), got '80'"),
    ({"tf_train_steps": "1.5"}, "tf_train_steps: must be a whole number >= 1"),
    ({"tf_chief": "2"}, "tf_chief: a cluster has one chief or none (then worker 0 leads it), got 2"),
    ({"tf_chief": "0", "tf_workers": "1"}, "tf_workers: the parameter_server strategy without a chief needs at least 2"),
    ({"tf_chief_name": "boss"}, "tf_chief_name: must be chief or master (Estimator-era scripts), got 'boss'"),
    ({"tf_strategy": "magic"}, "tf_strategy: must be parameter_server or multi_worker_mirrored, got 'magic'"),
    ({"tf_spot": "maybe"}, "tf_spot: must be true or false"),
    # A word Ansible's bool filter does not know would silently read as false.
    ({"tf_tensorboard": "maybe"}, "tf_tensorboard: must be true or false (TensorBoard on the leader), got 'maybe'"),
    ({"tf_hdfs": "yess"}, "tf_hdfs: must be true or false (HDFS on the cluster), got 'yess'"),
    ({"teardown": "later"}, "teardown: must be true or false"),
    ({"tf_ssh_from": ["203.0.113.7/32", "10.0.0.0/8", "notacidr"]}, "tf_ssh_from: 'notacidr' is not a network"),
    ({"tf_ssh_from": ["203.0.113.7"]}, "tf_ssh_from: '203.0.113.7' is not a network the firewall can let in (no /BITS)"),
    ({"tf_ssh_from": ["10.1.2.3/8"]}, "tf_ssh_from: '10.1.2.3/8' is not a network the firewall can let in (10.1.2.3/8 has host bits set)"),
    ({"tf_hdfs_ports": "abc"}, "tf_hdfs_ports: must be a list of port numbers (1-65535)"),
    ({"tf_hdfs_ports": [8020, 70000]}, "tf_hdfs_ports: must be a list of port numbers (1-65535)"),
    ({"tf_restart": "sometimes"}, "tf_restart: must be never or on_failure"),
    ({"tf_idle_minutes": "-5"}, "tf_idle_minutes: must be 0 (the idle guard off) or a number of minutes >= 1"),
    # A node could power itself off between two tasks of a deploy.
    ({"tf_idle_minutes": "0.001"}, "tf_idle_minutes: must be 0 (the idle guard off) or a number of minutes >= 1"),
    ({"tf_stall_minutes": "-1"}, "tf_stall_minutes: must be a number of minutes >= 0"),
    ({"tf_deadline": "abc"}, "tf_deadline: expected a duration such as 90s, 45m, 2h, 1d or 1h30m, got 'abc'"),
    ({"tf_deadline": "0m"}, "tf_deadline: must be longer than 0 (leave it empty for no deadline), got '0m'"),
    ({"tf_worker_loss": "ignore"}, "tf_worker_loss: must be fail or tolerate, got 'ignore'"),
    ({"image": "latest"}, "image: must be stock (the cloud profile's images) or baked (those playbooks/image.yml baked), got 'latest'"),
    ({"tf_strategy": "multi_worker_mirrored", "tf_ps": "2"}, "tf_ps: multi_worker_mirrored uses no parameter servers"),
    ({"tf_hdfs": True}, "tf_hdfs: cloud=local has no cluster nodes to run HDFS on"),
    ({"cloud": "docker", "tf_hdfs": True, "tf_strategy": "multi_worker_mirrored", "tf_ps": "0", "tf_workers": "0"},
     "tf_hdfs: the DataNodes run on the workers, and tf_workers is 0"),
    ({"tf_data": "/nonexistent/data.npz"}, "tf_data: /nonexistent/data.npz does not exist on the controller"),
    ({"tf_data": "s3://bucket/data.npz", "tf_stage_data": "/nonexistent/d.npz"},
     "tf_stage_data: /nonexistent/d.npz does not exist on the controller"),
])
def test_a_broken_rule_names_its_field(changes, message):
    assert error_of(**changes).startswith(message)


def test_switches_and_networks_as_the_command_line_gives_them_are_fine():
    assert error_of(tf_tensorboard="true", teardown="yes", tf_spot="False") == ""
    assert error_of(cloud="docker", tf_hdfs="true") == ""
    assert error_of(tf_ssh_from=["203.0.113.7/32", "2001:db8::/32"], tf_hdfs_ports=["8020", 9864]) == ""


def test_the_counts_come_first_then_the_shape_then_the_choices():
    # Two rules broken: the one a user fixes first is named (a bad count before a bad name).
    assert error_of(tf_workers="x", tf_chief_name="boss").startswith("tf_workers:")
    assert error_of(tf_chief="2", tf_strategy="magic").startswith("tf_chief:")
    assert error_of(tf_strategy="magic", tf_worker_loss="x").startswith("tf_strategy:")


def test_a_script_of_your_own_must_be_a_file_and_its_interface_known(tmp_path):
    script = tmp_path / "train.py"
    assert error_of(tf_script="train.py", script_path=str(script)).startswith(
        "tf_script: train.py does not exist on the controller (or is not a file)")
    script.write_text("print(1)\n")
    assert error_of(tf_script="train.py", script_path=str(script)) == ""
    assert error_of(tf_script="train.py", script_path=str(tmp_path)).startswith("tf_script:")  # a folder
    assert error_of(tf_script="train.py", script_path=str(script), tf_script_interface="argv").startswith(
        "tf_script_interface: must be tf_config or flags, got 'argv'")
    # Your own script decides how it trains: the strategy's rule of the shape is not applied.
    assert error_of(tf_chief="0", tf_workers="1").startswith("tf_workers: the parameter_server strategy")
    assert error_of(tf_script="train.py", script_path=str(script), tf_chief="0", tf_workers="1") == ""


def test_a_script_that_does_not_compile_is_refused_naming_its_file_and_line(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import os\n\ndef main(:\n    pass\n")
    assert error_of(tf_script="train.py", script_path=str(script)) == (
        f"tf_script: the script does not compile: {script}, line 3: SyntaxError: invalid syntax ('def main(:')")
    script.write_text("def main():\nreturn 1\n")
    assert "line 2: IndentationError: expected an indented block" in error_of(tf_script="x", script_path=str(script))
    # A template is Python only once rendered for a task.
    template = tmp_path / "train.py.j2"
    template.write_text("steps = {{ training_steps }}\n")
    assert error_of(tf_script="train.py.j2", script_path=str(template)) == ""


def test_durations_and_minutes_that_are_fine():
    assert error_of(tf_deadline="90m", tf_stall_minutes="0.5", tf_idle_minutes="0") == ""
    assert error_of(tf_deadline="1h30m", tf_idle_minutes="1") == ""


def test_the_command_line_and_the_radl_file_agree():
    radl = {"cloud": "docker", "chief": 1, "workers": 3, "ps": 1, "evaluators": None}
    assert error_of(radl=radl, radl_path="radl/x.radl", cloud="docker", tf_workers="3") == ""
    assert error_of(radl=radl, radl_path="radl/x.radl", cloud="docker", tf_workers="5") == (
        "tf_workers=5 contradicts radl/x.radl, which says 3 (deploy worker). Change the file, or leave tf_workers "
        "off the command line.")
    assert error_of(radl=radl, radl_path="radl/x.radl").startswith("cloud=local contradicts radl/x.radl")
    no_ps = {"cloud": "local", "chief": 1, "workers": 2, "ps": 0}
    assert error_of(radl=no_ps, radl_path="radl/y.radl", tf_ps="0").startswith(
        "radl: radl/y.radl deploys no ps system, and tf_strategy=parameter_server needs one.")
