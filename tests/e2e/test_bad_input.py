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


def test_bad_cluster_name_is_refused():
    result = run_playbook("playbooks/deploy.yml", "cluster_name=Bad_Name!")
    assert result.returncode != 0
    assert "cluster_name: 'Bad_Name!' is not a valid cluster name" in result.stdout, tail(result)


def test_port_in_use_stops_before_anything_changes(cluster_name):
    base = free_port_block(4)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", base + 2))
        busy.listen()
        result = run_playbook("playbooks/deploy.yml", f"cluster_name={cluster_name}", f"tf_port_base={base}")
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
