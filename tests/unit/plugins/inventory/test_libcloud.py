"""tfdist.cluster.libcloud inventory against a fake libcloud cloud (see tests/unit/conftest.py)."""

import pytest
import yaml
from ansible.errors import AnsibleError
from ansible.inventory.data import InventoryData
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import inventory_loader
from ansible.template import Templar, is_trusted_as_template, trust_as_template

from ansible_collections.tfdist.cluster.plugins.module_utils._host_keys import ssh_args


def tags(cluster, role, index):
    return {"tfdist_cluster": cluster, "tfdist_role": role, "tfdist_index": str(index)}


def add_node(cloud, cluster, role, index, **attributes):
    return cloud.add("%s-%s-%d" % (cluster, role, index), tags(cluster, role, index), **attributes)


@pytest.fixture
def inventory(tmp_path, cloud):
    """Parse an inventory source with the given options; returns the InventoryData."""
    def parse(use_cache=True, **options):
        path = tmp_path / "test.libcloud.yml"
        path.write_text(yaml.safe_dump(dict(dict(plugin="tfdist.cluster.libcloud", provider="fake"), **options)))
        plugin = inventory_loader.get("tfdist.cluster.libcloud")
        assert plugin.verify_file(str(path))
        data = InventoryData()
        plugin.parse(data, DataLoader(), str(path), cache=use_cache)
        if options.get("cache"):
            plugin.update_cache_if_changed()  # as InventoryManager does after each source
        return data
    return parse


def hosts(data, group):
    return sorted(host.name for host in data.groups[group].get_hosts())


def hostvars(data, name):
    return data.get_host(name).get_vars()


@pytest.mark.parametrize("name, expected", [
    ("aws.libcloud.yml", True), ("aws.libcloud.yaml", True), ("aws.yml", False), ("libcloud.yml.bak", False),
])
def test_verify_file_accepts_only_its_suffix(tmp_path, name, expected):
    path = tmp_path / name
    path.write_text("plugin: tfdist.cluster.libcloud\n")

    assert inventory_loader.get("tfdist.cluster.libcloud").verify_file(str(path)) is expected


def test_groups_by_cluster_and_role_with_task_indexes(inventory, cloud):
    add_node(cloud, "tfdist", "chief", 0)
    for index in range(2):
        add_node(cloud, "tfdist", "worker", index)
    add_node(cloud, "big-run", "worker", 0)
    add_node(cloud, "big-run", "ps", 0)
    cloud.add("web-1")  # no tfdist tags: not in the inventory

    data = inventory()

    assert hosts(data, "tfdist_tfdist") == ["tfdist-chief-0", "tfdist-worker-0", "tfdist-worker-1"]
    assert hosts(data, "tfdist_tfdist_worker") == ["tfdist-worker-0", "tfdist-worker-1"]
    assert hosts(data, "tfdist_big_run") == ["big-run-ps-0", "big-run-worker-0"]
    assert hosts(data, "tfdist_big_run_ps") == ["big-run-ps-0"]
    assert hosts(data, "worker") == ["big-run-worker-0", "tfdist-worker-0", "tfdist-worker-1"]
    assert hosts(data, "chief") == ["tfdist-chief-0"]
    assert "web-1" not in data.hosts
    worker1 = hostvars(data, "tfdist-worker-1")
    assert (worker1["tfdist_cluster"], worker1["tfdist_role"], worker1["tfdist_index"]) == ("tfdist", "worker", 1)
    assert (worker1["libcloud_name"], worker1["libcloud_provider"], worker1["libcloud_state"]) == (
        "tfdist-worker-1", "fake", "running")
    assert worker1["libcloud_extra"]["tags"] == tags("tfdist", "worker", 1)


def test_hosts_come_in_cluster_order_whatever_the_cloud_lists_first(inventory, cloud):
    for role, index in (("ps", 0), ("worker", 10), ("worker", 2), ("evaluator", 0), ("chief", 0), ("worker", 0)):
        add_node(cloud, "tfdist", role, index)
    group = inventory().groups["tfdist_tfdist"]
    # Plays go through a group's hosts, and show them, in this order: the chief first, worker-2 before worker-10.
    assert [host.name for host in group.get_hosts()] == [
        "tfdist-chief-0", "tfdist-worker-0", "tfdist-worker-2", "tfdist-worker-10", "tfdist-ps-0", "tfdist-evaluator-0"]


def test_ansible_host_is_public_ip_by_default_or_private_on_request(inventory, cloud):
    add_node(cloud, "tfdist", "worker", 0, public_ips=["203.0.113.5"], private_ips=["10.1.0.5"])
    add_node(cloud, "tfdist", "worker", 1, public_ips=[], private_ips=["10.1.0.6"])

    public = inventory()
    private = inventory(address="private")

    assert hostvars(public, "tfdist-worker-0")["ansible_host"] == "203.0.113.5"
    assert hostvars(public, "tfdist-worker-1")["ansible_host"] == "10.1.0.6"  # no public IP: falls back
    assert hostvars(private, "tfdist-worker-0")["ansible_host"] == "10.1.0.5"
    assert (hostvars(private, "tfdist-worker-0")["tfdist_public_ip"],
            hostvars(private, "tfdist-worker-0")["tfdist_private_ip"]) == ("203.0.113.5", "10.1.0.5")
    assert hostvars(public, "tfdist-worker-1")["tfdist_public_ip"] is None


