"""Azure (_cloud_azure.py): each cluster's /24 of the virtual network, and the deallocation of nodes powered off
from inside (which Azure keeps allocated and billed) by deploy, destroy and the audit.

No emulator runs Azure here: the driver is libcloud's AzureNodeDriver made with create_autospec, its own code run
over the fake ARM endpoint of libcloud_fakes.AzureCloud, which keeps the virtual network, its subnets, the network
security groups and the VMs with their power state. The assertions read the requests it got and the state it keeps.
"""

import json
import time
from types import SimpleNamespace

import pytest
from ansible.module_utils.testing import patch_module_args

from libcloud.compute.drivers import azure_arm

from ansible_collections.tfdist.cluster.plugins.module_utils._cloud_azure import AzureAccess, free_prefix
from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import (
    TfdistCloudError,
    access_for,
    release_stopped,
)
from ansible_collections.tfdist.cluster.plugins.modules import libcloud_audit, libcloud_node
from ansible_collections.tfdist.cluster.tests.unit.plugins.module_utils.libcloud_fakes import AzureCloud

PUBKEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHRmZGlzdC10ZXN0LWtleQ tfdist@controller"
CONTROLLER = "203.0.113.7/32"


@pytest.mark.parametrize("space, taken, chosen", [
    (["10.0.0.0/16"], [], "10.0.0.0/24"),
    (["10.0.0.0/16"], ["10.0.0.0/24"], "10.0.1.0/24"),
    # the first gap, not the end
    (["10.0.0.0/16"], ["10.0.0.0/24", "10.0.2.0/24"], "10.0.1.0/24"),
    # a wider subnet is skipped whole, a narrower one still takes its /24
    (["10.0.0.0/16"], ["10.0.0.0/22"], "10.0.4.0/24"),
    (["10.0.0.0/16"], ["10.0.0.64/26"], "10.0.1.0/24"),
    # subnets outside the space do not matter
    (["10.0.0.0/16"], ["172.16.0.0/24", "fd00::/64"], "10.0.0.0/24"),
    # the next address space when the first is full
    (["10.0.0.0/24", "10.1.0.0/16"], ["10.0.0.0/24"], "10.1.0.0/24"),
    # IPv6 spaces and spaces narrower than a /24 hold none
    (["fd00::/48", "10.0.0.0/26", "192.168.0.0/23"], [], "192.168.0.0/24"),
    (["10.0.0.0/23"], ["10.0.0.0/24", "10.0.1.0/24"], None),
    (["fd00::/48", "10.0.0.0/25"], [], None),
    ([], [], None),
])
def test_free_prefix_is_the_first_24_of_the_space_that_overlaps_no_subnet(space, taken, chosen):
    assert free_prefix(space, taken) == chosen


def test_free_prefix_skips_a_crowded_wide_space_quickly():
    # A /8 whose first 4000 /24s are taken one by one: a deploy must not crawl through them pairwise.
    taken = ["10.%d.%d.0/24" % divmod(n, 256) for n in range(4000)]
    started = time.monotonic()
    assert free_prefix(["10.0.0.0/8"], taken) == "10.15.160.0/24"
    assert time.monotonic() - started < 10


# ---------------------------------------------------------------------------------------------------------
# The subnet of each cluster, through libcloud's driver on the fake ARM endpoint.


@pytest.fixture
def azure():
    return AzureCloud()


def azure_access(cloud, cluster, owner=None, options=None):
    return access_for(cloud.driver, cluster, [CONTROLLER], ["2222-2229", "8020"], "azureuser",
                      dict(AzureCloud.OPTIONS) if options is None else options, [], owner=owner)


def subnet_puts(cloud, access):
    return [body["properties"]["addressPrefix"] for body in cloud.puts(cloud.subnet_of(access.name))]


