"""tfdist.cluster.libcloud_node with user_data.known_hosts, on a fake cloud that takes user-data as EC2 does and hands
it back in its node data as GCE does: the new nodes of a role get one host key, pinned by name on the controller and
carried in a tag, from which a controller that did not make them pins them too."""

import json
import os

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args

from ansible_collections.tfdist.cluster.plugins.module_utils._clouds import PROVIDERS
from ansible_collections.tfdist.cluster.plugins.module_utils._host_keys import pinned
from ansible_collections.tfdist.cluster.plugins.module_utils._provider import CloudProvider
from ansible_collections.tfdist.cluster.plugins.modules import libcloud_node

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG4rT3vTt99Ox5kndS4HmgTrKBT8SKzhK4rhGkEVGlCI tfdist-demo"
PROVIDER = "fake_cloud_init"


@pytest.fixture
def run(capsys, cloud, tmp_path, monkeypatch):
    """Run the module on the fake cloud (tests/unit/conftest.py), its nodes taking user-data (ex_userdata) and keeping
    it in their extra data, with user-data and known_hosts; returns (its JSON result, its raw output)."""
    class CloudInitCloud(cloud):
        type = PROVIDER

        def create_node(self, name, size, image, location=None, ex_metadata=None, ex_userdata=None):
            if name in echo_names:  # an API error that quotes the request
                raise RuntimeError("invalid request: UserData=%s" % ex_userdata)
            return self._create(name, size, image, {"tags": dict(ex_metadata or {}), "user_data": ex_userdata})

    echo_names = set()

    monkeypatch.setitem(PROVIDERS, PROVIDER, CloudProvider(PROVIDER, driver=CloudInitCloud, tag_arg="ex_metadata",
                                                           user_data_arg="ex_userdata"))
    known_hosts = str(tmp_path / "keys" / "demo.known_hosts")

    def run_module(check_mode=False, **counts):
        args = dict(provider=PROVIDER, cluster="demo", wait_timeout=30, _ansible_check_mode=check_mode,
                    roles=[dict(role=role, count=count, size="Small", image="1") for role, count in counts.items()],
                    user_data=dict(user="debian", public_key=KEY, known_hosts=known_hosts))
        with patch_module_args(args), pytest.raises(SystemExit):
            libcloud_node.main()
        out = capsys.readouterr().out
        return json.loads(out), out
    run_module.known_hosts = known_hosts
    run_module.echo_names = echo_names
    return run_module


def user_data(node):
    return yaml.safe_load(node.extra["user_data"])


def pinned_key(public_line):
    return " ".join(public_line.split()[:2])


def test_the_new_nodes_of_a_role_share_a_host_key_pinned_by_name_and_none_shows_in_the_result(run, cloud):
    result, out = run(chief=1, worker=2)

    assert result["changed"] is True
    given = {node.name: user_data(node)["ssh_keys"] for node in cloud.nodes}
    assert pinned(run.known_hosts) == {name: pinned_key(keys["ed25519_public"]) for name, keys in given.items()}
    keys = pinned(run.known_hosts)
    # One key per role: the workers' user-data is one, so that the cloud can make them in one call.
    assert keys["demo-worker-0"] == keys["demo-worker-1"] != keys["demo-chief-0"]
    assert {node.name: node.extra["tags"]["tfdist_host_key"] for node in cloud.nodes} == keys
    for node in cloud.nodes:
        assert user_data(node)["users"][0]["ssh_authorized_keys"] == [KEY]  # the login as before
    # The private keys: masked where they could show, and the user-data that carries them not returned at all.
    assert "PRIVATE KEY" not in out and "ed25519_private" not in out
    for keys in given.values():
        for line in keys["ed25519_private"].splitlines()[1:-1]:
            assert line not in out
    assert all("user_data" not in node["extra"] for node in result["nodes"])


def test_a_second_run_and_a_check_change_nothing_and_a_replaced_node_gets_a_new_line(run, cloud):
    run(chief=1, worker=2)
    before = pinned(run.known_hosts)

    assert run(chief=1, worker=2)[0]["changed"] is False
    assert pinned(run.known_hosts) == before
    lost = next(node for node in cloud.nodes if node.name == "demo-worker-1")
    cloud.nodes.remove(lost)  # the cloud took it: a deploy creates it again under its name
    assert run(check_mode=True, chief=1, worker=2)[0]["changed"] is True
    assert pinned(run.known_hosts) == before  # a check writes nothing

    result, out = run(chief=1, worker=2)

    assert [node["name"] for node in result["created"]] == ["demo-worker-1"]
    after = pinned(run.known_hosts)
    new = next(node for node in cloud.nodes if node.name == "demo-worker-1")
    assert after == dict(before, **{"demo-worker-1": pinned_key(user_data(new)["ssh_keys"]["ed25519_public"])})
    assert after["demo-worker-1"] != before["demo-worker-1"]


def test_the_lines_of_the_nodes_a_run_removes_go(run, cloud):
    run(chief=1, worker=2)

    result, out = run(chief=1, worker=1)

    assert [node["name"] for node in result["removed"]] == ["demo-worker-1"]
    assert sorted(pinned(run.known_hosts)) == ["demo-chief-0", "demo-worker-0"]


def test_a_cloud_error_that_quotes_the_user_data_shows_no_private_key(run, cloud):
    run.echo_names.add("demo-worker-0")

    result, out = run(worker=1)

    assert result["failed"] is True
    assert result["msg"].startswith("Failed to create demo-worker-0 (role worker, index 0): invalid request: UserData=")
    # The error is shown, the key's body masked line by line (in the cloud-config's JSON, its line breaks are \\n).
    assert "ed25519_public" in result["msg"]
    assert "OPENSSH PRIVATE KEY-----\\n********\\n********" in result["msg"]
    assert "b3BlbnNzaC1rZXktdjE" not in out  # 'openssh-key-v1', how every OpenSSH private key's body begins
    assert pinned(run.known_hosts) == {}  # no node, no line


def test_a_controller_without_the_known_hosts_pins_the_nodes_from_their_tags(run, cloud):
    run(chief=1, worker=2)
    made_by_another = pinned(run.known_hosts)
    os.remove(run.known_hosts)  # this controller never made the cluster (a fresh execution environment)

    planned = run(check_mode=True, chief=1, worker=2)[0]
    assert planned["changed"] is True and planned["nothing_to_do"] is False  # so the provision role runs it for real
    assert not os.path.exists(run.known_hosts)
    result, out = run(chief=1, worker=2)

    assert result["created"] == [] and result["changed"] is True  # the file it wrote
    assert pinned(run.known_hosts) == made_by_another
    assert run(chief=1, worker=2)[0]["changed"] is False
