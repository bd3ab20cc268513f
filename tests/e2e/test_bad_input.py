"""Bad input stops before anything is created, with a message naming the field."""

import os
import socket

import pytest

from ansible_cli import REPO, run_playbook, tail
from processes import free_port_block


def assert_nothing_created(name):
    assert not os.path.exists(os.path.join(REPO, "inventories", "clusters", f"{name}.local.yml"))
    assert not os.path.exists(os.path.join(REPO, "artifacts", name))
    assert not os.path.exists(os.path.join(REPO, ".cache", "run", name))


@pytest.mark.parametrize(
    "extra, field",
    [
        (["cloud=nowhere"], "cloud: unknown cloud 'nowhere'"),
        (["tf_workers=0"], "tf_workers: must be a whole number >= 1"),
        (["tf_ps=-1"], "tf_ps: must be a whole number >= 1"),
        (["tf_workers=two"], "tf_workers: must be a whole number"),
        (["tf_train_steps=0"], "tf_train_steps: must be a whole number >= 1"),
        (["tf_strategy=magic"], "tf_strategy: must be parameter_server or multi_worker_mirrored"),
        (["tf_strategy=multi_worker_mirrored", "tf_ps=2"], "tf_ps: multi_worker_mirrored uses no parameter servers"),
        (["tf_script=/nonexistent/train.py"], "tf_script: /nonexistent/train.py does not exist"),
        (["tf_data=/nonexistent/data.npz"], "tf_data: /nonexistent/data.npz does not exist"),
        (["tf_chief=2"], "tf_chief: a cluster has one chief or none (then worker 0 leads it), got 2"),
        (["tf_chief=0", "tf_workers=0"], "tf_workers: must be a whole number >= 1"),
        (["tf_chief=0", "tf_workers=0", "tf_strategy=multi_worker_mirrored"],
         "tf_workers: a cluster without a chief (tf_chief=0) needs at least one worker"),
        (["tf_chief=0", "tf_workers=1"], "tf_workers: the parameter_server strategy without a chief needs at least 2 workers"),
        (["tf_chief_name=boss"], "tf_chief_name: must be chief or master"),
        (["tf_spot=maybe"], "tf_spot: must be true or false"),
        (["tf_tensorboard=maybe"], "tf_tensorboard: must be true or false"),
        (["tf_ssh_from=203.0.113.7"], "tf_ssh_from: '203.0.113.7' is not a network the firewall can let in (no /BITS)"),
        (["tf_hdfs_ports=8020"], "tf_hdfs_ports: must be a list of port numbers"),
        (["tf_idle_minutes=abc"], "tf_idle_minutes: must be 0 (the idle guard off) or a number of minutes >= 1"),
        (["tf_idle_minutes=0.001"], "tf_idle_minutes: must be 0 (the idle guard off) or a number of minutes >= 1"),
        (["tf_stall_minutes=-1"], "tf_stall_minutes: must be a number of minutes >= 0"),
        (["tf_deadline=abc"], "tf_deadline: expected a duration such as 90s, 45m, 2h, 1d or 1h30m, got 'abc'"),
        (["tf_budget=-5"], "tf_budget: must be a number of US dollars the run may cost, more than 0 (empty: no budget)"),
        (["tf_restart=sometimes"], "tf_restart: must be never or on_failure"),
        (["tf_max_restarts=-1"], "tf_max_restarts: must be a whole number >= 0"),
        (["tf_spot=true"], "tf_spot: cloud=local has no spot capacity"),
        (["cloud=openstack", "tf_spot=true"],
         "tf_spot: cloud=openstack has no spot capacity (libcloud's openstack driver cannot ask for spot"),
    ],
)
def test_bad_input_names_the_field(cluster_name, extra, field):
    result = run_playbook("playbooks/deploy.yml", f"cluster_name={cluster_name}", *extra)
    assert result.returncode != 0
    assert field in result.stdout, tail(result)
    assert_nothing_created(cluster_name)


# A public port that is a TF or HDFS port, and SSH open to the world, are refused by check.yml (deploy.yml runs the
# same check first) naming both fields and the port: TF's servers and HDFS take no password.
PUBLIC_RADL = """\
network public (outbound = 'yes' and outports = '22/tcp,2222/tcp,8020/tcp')
system worker (cpu.count >= 1)
system ps (cpu.count >= 1)
deploy worker 2
deploy ps 1
"""


@pytest.mark.parametrize(
    "extra, message",
    [
        (["radl={radl}"], "radl: {radl} opens port 2222 (its outports), and 2222 is a TF port (tf_port_base=2222, "
                          "one port per task: 2222-2224)"),
        (["tf_tensorboard=true", "tf_tensorboard_port=9870"],
         "tf_tensorboard_port: TensorBoard's port 9870 is open to tf_ssh_from, and 9870 is an HDFS port "
         "(tf_hdfs_ports)"),
        (["tf_ssh_from=203.0.113.7/32,0.0.0.0/0"],
         "tf_ssh_from: '0.0.0.0/0' is wider than a /16: it lets that much of the internet reach the nodes' SSH and "
         "public ports (TensorBoard, the RADL's outports). Give the addresses that need it (your own: /32), or add "
         "-e tf_ssh_from_any=true if you mean it"),
    ],
)
def test_check_refuses_to_publish_tf_hdfs_or_ssh(cluster_name, tmp_path, extra, message):
    radl = tmp_path / "public.radl"
    radl.write_text(PUBLIC_RADL)
    extra = [arg.format(radl=radl) for arg in extra]
    result = run_playbook("playbooks/check.yml", f"cluster_name={cluster_name}", *extra)
    assert result.returncode != 0
    assert message.replace("{radl}", str(radl)) in result.stdout, tail(result)
    assert_nothing_created(cluster_name)


def test_bad_cluster_name_is_refused():
    result = run_playbook("playbooks/deploy.yml", "cluster_name=Bad_Name!")
    assert result.returncode != 0
    assert "cluster_name: 'Bad_Name!' is not a valid cluster name" in result.stdout, tail(result)


def test_port_in_use_stops_before_anything_changes(cluster_name):
    # In the machine's own network (no namespace of the cluster's), the ports are the machine's.
    base = free_port_block(4)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", base + 2))
        busy.listen()
        result = run_playbook("playbooks/deploy.yml", f"cluster_name={cluster_name}", f"tf_port_base={base}",
                              "local_isolated=false")
    assert result.returncode != 0
    assert f"tf_port_base: port {base + 2} (worker-1) is already in use" in result.stdout, tail(result)
    assert_nothing_created(cluster_name)


def test_a_script_that_does_not_compile_is_refused_naming_its_file_and_line(cluster_name, tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import tensorflow as tf\n\n\ndef main(:\n    pass\n")
    result = run_playbook("playbooks/deploy.yml", f"cluster_name={cluster_name}", f"tf_script={script}")
    assert result.returncode != 0
    assert f"tf_script: the script does not compile: {script}, line 4: SyntaxError: invalid syntax ('def main(:')" \
        in result.stdout, tail(result)
    assert_nothing_created(cluster_name)