def test_two_clusters_get_two_free_24s_behind_their_own_groups(azure):
    demo, other = azure_access(azure, "demo"), azure_access(azure, "other")

    demo.present(PUBKEY)
    other.present(PUBKEY)

    # The vnet's own subnet 'default' holds 10.0.0.0/24: demo gets the next /24, other the one after.
    assert subnet_puts(azure, demo) == ["10.0.1.0/24"]
    assert subnet_puts(azure, other) == ["10.0.2.0/24"]
    for access, prefix in ((demo, "10.0.1.0/24"), (other, "10.0.2.0/24")):
        subnet = azure.get(azure.subnet_of(access.name))["properties"]
        assert subnet["networkSecurityGroup"]["id"].lower() == azure.nsg_of(access.name).lower()
        # Each group lets in its own subnet only: the other cluster stays out.
        assert azure.rules(azure.nsg_of(access.name))["tfdist-internal"]["sourceAddressPrefixes"] == [prefix]
    assert demo.changes[-1] == "subnet %s (10.0.1.0/24)" % demo.name


def test_a_rerun_keeps_the_clusters_subnet_and_changes_nothing(azure):
    azure_access(azure, "demo").present(PUBKEY)
    azure_access(azure, "other").present(PUBKEY)
    azure.writes.clear()

    again = azure_access(azure, "demo")
    again.present(PUBKEY)

    assert again.changes == [] and azure.writes == []
    assert azure.get(azure.subnet_of(again.name))["properties"]["addressPrefix"] == "10.0.1.0/24"


def test_a_destroyed_clusters_24_goes_to_the_next_cluster(azure):
    azure_access(azure, "demo").present(PUBKEY)
    other = azure_access(azure, "other")
    other.present(PUBKEY)
    azure_access(azure, "demo").absent()

    third = azure_access(azure, "third")
    third.present(PUBKEY)

    assert subnet_puts(azure, third) == ["10.0.1.0/24"]
    assert azure.get(azure.subnet_of(other.name))["properties"]["addressPrefix"] == "10.0.2.0/24"


def test_two_clusters_made_at_the_same_moment_end_on_different_24s(azure):
    demo, other = azure_access(azure, "demo"), azure_access(azure, "other")

    def other_deploys_meanwhile(path):
        # other's deploy takes the /24 demo chose, between demo's look at the subnets and demo's subnet PUT.
        if path.lower() == azure.subnet_of(demo.name).lower() and azure.get(azure.subnet_of(other.name)) is None:
            other.present(PUBKEY)

    azure.before_put = other_deploys_meanwhile
    demo.present(PUBKEY)

    # Azure refused demo's first subnet (it overlapped other's); demo looked again and took the next free /24.
    assert subnet_puts(azure, other) == ["10.0.1.0/24"]
    assert subnet_puts(azure, demo) == ["10.0.1.0/24", "10.0.2.0/24"]
    assert azure.get(azure.subnet_of(demo.name))["properties"]["addressPrefix"] == "10.0.2.0/24"
    assert azure.rules(azure.nsg_of(demo.name))["tfdist-internal"]["sourceAddressPrefixes"] == ["10.0.2.0/24"]
    assert demo.changes == ["network security group " + demo.name, "subnet %s (10.0.2.0/24)" % demo.name]


def test_a_full_virtual_network_is_named_and_nothing_is_made():
    cloud = AzureCloud(address_space=["10.0.0.0/23"])
    azure_access(cloud, "demo").present(PUBKEY)
    cloud.writes.clear()

    with pytest.raises(TfdistCloudError, match=r"^options\.network: the virtual network vnet-tfdist has no free /24 "
                                               r"for cluster other \(its address space 10\.0\.0\.0/23; its subnets "
                                               r"take 10\.0\.0\.0/24, 10\.0\.1\.0/24\)"):
        azure_access(cloud, "other").present(PUBKEY)
    assert cloud.writes == []


def test_a_missing_virtual_network_is_named(azure):
    options = dict(AzureCloud.OPTIONS, network="vnet-typo")

    with pytest.raises(TfdistCloudError, match=r"^options\.network: no virtual network vnet-typo in resource group "):
        azure_access(azure, "demo", options=options).present(PUBKEY)
    assert azure.writes == []


def test_the_old_fixed_subnet_prefix_is_refused_by_name(azure):
    options = dict(AzureCloud.OPTIONS, subnet_prefix="10.0.42.0/24")

    with pytest.raises(TfdistCloudError, match=r"^options\.subnet_prefix: "):
        azure_access(azure, "demo", options=options).present(PUBKEY)
    assert azure.writes == []


