"""The network security group and subnet of a cluster on Azure: the policy of module_utils/_access.py as
_cloud_azure.AzureAccess spells it, reached through _libcloud.access_for and node_kwargs as the modules reach it.
(Each cluster's /24 and the deallocation of nodes: test__cloud_azure.py.)

No emulator runs Azure here, so these tests drive _access through a libcloud driver made with create_autospec from
the real driver class: a call with a signature the real driver does not have fails. _access speaks ARM's REST API
itself, and the fake is that endpoint (libcloud_fakes.AzureCloud).
The assertions read the cloud's state: what reaches the nodes, from where, and which key they get.
"""

import pytest

from libcloud.compute.base import NodeAuthSSHKey
from libcloud.compute.drivers.azure_arm import AzureNodeDriver

from ansible_collections.tfdist.cluster.plugins.module_utils import _access
from ansible_collections.tfdist.cluster.plugins.module_utils._cloud_azure import AzureAccess
from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import TfdistCloudError, access_for, node_kwargs
from ansible_collections.tfdist.cluster.tests.unit.plugins.module_utils.libcloud_fakes import (
    CLUSTER,
    CONTROLLER,
    INTERNAL,
    NAME,
    NEW_CONTROLLER,
    PUBKEY,
    AzureCloud,
    create_node_accepts,
)


def sources(rule):
    """A rule's sources, given as sourceAddressPrefixes or as the single sourceAddressPrefix."""
    return rule.get("sourceAddressPrefixes") or [rule["sourceAddressPrefix"]]


def destination_ports(rule):
    return rule.get("destinationPortRanges") or [rule["destinationPortRange"]]


@pytest.fixture
def azure():
    return AzureCloud()


def azure_access(cloud, ssh=(CONTROLLER,), ports=INTERNAL, public=(), options=None):
    return access_for(cloud.driver, CLUSTER, list(ssh), list(ports), "azureuser",
                      dict(AzureCloud.OPTIONS) if options is None else options, list(public))


def test_azure_present_puts_the_cluster_on_its_own_subnet_behind_a_group_that_denies_the_vnet(azure):
    access = azure_access(azure, public=["6006"])

    facts = access.present(PUBKEY)

    nsg = azure.get(azure.nsg_path)
    assert nsg["tags"] == {"tfdist_cluster": CLUSTER} and nsg["location"] == "westeurope"
    rules = azure.rules()
    assert sorted(rules) == ["tfdist-deny-vnet", "tfdist-internal", "tfdist-ssh"]
    ssh, internal, deny = rules["tfdist-ssh"], rules["tfdist-internal"], rules["tfdist-deny-vnet"]
    assert (ssh["access"], ssh["direction"], ssh["protocol"]) == ("Allow", "Inbound", "Tcp")
    assert (ssh["sourceAddressPrefixes"], ssh["destinationPortRanges"]) == ([CONTROLLER], ["22", "6006"])
    assert (internal["access"], internal["protocol"]) == ("Allow", "Tcp")
    assert (internal["sourceAddressPrefixes"], internal["destinationPortRanges"]) == ([AzureCloud.PREFIX],
                                                                                      ["2222-2229", "8020"])
    # The rest of the virtual network is denied before Azure's own AllowVnetInBound (65000) lets it in.
    assert (deny["access"], deny["direction"], deny["protocol"]) == ("Deny", "Inbound", "*")
    assert (sources(deny), destination_ports(deny), deny["priority"]) == (["VirtualNetwork"], ["*"], 4000)
    assert ssh["priority"] < deny["priority"] and internal["priority"] < deny["priority"] < 65000
    assert len({r["priority"] for r in rules.values()}) == 3
    subnet = azure.get(azure.subnet_path)
    assert subnet["properties"]["addressPrefix"] == AzureCloud.PREFIX
    assert subnet["properties"]["networkSecurityGroup"]["id"].lower() == azure.nsg_path.lower()
    assert access.changes == ["network security group " + NAME, "subnet %s (%s)" % (NAME, AzureCloud.PREFIX)]
    assert (facts["cloud"], facts["firewall_id"], facts["public_key"]) == ("azure_arm", azure.nsg_path, PUBKEY)


def test_azure_second_present_changes_nothing(azure):
    azure_access(azure).present(PUBKEY)
    azure.writes.clear()

    access = azure_access(azure)
    access.present(PUBKEY)

    assert access.changes == [] and azure.writes == []


