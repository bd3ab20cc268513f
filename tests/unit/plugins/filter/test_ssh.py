"""The cluster's ssh config (ssh_config) and the inventory source's ssh options (ssh_args): what ssh itself reads from
them (ssh -G), one rule for both (plugins/module_utils/_host_keys.py)."""

import shlex
import shutil
import subprocess

import pytest

from ansible_collections.tfdist.cluster.plugins.filter.ssh import ssh_args, ssh_config

needs_ssh = pytest.mark.skipif(not shutil.which("ssh"), reason="ssh is not installed")

NODES = [
    {"name": "demo-chief-0", "role": "chief", "address": "10.0.0.5"},
    {"name": "demo-worker-0", "role": "worker", "address": "10.0.0.7"},
]


def ssh_reads(*args):
    """The settings ssh would use to connect (ssh -G): {name: value}, names lower case as ssh prints them."""
    config = subprocess.run(["ssh", "-G", *args], capture_output=True, text=True, check=True).stdout
    return dict(line.split(" ", 1) for line in config.splitlines() if " " in line)


def written(tmp_path, text):
    path = tmp_path / "demo.ssh_config"
    path.write_text(text)
    return str(path)


@needs_ssh
def test_a_pinned_node_is_reached_at_its_address_with_the_clusters_key_and_only_its_pinned_host_key(tmp_path):
    key, known_hosts = str(tmp_path / "my keys" / "demo"), str(tmp_path / "my keys" / "demo.known_hosts")
    config = written(tmp_path, ssh_config(NODES, "debian", key, known_hosts=known_hosts, port=2200, cluster="demo"))

    settings = ssh_reads("-F", config, "demo-worker-0")
    assert settings["hostname"] == "10.0.0.7" and settings["user"] == "debian" and settings["port"] == "2200"
    assert settings["identityfile"] == key and settings["identitiesonly"] == "yes"
    assert settings["stricthostkeychecking"] == "true"
    assert settings["userknownhostsfile"] == known_hosts and settings["globalknownhostsfile"] == "/dev/null"
    assert settings["hostkeyalias"] == "demo-worker-0"
    # Each node its own block: the chief's address and alias, not worker 0's.
    chief = ssh_reads("-F", config, "demo-chief-0")
    assert chief["hostname"] == "10.0.0.5" and chief["hostkeyalias"] == "demo-chief-0"


@needs_ssh
def test_the_config_checks_host_keys_as_the_inventory_sources_ssh_args_do(tmp_path):
    known_hosts = str(tmp_path / "my keys" / "demo.known_hosts")
    for pinned_in in (known_hosts, ""):
        config = written(tmp_path, ssh_config(NODES, "root", "/keys/demo", known_hosts=pinned_in))
        from_config = ssh_reads("-F", config, "demo-worker-0")
        from_args = ssh_reads("-F", "/dev/null", *shlex.split(ssh_args(pinned_in, "demo-worker-0")), "10.0.0.7")
        for setting in ("stricthostkeychecking", "userknownhostsfile", "globalknownhostsfile", "hostkeyalias",
                        "loglevel"):
            assert from_config.get(setting) == from_args.get(setting), (pinned_in, setting)


@needs_ssh
def test_nodes_without_pinned_keys_are_not_checked_and_nothing_is_kept(tmp_path):
    config = written(tmp_path, ssh_config(NODES, "root", "/keys/demo"))

    settings = ssh_reads("-F", config, "demo-worker-0")
    assert settings["stricthostkeychecking"] == "false" and settings["userknownhostsfile"] == "/dev/null"
    assert "hostkeyalias" not in settings
    # The inventory source's arguments for such nodes, as its template wrote them before this rule had one home.
    assert ssh_args("") == "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"


@needs_ssh
def test_a_relative_key_is_made_absolute_as_ssh_run_elsewhere_would_not_find_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = written(tmp_path, ssh_config(NODES, "root", "keys/demo", known_hosts="keys/demo.known_hosts"))

    settings = ssh_reads("-F", config, "demo-worker-0")
    assert settings["identityfile"] == str(tmp_path / "keys" / "demo")
    assert settings["userknownhostsfile"] == str(tmp_path / "keys" / "demo.known_hosts")


def test_a_node_without_an_address_is_named_and_gets_no_block():
    text = ssh_config(NODES + [{"name": "demo-worker-1", "role": "worker", "address": None}], "root", "/keys/demo",
                      cluster="demo")

    assert text.startswith("# ssh config of cluster demo,")
    assert [line for line in text.splitlines() if line.startswith("Host ")] == [
        "Host demo-chief-0", "Host demo-worker-0"]
    assert "# demo-worker-1: no address yet" in text