def test_the_group_carries_the_owners_mark(azure):
    access = azure_access(azure, "demo", owner="1f3a" * 8)
    access.present(PUBKEY)

    assert azure.get(azure.nsg_of(access.name))["tags"] == {"tfdist_cluster": "demo", "tfdist_owner": "1f3a" * 8}


MINE, THEIRS = "1f3a2b" + "0" * 26, "9c8d7e" + "0" * 26


def test_the_audit_reads_each_resources_owner_from_its_tag_or_name(azure):
    access = azure_access(azure, "demo", owner=MINE)
    access.present(PUBKEY)
    azure.put_nic("demo-worker-1-nic", azure.subnet_of(access.name))  # a create that failed left it

    found = sorted(AzureAccess.found(azure.driver, dict(AzureCloud.OPTIONS)))

    assert [(kind, name, cluster, owner) for kind, ident, name, cluster, owner in found] == [
        ("network interface", "demo-worker-1-nic", "demo", "1f3a2b"),
        ("network security group", "tfdist-demo-1f3a2b", "demo", MINE),
        ("subnet", "tfdist-demo-1f3a2b", "demo", "1f3a2b")]


def test_destroy_removes_this_controllers_subnet_and_group_only(azure):
    mine, theirs = azure_access(azure, "demo", owner=MINE), azure_access(azure, "demo", owner=THEIRS)
    mine.present(PUBKEY)
    theirs.present(PUBKEY)

    azure_access(azure, "demo", owner=MINE).absent()

    assert azure.get(azure.subnet_of(mine.name)) is None and azure.get(azure.nsg_of(mine.name)) is None
    assert azure.get(azure.subnet_of(theirs.name))["properties"]["addressPrefix"] == "10.0.2.0/24"
    assert azure.get(azure.nsg_of(theirs.name)) is not None


def test_destroy_of_a_cluster_made_before_owners_removes_its_unmarked_subnet_where_told(azure):
    azure_access(azure, "demo").present(PUBKEY)  # named tfdist-demo, no owner's mark

    azure_access(azure, "demo", owner=MINE).absent()
    assert azure.get(azure.subnet_of("tfdist-demo")) is not None

    access_for(azure.driver, "demo", [], [], "azureuser", dict(AzureCloud.OPTIONS), owner=MINE,
               own_unmarked=True).absent()
    assert azure.get(azure.subnet_of("tfdist-demo")) is None and azure.get(azure.nsg_of("tfdist-demo")) is None


# ---------------------------------------------------------------------------------------------------------
# Nodes powered off from inside: deallocated by the next contact. libcloud's azure_arm says `paused` for Azure's
# PowerState/stopped (allocated, billed) and `stopped` for PowerState/deallocated.


def tags(cluster, role, index):
    return {"tfdist_cluster": cluster, "tfdist_role": role, "tfdist_index": str(index)}


@pytest.fixture
def nodes(azure, monkeypatch):
    """demo's chief running, worker-0 powered off from inside, worker-1 deallocated; other's worker-0 powered off."""
    monkeypatch.setattr(azure_arm, "time", SimpleNamespace(time=time.time, sleep=lambda seconds: None))
    for name, power in (("demo-chief-0", "running"), ("demo-worker-0", "stopped"),
                        ("demo-worker-1", "deallocated"), ("other-worker-0", "stopped")):
        cluster, role, index = name.split("-")
        azure.add_vm(name, power, tags(cluster, role, index))
    return azure


def posts(cloud):
    return sorted(path.rsplit("/", 2)[1] + " " + path.rsplit("/", 1)[1]
                  for method, path in cloud.writes if method == "POST")


def test_deallocate_stopped_deallocates_the_powered_off_node_only(nodes):
    demo = [node for node in nodes.driver.list_nodes() if node.name.startswith("demo-")]

    assert [node.name for node in release_stopped(nodes.driver, demo, check_mode=True)] == ["demo-worker-0"]
    assert posts(nodes) == []

    released = release_stopped(nodes.driver, demo)

    assert [node.name for node in released] == ["demo-worker-0"]
    assert posts(nodes) == ["demo-worker-0 deallocate"]
    assert nodes.power[nodes.vm_path("demo-worker-0").lower()] == "deallocated"
    assert nodes.power[nodes.vm_path("demo-chief-0").lower()] == "running"


