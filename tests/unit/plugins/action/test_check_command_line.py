"""The command line's rules (the check_command_line action): the first one broken, naming its field."""

import subprocess

import pytest

from ansible_collections.tfdist.cluster.plugins.action.check_command_line import SETTINGS, first_error
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._storage import storage_plan

# The playbooks' defaults, as the task passes them (strings where the command line gives strings).
DEFAULTS = {"cloud": "local", "tf_chief": "1", "tf_workers": "2", "tf_ps": "1", "tf_evaluators": "0",
            "tf_train_steps": "2000", "tf_batch_size": "64", "tf_port_base": "2222", "tf_tensorboard_port": "6006",
            "tf_max_restarts": "3", "tf_chief_name": "chief", "tf_strategy": "parameter_server", "tf_spot": "False",
            "tf_restart": "never", "tf_idle_minutes": "30", "tf_deadline": "", "tf_budget": "", "tf_stall_minutes": "15",
            "tf_worker_loss": "fail", "tf_script": "",
            "tf_script_interface": "tf_config", "tf_hdfs": False, "tf_stage_data": "", "tf_data": "builtin:digits",
            "tf_tensorboard": False, "tf_keras": False, "tf_env": {}, "tf_ssh_from": [], "tf_ssh_from_any": False,
            "tf_hdfs_ports": [8020, 9864, 9866, 9867, 9870], "teardown": False, "image": "stock",
            "tf_ssh_key": ""}


def error_of(radl=None, radl_path="", script_path="", public_ports=(), ssh_key_path="", **changes):
    settings = dict(DEFAULTS, **changes)
    storage = storage_plan(settings["tf_data"], settings["tf_stage_data"], "", "", settings["tf_hdfs"] is True, "/tmp",
                           "/tmp/cache", "")
    return first_error(settings, storage, radl or {}, radl_path, script_path, public_ports, ssh_key_path)


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
    ({"tf_keras": "2"}, "tf_keras: must be true or false (tf-keras on the nodes, tf.keras is Keras 2), got '2'"),
    ({"tf_env": "AWS_PROFILE=ml"}, "tf_env: must be a mapping of environment variable names to values"),
    ({"tf_env": {"AWS PROFILE": "ml"}}, "tf_env: must be a mapping of environment variable names to values, e.g. "
     "-e '{\"tf_env\": {\"AWS_PROFILE\": \"ml\"}}', got {'AWS PROFILE': 'ml'} ('AWS PROFILE' is not a variable name)"),
    ({"tf_hdfs": "yess"}, "tf_hdfs: must be true or false (HDFS on the cluster), got 'yess'"),
    ({"teardown": "later"}, "teardown: must be true or false"),
    ({"tf_ssh_from": ["203.0.113.7/32", "10.0.0.0/16", "notacidr"]}, "tf_ssh_from: 'notacidr' is not a network"),
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
    ({"tf_budget": "0"}, "tf_budget: must be a number of US dollars the run may cost, more than 0 (empty: no budget), "
                         "got '0'"),
    ({"tf_budget": "$5"}, "tf_budget: must be a number of US dollars the run may cost, more than 0 (empty: no budget), "
                          "got '$5'"),
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
    assert error_of(tf_ssh_from=["203.0.113.7/32", "2001:db8::/48"], tf_hdfs_ports=["8020", 9864]) == ""


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


def test_a_key_of_your_own_is_a_private_key_ssh_takes_as_it_is(tmp_path):
    key = tmp_path / "id_ed25519"
    assert error_of(tf_ssh_key="id_ed25519", ssh_key_path=str(key)) == (
        "tf_ssh_key: id_ed25519 is not a file on the controller")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    assert error_of(tf_ssh_key="id_ed25519", ssh_key_path=str(key)) == ""
    key.chmod(0o644)
    assert error_of(tf_ssh_key="id_ed25519", ssh_key_path=str(key)) == (
        f"tf_ssh_key: {key} can be read by others and ssh refuses such a key; chmod 0600 it")
    key.chmod(0o600)
    subprocess.run(["ssh-keygen", "-q", "-p", "-N", "secret", "-P", "", "-f", str(key)], check=True,
                   capture_output=True)
    assert error_of(tf_ssh_key="id_ed25519", ssh_key_path=str(key)).startswith(
        f"tf_ssh_key: {key} is not a private key ssh can use without a passphrase")
    (tmp_path / "notes.txt").write_text("not a key\n")
    (tmp_path / "notes.txt").chmod(0o600)
    assert error_of(tf_ssh_key="notes.txt", ssh_key_path=str(tmp_path / "notes.txt")).startswith(
        "tf_ssh_key: %s is not a private key" % (tmp_path / "notes.txt"))