def test_azure_new_controller_address_replaces_the_old_one(azure):
    azure_access(azure).present(PUBKEY)
    azure.writes.clear()

    access = azure_access(azure, ssh=[NEW_CONTROLLER])
    access.present(PUBKEY)

    assert azure.rules()["tfdist-ssh"]["sourceAddressPrefixes"] == [NEW_CONTROLLER]
    assert access.changes == ["network security group " + NAME]
    assert azure.writes == [("PUT", azure.nsg_path)]


def test_azure_hand_added_rule_is_removed(azure):
    azure_access(azure).present(PUBKEY)
    nsg = azure.get(azure.nsg_path)
    nsg["properties"]["securityRules"].append({"name": "allow-rdp", "properties": {
        "priority": 300, "direction": "Inbound", "access": "Allow", "protocol": "Tcp", "sourceAddressPrefix": "*",
        "sourcePortRange": "*", "destinationAddressPrefix": "*", "destinationPortRange": "3389"}})

    access = azure_access(azure)
    access.present(PUBKEY)

    assert sorted(azure.rules()) == ["tfdist-deny-vnet", "tfdist-internal", "tfdist-ssh"]
    assert access.changes == ["network security group " + NAME]


def test_azure_check_mode_lists_the_plan_and_changes_nothing(azure):
    access = azure_access(azure)
    facts = access.present(PUBKEY, check_mode=True)

    assert access.changes == ["network security group " + NAME, "subnet %s (%s)" % (NAME, AzureCloud.PREFIX)]
    assert azure.writes == [] and azure.get(azure.nsg_path) is None
    assert facts["firewall_id"] == azure.nsg_path

    azure_access(azure).present(PUBKEY)
    azure.writes.clear()
    access = azure_access(azure)
    access.absent(check_mode=True)
    assert access.changes == ["subnet " + NAME, "network security group " + NAME]
    assert azure.writes == []


def test_azure_absent_removes_subnet_then_group_retrying_while_in_use(azure, clock):
    azure_access(azure).present(PUBKEY)
    azure.writes.clear()
    azure.in_use[azure.subnet_path.lower()] = 2  # the nodes' NICs are still going away

    access = azure_access(azure)
    access.absent()

    assert azure.get(azure.subnet_path) is None and azure.get(azure.nsg_path) is None
    assert azure.get(azure.vnet_path) is not None  # the user's virtual network stays
    assert [w for w in azure.writes if w[0] == "DELETE"] == [("DELETE", azure.subnet_path)] * 3 + [
        ("DELETE", azure.nsg_path)]
    assert access.changes == ["subnet " + NAME, "network security group " + NAME]
    assert clock.sleeps == [_access.DELETE_RETRY_PERIOD] * 2


def test_azure_absent_removes_the_nic_a_failed_create_left_then_the_subnet(azure, clock):
    azure_access(azure).present(PUBKEY)
    # create_node made worker-1's NIC, then its VM failed; a user's NIC on another subnet of the vnet is no concern.
    azure.put_nic(CLUSTER + "-worker-1-nic", azure.subnet_path)
    azure.put_nic("db-nic", azure.vnet_path + "/subnets/default")
    azure.writes.clear()

    access = azure_access(azure)
    access.absent()

    assert azure.get(azure.nic_path(CLUSTER + "-worker-1-nic")) is None
    assert azure.get(azure.subnet_path) is None and azure.get(azure.nsg_path) is None
    assert azure.get(azure.nic_path("db-nic")) is not None
    assert access.changes == ["network interface %s-worker-1-nic" % CLUSTER, "subnet " + NAME,
                              "network security group " + NAME]
    assert [w[1] for w in azure.writes] == [azure.nic_path(CLUSTER + "-worker-1-nic"), azure.subnet_path, azure.nsg_path]


def test_azure_absent_leaves_a_nic_its_vm_still_holds_and_names_the_subnet_it_keeps(azure, clock):
    azure_access(azure).present(PUBKEY)
    azure.put_nic(CLUSTER + "-worker-0-nic", azure.subnet_path, vm="/subscriptions/x/virtualMachines/" + CLUSTER + "-worker-0")

    with pytest.raises(TfdistCloudError, match=r"could not remove subnet %s: .*InUseSubnetCannotBeDeleted" % NAME):
        azure_access(azure).absent()

    assert azure.get(azure.nic_path(CLUSTER + "-worker-0-nic")) is not None
    assert azure.get(azure.nsg_path) is not None