@pytest.fixture
def run(capsys, nodes, monkeypatch):
    """Run a module (libcloud_node, libcloud_audit) on the fake Azure; returns its JSON result."""
    nodes.driver.list_sizes.return_value = []
    nodes.driver.list_volumes.return_value = []

    def run_module(module, check_mode=False, **options):
        monkeypatch.setattr(module, "get_driver", lambda *args: nodes.driver)
        args = dict(provider="azure_arm", _ansible_check_mode=check_mode, **options)
        nodes.writes.clear()
        with patch_module_args(args), pytest.raises(SystemExit):
            module.main()
        return json.loads(capsys.readouterr().out)
    return run_module


def test_deploy_starts_the_powered_off_nodes_rather_than_deallocate_them(run, nodes):
    result = run(libcloud_node, cluster="demo", wait=False,
                 roles=[dict(role="chief", count=1, size="Standard_D2s_v5", image="a:b:c:d"),
                        dict(role="worker", count=2, size="Standard_D2s_v5", image="a:b:c:d")])

    # Present means running: the node powered off and the deallocated one start again, none is deallocated.
    assert sorted(node["name"] for node in result["started"]) == ["demo-worker-0", "demo-worker-1"]
    assert posts(nodes) == ["demo-worker-0 start", "demo-worker-1 start"]


def test_destroy_deallocates_a_powered_off_node_azure_will_not_delete(run, nodes):
    nodes.locked.update(nodes.vm_path(name).lower() for name in ("demo-chief-0", "demo-worker-0"))

    result = run(libcloud_node, cluster="demo", state="absent")

    assert result["failed"] is True
    assert "Failed to destroy demo-" in result["msg"] and "ScopeLocked" in result["msg"]
    assert result["msg"].endswith("; deallocated demo-worker-0 instead (powered off, still billed for compute until "
                                  "deallocated)")
    # The running node is left running; the deallocated one went; the other cluster's node is not touched.
    assert posts(nodes) == ["demo-worker-0 deallocate"]
    assert nodes.get(nodes.vm_path("demo-worker-1")) is None
    assert nodes.power[nodes.vm_path("other-worker-0").lower()] == "stopped"


def test_audit_deallocates_this_controllers_powered_off_nodes_and_names_the_others(run, nodes):
    result = run(libcloud_audit, known_clusters=["demo"], options=dict(AzureCloud.OPTIONS))

    assert result["changed"] is True and result["deallocated"] == ["demo-worker-0"]
    assert posts(nodes) == ["demo-worker-0 deallocate"]
    assert nodes.power[nodes.vm_path("other-worker-0").lower()] == "stopped"
    off = [line for line in result["report"] if "powered off" in line]
    assert off == ["node demo-worker-0 was powered off but still allocated, billed as if it ran: deallocated",
                   "node other-worker-0 was powered off but still allocated, billed as if it ran: not this "
                   "controller's cluster, left as it is"]


def test_audit_in_check_mode_says_what_it_would_deallocate_and_posts_nothing(run, nodes):
    result = run(libcloud_audit, check_mode=True, clusters=["demo"], options=dict(AzureCloud.OPTIONS))

    assert result["deallocated"] == ["demo-worker-0"] and posts(nodes) == []
    assert [line for line in result["report"] if "powered off" in line] == [
        "node demo-worker-0 was powered off but still allocated, billed as if it ran: would be deallocated "
        "(check mode)"]


def test_audit_leaves_another_controllers_powered_off_node_of_a_cluster_of_the_same_name(run, nodes):
    nodes.add_vm("demo-worker-2", "stopped", dict(tags("demo", "worker", 2), tfdist_owner=THEIRS))
    nodes.add_vm("demo-worker-3", "stopped", dict(tags("demo", "worker", 3), tfdist_owner=MINE))

    result = run(libcloud_audit, known_clusters=["demo"], owner=MINE, options=dict(AzureCloud.OPTIONS))

    # Ours: the one marked ours, and the unmarked one of a cluster whose inventory source is here.
    assert result["deallocated"] == ["demo-worker-0", "demo-worker-3"]
    assert posts(nodes) == ["demo-worker-0 deallocate", "demo-worker-3 deallocate"]
    assert nodes.power[nodes.vm_path("demo-worker-2").lower()] == "stopped"