def test_become_makes_every_node_become_root_and_its_absence_leaves_it_to_the_playbook(inventory, cloud):
    add_node(cloud, "tfdist", "chief", 0)
    add_node(cloud, "tfdist", "worker", 0)

    become = inventory(become=True)
    plain = inventory()

    assert [hostvars(become, name).get("ansible_become") for name in ("tfdist-chief-0", "tfdist-worker-0")] == [True, True]
    assert "ansible_become" not in hostvars(plain, "tfdist-chief-0")


def test_known_hosts_makes_ssh_accept_from_each_node_only_the_key_pinned_for_its_name(inventory, cloud, tmp_path):
    for index in range(2):
        add_node(cloud, "tfdist", "worker", index)
    known_hosts = str(tmp_path / "tfdist.known_hosts")

    pinned, plain = inventory(known_hosts=known_hosts), inventory()

    for name in ("tfdist-worker-0", "tfdist-worker-1"):
        host = hostvars(pinned, name)
        assert host["ansible_ssh_common_args"] == ssh_args(known_hosts, name)
        # Over ansible.cfg's host_key_checking = False, which would put StrictHostKeyChecking=no first.
        assert host["ansible_host_key_checking"] is True
        assert host["tfdist_known_hosts"] == known_hosts  # what the concise callback names in a refusal
        assert not {"ansible_ssh_common_args", "ansible_host_key_checking"} & set(hostvars(plain, name))


def test_clusters_and_states_filters(inventory, cloud):
    add_node(cloud, "tfdist", "worker", 0)
    add_node(cloud, "other", "worker", 0)
    add_node(cloud, "other", "worker", 1, state="stopped")

    assert sorted(inventory(clusters=["other"]).hosts) == ["other-worker-0"]
    assert sorted(inventory(clusters=["other"], states=["running", "stopped"]).hosts) == [
        "other-worker-0", "other-worker-1"]


def test_one_list_nodes_call_for_many_nodes(inventory, cloud):
    for index in range(12):
        add_node(cloud, "tfdist", "worker", index)

    data = inventory()

    assert len(data.hosts) == 12
    assert cloud.calls["list_nodes"] == 1


def test_keyed_groups_groups_and_compose(inventory, cloud):
    add_node(cloud, "tfdist", "chief", 0)
    add_node(cloud, "tfdist", "worker", 0)
    add_node(cloud, "tfdist", "worker", 1)

    data = inventory(
        keyed_groups=[dict(key="tfdist_role", prefix="tf")],
        groups=dict(first_worker="tfdist_role == 'worker' and tfdist_index == 0"),
        compose=dict(tf_port="2222 + tfdist_index"),
    )

    assert hosts(data, "tf_worker") == ["tfdist-worker-0", "tfdist-worker-1"]
    assert hosts(data, "first_worker") == ["tfdist-worker-0"]
    assert hostvars(data, "tfdist-worker-1")["tf_port"] == 2223


def test_cache_hit_avoids_the_api_call(inventory, cloud, tmp_path):
    add_node(cloud, "tfdist", "worker", 0)
    cache = dict(cache=True, cache_plugin="ansible.builtin.jsonfile", cache_connection=str(tmp_path / "cache"))

    first = inventory(**cache)
    add_node(cloud, "tfdist", "worker", 1)  # not seen while the cache is used
    second = inventory(**cache)
    refreshed = inventory(use_cache=False, **cache)  # what --flush-cache / meta: refresh_inventory does

    assert sorted(first.hosts) == sorted(second.hosts) == ["tfdist-worker-0"]
    assert sorted(refreshed.hosts) == ["tfdist-worker-0", "tfdist-worker-1"]
    assert cloud.calls["list_nodes"] == 2


def test_string_options_are_templated(inventory, cloud, monkeypatch):
    monkeypatch.setenv("TFDIST_TEST_PROVIDER", "fake")
    add_node(cloud, "tfdist", "ps", 0)

    data = inventory(provider="{{ lookup('ansible.builtin.env', 'TFDIST_TEST_PROVIDER') }}")

    assert hostvars(data, "tfdist-ps-0")["libcloud_provider"] == "fake"


def test_cloud_values_are_never_templated(inventory, cloud):
    node = add_node(cloud, "tfdist", "worker", 0)
    node.extra["note"] = trust_as_template("{{ 'templated' }}")  # as if it came from a trusted source

    value = hostvars(inventory(), "tfdist-worker-0")["libcloud_extra"]["note"]

    assert not is_trusted_as_template(value)
    assert Templar(loader=DataLoader()).template(value) == "{{ 'templated' }}"


def test_invalid_cluster_filter_names_the_field(inventory, cloud):
    with pytest.raises(AnsibleError, match=r"clusters\[1\]: 'Bad_Name' is not a valid cluster name"):
        inventory(clusters=["tfdist", "Bad_Name"])


def test_unknown_provider_fails_with_the_plugin_name(inventory, cloud):
    with pytest.raises(AnsibleError, match=r"tfdist.cluster.libcloud: Unknown provider 'nope'"):
        inventory(provider="nope")