def test_durations_and_minutes_that_are_fine():
    assert error_of(tf_deadline="90m", tf_stall_minutes="0.5", tf_idle_minutes="0") == ""
    assert error_of(tf_deadline="1h30m", tf_idle_minutes="1") == ""
    assert error_of(tf_budget="7.50") == "" and error_of(tf_budget="5") == ""


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


# The TF ports of the defaults: 2222 and one more per task (1 chief, 2 workers, 1 ps).
TF_PORTS = "a TF port (tf_port_base=2222, one port per task: 2222-2225), which only the cluster's own nodes may reach"


@pytest.mark.parametrize("radl_ports, message", [
    ([22, 2222, 6006], "radl: radl/x.radl opens port 2222 (its outports), and 2222 is " + TF_PORTS),
    ([2225], "radl: radl/x.radl opens port 2225 (its outports), and 2225 is " + TF_PORTS),
    ([8020], "radl: radl/x.radl opens port 8020 (its outports), and 8020 is an HDFS port (tf_hdfs_ports)"),
    # The IM's notation: a range, a public port mapped to the node's, a range from one network.
    (["2200:2300/tcp"], "radl: radl/x.radl opens port 2200:2300/tcp (its outports), and 2222 is " + TF_PORTS),
    (["80-9870/tcp"], "radl: radl/x.radl opens port 80-9870/tcp (its outports), and 9870 is an HDFS port"),
    (["10.0.0.0/8-9860:9869/tcp"],
     "radl: radl/x.radl opens port 10.0.0.0/8-9860:9869/tcp (its outports), and 9864 is an HDFS port"),
])
def test_a_public_port_that_is_a_tf_or_hdfs_port_is_refused_naming_both(radl_ports, message):
    radl = {"ps": 1, "ports": radl_ports}
    assert error_of(radl=radl, radl_path="radl/x.radl").startswith(message)


def test_the_tensorboard_port_is_neither_a_tf_nor_an_hdfs_port():
    assert error_of(tf_tensorboard=True, tf_tensorboard_port="2223").startswith(
        "tf_tensorboard_port: TensorBoard's port 2223 is open to tf_ssh_from, and 2223 is " + TF_PORTS)
    assert error_of(tf_tensorboard=True, tf_tensorboard_port="9870").startswith(
        "tf_tensorboard_port: TensorBoard's port 9870 is open to tf_ssh_from, and 9870 is an HDFS port (tf_hdfs_ports)")
    # No TensorBoard, no port of its own; TF's ports moved away from it.
    assert error_of(tf_tensorboard_port="2222") == ""
    assert error_of(tf_tensorboard=True, tf_tensorboard_port="2222", tf_port_base="3000") == ""
    # A port set on the role itself (provision_public_ports) is checked too.
    assert error_of(public_ports=["2220-2230"]).startswith(
        "provision_public_ports: 2220-2230 is open to tf_ssh_from, and 2222 is " + TF_PORTS)
    assert error_of(public_ports=["abc"]).startswith("provision_public_ports[0]: 'abc' is not a port")


def test_ports_away_from_tf_and_hdfs_are_fine():
    radl = {"ps": 1, "ports": [22, 6006, "8000:8010/tcp", "2222/udp", "2222-8888/tcp"]}
    assert error_of(radl=radl, radl_path="radl/x.radl", tf_tensorboard=True, public_ports=["6006", "7000-7010"]) == ""


@pytest.mark.parametrize("cidr, bits", [("0.0.0.0/0", 16), ("10.0.0.0/8", 16), ("172.16.0.0/15", 16), ("::/0", 48),
                                        ("2001:db8::/32", 48)])
def test_ssh_from_wider_than_a_site_is_refused_unless_the_user_means_it(cidr, bits):
    assert error_of(tf_ssh_from=["203.0.113.7/32", cidr]) == (
        "tf_ssh_from: '%s' is wider than a /%d: it lets that much of the internet reach the nodes' SSH and public "
        "ports (TensorBoard, the RADL's outports). Give the addresses that need it (your own: /32), or add "
        "-e tf_ssh_from_any=true if you mean it" % (cidr, bits))
    assert error_of(tf_ssh_from=[cidr], tf_ssh_from_any="true") == ""
    assert error_of(tf_ssh_from=[cidr], tf_ssh_from_any="sure").startswith("tf_ssh_from_any: must be true or false")


def test_ssh_from_a_site_is_fine():
    assert error_of(tf_ssh_from=["172.16.0.0/16", "2001:db8:1::/48", "203.0.113.7/32"]) == ""
