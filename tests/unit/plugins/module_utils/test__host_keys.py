"""The nodes' host keys (_host_keys): made on the controller, pinned in the cluster's known_hosts by node name, the ssh
options that accept only them, and the message for a node that answers with another key."""

import os
import shlex
import shutil
import stat
import subprocess

import pytest
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_ssh_private_key

from ansible_collections.tfdist.cluster.plugins.module_utils._host_keys import (
    new_host_key,
    pinned,
    record,
    refusal,
    secret_parts,
    ssh_args,
)

# What Ansible's ssh connection reports when ssh refuses a changed host key (the banner shortened).
CHANGED = ("Failed to connect to the host via ssh: @@@@@@@@@@@\r\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!"
           "     @\r\n...\r\nHost key for demo-worker-0 has changed and you have requested strict checking.\r\n"
           "Host key verification failed.")


def test_a_host_key_is_an_ed25519_pair_for_the_node():
    host_key = new_host_key("demo-worker-0")

    private = load_ssh_private_key(host_key.private.encode(), password=None)
    public = private.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode()
    assert host_key.public == public + " root@demo-worker-0"
    assert public.startswith("ssh-ed25519 ")
    assert new_host_key("demo-worker-0").public != host_key.public  # a new pair every time
    # The masked parts cover the whole body of the private key, and only it.
    body = [line for line in host_key.private.splitlines() if not line.startswith("-----")]
    assert secret_parts(host_key) == body and all(len(part) > 20 for part in body)


def test_record_pins_each_node_by_name_in_a_file_of_its_users_own(tmp_path):
    known_hosts = tmp_path / "keys" / "demo.known_hosts"
    chief, worker = new_host_key("demo-chief-0"), new_host_key("demo-worker-0")

    assert record(str(known_hosts), {"demo-chief-0": chief.public, "demo-worker-0": worker.public}) is True

    assert known_hosts.read_text() == ("demo-chief-0 %s\ndemo-worker-0 %s\n"
                                       % (" ".join(chief.public.split()[:2]), " ".join(worker.public.split()[:2])))
    assert stat.S_IMODE(known_hosts.stat().st_mode) == 0o600
    assert stat.S_IMODE(known_hosts.parent.stat().st_mode) == 0o700
    assert pinned(str(known_hosts)) == {"demo-chief-0": " ".join(chief.public.split()[:2]),
                                        "demo-worker-0": " ".join(worker.public.split()[:2])}


def test_a_node_made_again_replaces_its_line_others_stay_and_nothing_new_writes_nothing(tmp_path):
    known_hosts = str(tmp_path / "demo.known_hosts")
    record(known_hosts, {"demo-chief-0": new_host_key("demo-chief-0").public,
                         "demo-worker-0": new_host_key("demo-worker-0").public})
    before = pinned(known_hosts)
    replaced = new_host_key("demo-worker-0")

    assert record(known_hosts, {"demo-worker-0": replaced.public}) is True

    after = pinned(known_hosts)
    assert after == dict(before, **{"demo-worker-0": " ".join(replaced.public.split()[:2])})
    written = os.stat(known_hosts).st_mtime_ns
    assert record(known_hosts, {"demo-worker-0": replaced.public}) is False
    assert record(known_hosts, {}, forget=["demo-ps-0"]) is False  # a node it never pinned
    assert os.stat(known_hosts).st_mtime_ns == written


def test_the_lines_of_removed_nodes_go(tmp_path):
    known_hosts = str(tmp_path / "demo.known_hosts")
    record(known_hosts, {name: new_host_key(name).public for name in ("demo-worker-0", "demo-worker-1")})

    assert record(known_hosts, {}, forget=["demo-worker-1"]) is True

    assert list(pinned(known_hosts)) == ["demo-worker-0"]


@pytest.mark.skipif(not shutil.which("ssh"), reason="ssh is not installed")
def test_ssh_reads_the_options_as_pinning_the_node_by_name_in_that_file_alone(tmp_path):
    """What ssh makes of the options once Ansible splits them (shlex), with a space in the file's path."""
    known_hosts = str(tmp_path / "my keys" / "demo.known_hosts")

    args = shlex.split(ssh_args(known_hosts, "demo-worker-0"))
    config = subprocess.run(["ssh", "-G", *args, "10.0.0.7"], capture_output=True, text=True, check=True).stdout

    settings = dict(line.split(" ", 1) for line in config.splitlines() if " " in line)
    assert settings["stricthostkeychecking"] == "true"
    assert settings["userknownhostsfile"] == known_hosts
    assert settings["globalknownhostsfile"] == "/dev/null"
    assert settings["hostkeyalias"] == "demo-worker-0"
    assert settings["hostname"] == "10.0.0.7"


def test_a_refusal_names_the_node_and_the_file(tmp_path):
    known_hosts = str(tmp_path / "demo.known_hosts")
    record(known_hosts, {"demo-worker-0": new_host_key("demo-worker-0").public})

    assert refusal("demo-worker-0", known_hosts, CHANGED).startswith(
        "node demo-worker-0 answered with a host key other than the one tfdist gave it at creation (known_hosts: %s); "
        "refusing to connect" % known_hosts)
    unknown = refusal("demo-worker-1", known_hosts, "No ED25519 host key is known for demo-worker-1 and you have "
                                                    "requested strict checking.\r\nHost key verification failed.")
    assert unknown.startswith("node demo-worker-1 has no host key in its cluster's known_hosts (%s)" % known_hosts)
    assert refusal("demo-worker-0", known_hosts, "ssh: connect to host 10.0.0.7 port 22: Connection refused") is None