def test_azure_absent_in_check_mode_lists_the_loose_nic_and_removes_nothing(azure):
    azure_access(azure).present(PUBKEY)
    azure.put_nic(CLUSTER + "-ps-0-nic", azure.subnet_path)
    azure.writes.clear()

    access = azure_access(azure)
    access.absent(check_mode=True)

    assert access.changes[0] == "network interface %s-ps-0-nic" % CLUSTER and azure.writes == []


def test_azure_audit_finds_each_clusters_group_subnet_and_nics(azure):
    azure_access(azure).present(PUBKEY)
    azure.put_nic(CLUSTER + "-worker-1-nic", azure.subnet_path)                 # on the cluster's subnet
    azure.put_nic("other-chief-0-nic", azure.vnet_path + "/subnets/default")  # named after a node of cluster other
    azure.put_nic("db-nic", azure.vnet_path + "/subnets/default")              # the user's

    found = sorted((kind, name, cluster) for kind, ident, name, cluster, owner
                   in AzureAccess.found(azure.driver, dict(AzureCloud.OPTIONS)))

    assert found == [("network interface", CLUSTER + "-worker-1-nic", CLUSTER),
                     ("network interface", "other-chief-0-nic", "other"),
                     ("network security group", NAME, CLUSTER), ("subnet", NAME, CLUSTER)]


def test_azure_absent_with_nothing_there_changes_nothing(azure):
    access = azure_access(azure)
    access.absent()

    assert access.changes == [] and azure.writes == []


@pytest.mark.parametrize("missing", ["resource_group", "location", "network"])
def test_azure_missing_option_is_named_before_anything_is_made(azure, missing):
    options = dict(AzureCloud.OPTIONS)
    options[missing] = ""  # unset profile entries arrive as empty strings

    with pytest.raises(TfdistCloudError, match=r"options\.%s is required on azure_arm" % missing):
        azure_access(azure, options=options).present(PUBKEY)
    assert azure.writes == []


def test_azure_node_kwargs_give_the_node_the_key_and_the_cluster_subnet(azure):
    facts = azure_access(azure).present(PUBKEY)

    kwargs = node_kwargs(azure.driver, facts)

    assert isinstance(kwargs["auth"], NodeAuthSSHKey) and kwargs["auth"].pubkey == PUBKEY
    assert kwargs["ex_user_name"] == "azureuser"
    assert (kwargs["ex_resource_group"], kwargs["ex_subnet"]) == (AzureCloud.RESOURCE_GROUP, NAME)
    assert kwargs["ex_use_managed_disks"] is True
    create_node_accepts(AzureNodeDriver, kwargs)


class NicRequested(Exception):
    pass


def test_azure_node_nic_goes_on_the_cluster_subnet(azure):
    facts = azure_access(azure).present(PUBKEY)
    kwargs = node_kwargs(azure.driver, facts)
    azure.driver.default_location = "westeurope"

    def nic(name, subnet, resource_group, location=None, public_ip=None):
        raise NicRequested(subnet.id)

    azure.driver.ex_create_network_interface.side_effect = nic
    with pytest.raises(NicRequested) as requested:
        AzureNodeDriver.create_node(azure.driver, "tfdist-worker-0", "Standard_D2s_v3", "image", **kwargs)

    assert str(requested.value).lower() == azure.subnet_path.lower()


def test_azure_deny_rule_names_the_vnet_tag_as_arm_accepts_it(azure):
    azure_access(azure).present(PUBKEY)

    deny = azure.rules()["tfdist-deny-vnet"]
    assert deny.get("sourceAddressPrefix") == "VirtualNetwork" and not deny.get("sourceAddressPrefixes")
    assert deny.get("destinationPortRange") == "*" and not deny.get("destinationPortRanges")


def test_azure_existing_subnet_without_the_group_is_put_behind_it(azure):
    azure._put(azure.subnet_path, {"properties": {"addressPrefix": AzureCloud.PREFIX}})

    azure_access(azure).present(PUBKEY)

    subnet = azure.get(azure.subnet_path)
    assert subnet["properties"].get("networkSecurityGroup", {}).get("id", "").lower() == azure.nsg_path.lower()
