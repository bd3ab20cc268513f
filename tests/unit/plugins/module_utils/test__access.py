"""The key pair and firewall of a cluster on OpenStack, GCE, Azure and EC2: the policy of module_utils/_access.py
as each cloud file spells it (the ClusterAccess classes of _cloud_openstack.py, _cloud_gce.py, _cloud_azure.py
and _cloud_ec2.py), reached through _libcloud.access_for and node_kwargs as the modules reach it.

No emulator runs OpenStack, GCE or Azure here, so these tests drive _access through libcloud drivers made
with create_autospec from the real driver classes: a call with a signature the real driver does not have
fails. Where the driver's own code can run, it does, over a fake REST endpoint that keeps state the way
the cloud does (OpenStack's neutron and nova); where _access speaks the cloud's REST API
itself (Azure ARM, EC2 key pairs), the fake is that endpoint. The assertions read the cloud's state: what
reaches the nodes, from where, and which key they get.
"""

import base64
import collections
import copy
import inspect
import itertools
import xml.etree.ElementTree as ET
from types import SimpleNamespace
from unittest.mock import create_autospec

import pytest

from libcloud.common.exceptions import BaseHTTPError
from libcloud.compute.base import KeyPair, NodeAuthSSHKey
from libcloud.compute.drivers.azure_arm import AzureNodeDriver
from libcloud.compute.drivers.ec2 import NAMESPACE as EC2_NAMESPACE
from libcloud.compute.drivers.ec2 import EC2Connection, EC2NodeDriver, EC2SecurityGroup
from libcloud.compute.drivers.openstack import (
    OpenStack_2_Connection,
    OpenStack_2_NetworkConnection,
    OpenStack_2_NodeDriver,
    OpenStackSecurityGroup,
    OpenStackSecurityGroupRule,
)

from ansible_collections.tfdist.cluster.plugins.module_utils import _access
from ansible_collections.tfdist.cluster.plugins.module_utils._access import parse_ports
from ansible_collections.tfdist.cluster.plugins.module_utils._cloud_azure import AzureAccess
from ansible_collections.tfdist.cluster.plugins.module_utils._cloud_openstack import OpenStackAccess
from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import TfdistCloudError, access_for, node_kwargs
from ansible_collections.tfdist.cluster.tests.unit.plugins.module_utils.libcloud_fakes import AzureCloud, FakeGce, response, run_real, sent

CLUSTER = "demo"
NAME = "tfdist-demo"
CONTROLLER = "203.0.113.7/32"
NEW_CONTROLLER = "203.0.113.99/32"
OLD_CONTROLLER = "198.51.100.9/32"
PUBKEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHRmZGlzdC10ZXN0LWtleQ tfdist@controller"
INTERNAL = ("8020", "2222-2229")


def create_node_accepts(cls, kwargs):
    """The create_node keyword arguments are ones the real driver's create_node takes."""
    inspect.signature(cls.create_node).bind(None, "tfdist-worker-0", "size", "image", **kwargs)


# ---------------------------------------------------------------------------------------------------------
# OpenStack: neutron security groups and nova key pairs behind OpenStack_2_NodeDriver's own code.


class OpenStackCloud:
    """Neutron's /v2.0/security-groups and nova's /os-keypairs, keeping state; the driver runs libcloud's code."""

    TENANT = "tenant-1"

    def __init__(self):
        self.groups = {}  # id -> neutron security_group JSON, rules included
        self.keypairs = {}  # name -> nova keypair JSON
        self.in_use = collections.Counter()  # group id -> DELETEs to refuse with 409 (nodes still terminating)
        self._ids = itertools.count(1)
        driver = create_autospec(OpenStack_2_NodeDriver, instance=True)
        driver.type = "openstack"
        driver.connection = create_autospec(OpenStack_2_Connection, instance=True)
        driver.connection.request.side_effect = self._nova
        driver.network_connection = create_autospec(OpenStack_2_NetworkConnection, instance=True)
        driver.network_connection.request.side_effect = self._neutron
        run_real(driver, OpenStack_2_NodeDriver,
                 "list_key_pairs", "import_key_pair_from_string", "delete_key_pair", "_to_key_pairs", "_to_key_pair",
                 "ex_list_security_groups", "ex_create_security_group", "ex_delete_security_group",
                 "ex_create_security_group_rule", "ex_delete_security_group_rule",
                 "_to_security_groups", "_to_security_group", "_to_security_group_rules", "_to_security_group_rule")
        self.driver = driver

    # -- nova
    def _nova(self, action, params=None, data="", headers=None, method="GET", raw=False):
        if (method, action) == ("GET", "/os-keypairs"):
            return response({"keypairs": [{"keypair": dict(k)} for k in self.keypairs.values()]})
        if (method, action) == ("POST", "/os-keypairs"):
            key = sent(data)["keypair"]
            if key["name"] in self.keypairs:
                raise BaseHTTPError(409, "Key pair '%s' already exists." % key["name"])
            self.keypairs[key["name"]] = dict(key, fingerprint="fp:%d" % next(self._ids), user_id="u1")
            return response({"keypair": dict(self.keypairs[key["name"]])})
        if method == "DELETE" and action.startswith("/os-keypairs/"):
            if self.keypairs.pop(action.rsplit("/", 1)[1], None) is None:
                raise BaseHTTPError(404, "Keypair not found")
            return response(None, 202)
        raise AssertionError("unexpected nova call %s %s" % (method, action))

    # -- neutron
    def _neutron(self, action, params=None, data="", headers=None, method="GET", raw=False):
        if (method, action) == ("GET", "/v2.0/security-groups"):
            return response({"security_groups": copy.deepcopy(list(self.groups.values()))})
        if (method, action) == ("POST", "/v2.0/security-groups"):
            body = sent(data)["security_group"]
            return response({"security_group": copy.deepcopy(self.add_group(body["name"], body["description"]))}, 201)
        if method == "DELETE" and action.startswith("/v2.0/security-groups/"):
            group_id = action.rsplit("/", 1)[1]
            if self.in_use[group_id]:
                self.in_use[group_id] -= 1
                raise BaseHTTPError(409, "Security Group %s in use." % group_id)
            del self.groups[group_id]
            return response(None, 204)
        if (method, action) == ("POST", "/v2.0/security-group-rules"):
            rule = sent(data)["security_group_rule"]
            group = self.groups[rule["security_group_id"]]
            assert rule["remote_group_id"] is None or rule["remote_group_id"] in self.groups
            assert rule["remote_group_id"] is None or rule["remote_ip_prefix"] is None
            keys = ("direction", "protocol", "port_range_min", "port_range_max", "remote_ip_prefix", "remote_group_id")
            same = [r for r in group["security_group_rules"] if all(r.get(k) == rule.get(k) for k in keys)]
            if same:
                raise BaseHTTPError(409, "Security group rule already exists. Rule id is %s." % same[0]["id"])
            rule = dict(rule, id="rule-%d" % next(self._ids), ethertype="IPv4", tenant_id=self.TENANT)
            group["security_group_rules"].append(rule)
            return response({"security_group_rule": dict(rule)}, 201)
        if method == "DELETE" and action.startswith("/v2.0/security-group-rules/"):
            rule_id = action.rsplit("/", 1)[1]
            for group in self.groups.values():
                group["security_group_rules"] = [r for r in group["security_group_rules"] if r["id"] != rule_id]
            return response(None, 204)
        raise AssertionError("unexpected neutron call %s %s" % (method, action))

    # -- set-up and inspection
    def add_group(self, name, description="", ingress=()):
        """A group as neutron makes it (two egress rules), plus ingress rules (protocol, low, high, remote)."""
        group_id = "sg-%d" % next(self._ids)
        rules = [dict(id="rule-%d" % next(self._ids), security_group_id=group_id, direction="egress", ethertype=e,
                      protocol=None, port_range_min=None, port_range_max=None, remote_ip_prefix=None,
                      remote_group_id=None, tenant_id=self.TENANT) for e in ("IPv4", "IPv6")]
        self.groups[group_id] = dict(id=group_id, name=name, description=description, tenant_id=self.TENANT,
                                     security_group_rules=rules)
        for protocol, low, high, remote in ingress:
            self.add_ingress(group_id, protocol, low, high, remote)
        return self.groups[group_id]

    def add_ingress(self, group_id, protocol, low, high, remote):
        """remote: a CIDR, or 'group:<name>' for a remote security group."""
        remote_group = self.group(remote[6:])["id"] if remote.startswith("group:") else None
        self.groups[group_id]["security_group_rules"].append(dict(
            id="rule-%d" % next(self._ids), security_group_id=group_id, direction="ingress", ethertype="IPv4",
            protocol=protocol, port_range_min=low, port_range_max=high,
            remote_ip_prefix=None if remote_group else remote, remote_group_id=remote_group, tenant_id=self.TENANT))

    def group(self, name):
        found = [g for g in self.groups.values() if g["name"] == name]
        return found[0] if found else None

    def ingress(self, name):
        """What comes in to the group's members: {(protocol, low, high, source)}, source a CIDR or group:<name>."""
        names = dict((g["id"], g["name"]) for g in self.groups.values())
        return set((r["protocol"], r["port_range_min"], r["port_range_max"],
                    "group:%s" % names[r["remote_group_id"]] if r["remote_group_id"] else r["remote_ip_prefix"])
                   for r in self.group(name)["security_group_rules"] if r["direction"] == "ingress")


@pytest.fixture
def openstack():
    return OpenStackCloud()


def openstack_access(cloud, cluster=CLUSTER, ssh=(CONTROLLER,), ports=INTERNAL, public=()):
    return access_for(cloud.driver, cluster, list(ssh), list(ports), "ubuntu", {}, list(public))


def test_openstack_present_lets_ssh_in_from_the_controller_and_internal_ports_from_the_cluster_only(openstack):
    access = openstack_access(openstack, public=["6006"])

    facts = access.present(PUBKEY)

    group = openstack.group(NAME)
    assert openstack.ingress(NAME) == {
        ("tcp", 22, 22, CONTROLLER), ("tcp", 6006, 6006, CONTROLLER),
        ("tcp", 2222, 2229, "group:" + NAME), ("tcp", 8020, 8020, "group:" + NAME)}
    assert openstack.keypairs[NAME]["public_key"] == PUBKEY
    assert facts["cloud"] == "openstack" and facts["firewall_id"] == group["id"]
    assert (facts["name"], facts["ssh_cidrs"], facts["internal_ports"]) == (NAME, [CONTROLLER], ["2222-2229", "8020"])
    assert access.changes[:2] == ["key pair " + NAME, "security group " + NAME]
    assert "allow tcp 22 from " + CONTROLLER in access.changes
    rule_calls = openstack.driver.ex_create_security_group_rule.call_args_list
    internal = [c for c in rule_calls if c.args[2] == 2222]
    assert internal[0].kwargs == {"source_security_group": internal[0].args[0]}
    assert isinstance(internal[0].args[0], OpenStackSecurityGroup) and internal[0].args[0].id == group["id"]


def test_openstack_second_present_changes_nothing(openstack):
    openstack_access(openstack).present(PUBKEY)
    before = copy.deepcopy(openstack.groups)

    again = openstack_access(openstack)
    facts = again.present(PUBKEY)

    assert again.changes == []
    assert openstack.groups == before
    assert facts["firewall_id"] == openstack.group(NAME)["id"]


def test_openstack_another_group_let_in_on_internal_ports_is_revoked(openstack):
    openstack.add_group("web")
    group = openstack.add_group(NAME, ingress=[("tcp", 22, 22, CONTROLLER), ("tcp", 2222, 2229, "group:" + NAME),
                                               ("tcp", 8020, 8020, "group:" + NAME), ("tcp", 2222, 2229, "group:web")])

    openstack_access(openstack).present(PUBKEY)

    assert openstack.ingress(NAME) == {("tcp", 22, 22, CONTROLLER), ("tcp", 2222, 2229, "group:" + NAME),
                                       ("tcp", 8020, 8020, "group:" + NAME)}
    assert openstack.group(NAME)["id"] == group["id"]


def test_openstack_old_controller_address_and_hand_made_rules_are_revoked(openstack):
    openstack.keypairs[NAME] = {"name": NAME, "public_key": PUBKEY, "fingerprint": "fp:0"}
    openstack.add_group(NAME, ingress=[("tcp", 22, 22, OLD_CONTROLLER), ("tcp", 3389, 3389, "0.0.0.0/0")])

    access = openstack_access(openstack, ssh=[NEW_CONTROLLER], ports=[])
    access.present(PUBKEY)

    assert openstack.ingress(NAME) == {("tcp", 22, 22, NEW_CONTROLLER)}
    assert sorted(access.changes) == sorted(["allow tcp 22 from " + NEW_CONTROLLER,
                                             "revoke tcp 22 from " + OLD_CONTROLLER, "revoke tcp 3389 from 0.0.0.0/0"])
    revoked = [c.args[0] for c in openstack.driver.ex_delete_security_group_rule.call_args_list]
    assert all(isinstance(rule, OpenStackSecurityGroupRule) for rule in revoked)


def test_openstack_existing_key_pair_is_kept_not_reimported(openstack):
    openstack.keypairs[NAME] = {"name": NAME, "public_key": PUBKEY, "fingerprint": "fp:0"}

    access = openstack_access(openstack, ports=[])
    access.present(PUBKEY)

    openstack.driver.import_key_pair_from_string.assert_not_called()
    assert "key pair " + NAME not in access.changes
    assert openstack.keypairs[NAME]["fingerprint"] == "fp:0"


def test_openstack_check_mode_lists_the_plan_and_changes_nothing(openstack):
    access = openstack_access(openstack)

    facts = access.present(PUBKEY, check_mode=True)

    assert access.changes == ["key pair " + NAME, "security group " + NAME]
    assert openstack.groups == {} and openstack.keypairs == {}
    assert facts["firewall_id"] is None

    openstack.add_group(NAME, ingress=[("tcp", 22, 22, OLD_CONTROLLER)])
    before = copy.deepcopy(openstack.groups)
    access = openstack_access(openstack, ports=[])
    access.present(PUBKEY, check_mode=True)
    assert "revoke tcp 22 from " + OLD_CONTROLLER in access.changes
    assert "allow tcp 22 from " + CONTROLLER in access.changes
    assert openstack.groups == before


def test_openstack_absent_removes_the_clusters_key_pair_and_group_only(openstack, clock):
    openstack_access(openstack).present(PUBKEY)
    openstack_access(openstack, cluster="other").present(PUBKEY)
    openstack.add_group("default")
    openstack.in_use[openstack.group(NAME)["id"]] = 2  # nodes still terminating

    access = openstack_access(openstack)
    access.absent()

    assert access.changes == ["key pair " + NAME, "security group " + NAME]
    assert sorted(g["name"] for g in openstack.groups.values()) == ["default", "tfdist-other"]
    assert sorted(openstack.keypairs) == ["tfdist-other"]
    assert clock.sleeps == [_access.DELETE_RETRY_PERIOD] * 2


def test_openstack_audit_finds_every_clusters_key_pair_and_group_by_name(openstack):
    openstack_access(openstack).present(PUBKEY)
    openstack_access(openstack, cluster="other").present(PUBKEY)
    openstack.add_group("default")

    found = sorted((kind, name, cluster) for kind, ident, name, cluster, owner
                   in OpenStackAccess.found(openstack.driver, {}))

    assert found == [("key pair", NAME, CLUSTER), ("key pair", "tfdist-other", "other"),
                     ("security group", NAME, CLUSTER), ("security group", "tfdist-other", "other")]


def test_openstack_absent_in_check_mode_removes_nothing(openstack):
    openstack_access(openstack).present(PUBKEY)
    before = (copy.deepcopy(openstack.groups), dict(openstack.keypairs))

    access = openstack_access(openstack)
    access.absent(check_mode=True)

    assert access.changes == ["key pair " + NAME, "security group " + NAME]
    assert (openstack.groups, openstack.keypairs) == before


def test_openstack_node_kwargs_put_the_node_in_the_group_with_the_key(openstack):
    facts = openstack_access(openstack).present(PUBKEY)

    kwargs = node_kwargs(openstack.driver, facts)

    assert kwargs["ex_keyname"] == NAME
    [group] = kwargs["ex_security_groups"]
    assert isinstance(group, OpenStackSecurityGroup)
    assert (group.id, group.name) == (facts["firewall_id"], NAME)
    create_node_accepts(OpenStack_2_NodeDriver, kwargs)


def test_openstack_node_kwargs_name_a_group_that_is_gone(openstack):
    facts = openstack_access(openstack, ports=[]).present(PUBKEY)
    openstack.groups.clear()

    with pytest.raises(TfdistCloudError, match="security group tfdist-demo .* is gone; run deploy again"):
        node_kwargs(openstack.driver, facts)


# ---------------------------------------------------------------------------------------------------------
# GCE: its network, subnet and firewall rules are tested in test__cloud_gce_access.py; here, the cross-cloud checks.


@pytest.fixture
def gce():
    return FakeGce()


# ---------------------------------------------------------------------------------------------------------
# Azure: raw ARM REST through the driver's connection (libcloud_fakes.AzureCloud).


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


# ---------------------------------------------------------------------------------------------------------
# EC2: the rule logic (the emulator covers EC2 end to end elsewhere).


class Ec2Cloud:
    """Security groups behind EC2NodeDriver's methods, and the query API _access calls itself (key pairs, revoke)."""

    OWNER = "123456789012"

    def __init__(self):
        self.groups = {}  # id -> {name, description, vpc_id, tags, perms: [{protocol, from, to, cidrs, groups}]}
        self.keys = {}  # name -> {material, tags}
        self.in_use = collections.Counter()  # group id -> deletes to refuse with DependencyViolation
        self.fail_delete = {}  # group id -> error text for every delete
        self._ids = itertools.count(1)
        driver = create_autospec(EC2NodeDriver, instance=True)
        driver.type = "ec2"
        driver.path = "/"
        driver.connection = create_autospec(EC2Connection, instance=True)
        driver.connection.request.side_effect = self._query
        driver.ex_get_security_groups.side_effect = self._get_groups
        driver.ex_create_security_group.side_effect = self._create_group
        driver.ex_create_tags.side_effect = self._create_tags
        driver.ex_authorize_security_group_ingress.side_effect = self._authorize
        driver.ex_revoke_security_group_ingress.side_effect = self._revoke
        driver.ex_delete_security_group_by_id.side_effect = self._delete_group
        self.driver = driver

    # -- query API (XML answers, as libcloud's connection gives them)
    def _query(self, action, params=None, data=None, headers=None, method="GET", raw=False, stream=False, json=None,
               retry_failed=None):
        params = dict(params)
        name = params["Action"]
        if name == "DescribeKeyPairs":
            value = params["Filter.1.Value.1"]
            if params["Filter.1.Name"] == "key-name":
                found = [k for k in self.keys if k == value]
            else:
                tag = params["Filter.1.Name"].split(":", 1)[1]
                found = [k for k, key in self.keys.items() if key["tags"].get(tag) == value]
            items = "".join("<item><keyName>%s</keyName></item>" % k for k in found)
            return self._xml("DescribeKeyPairsResponse", "<keySet>%s</keySet>" % items)
        if name == "ImportKeyPair":
            if params["KeyName"] in self.keys:
                raise Exception("InvalidKeyPair.Duplicate: The keypair '%s' already exists." % params["KeyName"])
            tags = {}
            if params.get("TagSpecification.1.ResourceType") == "key-pair":
                tags[params["TagSpecification.1.Tag.1.Key"]] = params["TagSpecification.1.Tag.1.Value"]
            material = base64.b64decode(params["PublicKeyMaterial"]).decode()
            self.keys[params["KeyName"]] = {"material": material, "tags": tags}
            return self._xml("ImportKeyPairResponse", "<keyName>%s</keyName>" % params["KeyName"])
        if name == "DeleteKeyPair":
            self.keys.pop(params["KeyName"], None)
            return self._xml("DeleteKeyPairResponse", "<return>true</return>")
        if name == "RevokeSecurityGroupIngress":
            # AWS revokes only a rule given exactly: protocol, ports and source.
            cidrs = [v for k, v in params.items() if k.startswith("IpPermissions.1.IpRanges.")]
            groups = [v for k, v in params.items() if k.startswith("IpPermissions.1.Groups.")]
            low, high = params.get("IpPermissions.1.FromPort"), params.get("IpPermissions.1.ToPort")
            self._revoke(params["GroupId"], low and int(low), high and int(high), cidrs,
                         [{"group_id": g} for g in groups], params["IpPermissions.1.IpProtocol"])
            return self._xml("RevokeSecurityGroupIngressResponse", "<return>true</return>")
        raise AssertionError("unexpected EC2 call %s" % params)

    @staticmethod
    def _xml(root, inner):
        return response(ET.fromstring('<%s xmlns="%s">%s</%s>' % (root, EC2_NAMESPACE, inner, root)))

    # -- the driver's security group methods
    def _get_groups(self, group_ids=None, group_names=None, filters=None):
        found = []
        for group_id, g in self.groups.items():
            if group_ids is not None and group_id not in group_ids:
                continue
            if group_names is not None and g["name"] not in group_names:
                continue
            matches = True
            for key, value in (filters or {}).items():
                if key == "group-name":
                    matches = matches and g["name"] == value
                elif key.startswith("tag:"):
                    matches = matches and g["tags"].get(key[4:]) == value
                else:
                    raise AssertionError("filter %s not modelled" % key)
            if matches:
                found.append(EC2SecurityGroup(group_id, g["name"], [self._rule(p) for p in g["perms"]], [], extra={
                    "description": g["description"], "vpc_id": g["vpc_id"], "owner_id": self.OWNER,
                    "tags": dict(g["tags"])}))
        return found

    def _rule(self, perm):
        # As libcloud's EC2 driver parses DescribeSecurityGroups: ports are strings, absent for all-traffic rules.
        return {"protocol": perm["protocol"],
                "from_port": None if perm["from"] is None else str(perm["from"]),
                "to_port": None if perm["to"] is None else str(perm["to"]),
                "group_pairs": [{"user_id": self.OWNER, "group_id": g, "group_name": None} for g in perm["groups"]],
                "cidr_ips": list(perm["cidrs"])}

    def _create_group(self, name, description, vpc_id=None):
        if any(g["name"] == name and g["vpc_id"] == vpc_id for g in self.groups.values()):
            raise Exception("InvalidGroup.Duplicate: The security group '%s' already exists" % name)
        return {"group_id": self.add_group(name, vpc_id=vpc_id, description=description)}

    def _create_tags(self, resource, tags):
        self.groups[resource.id]["tags"].update(tags)
        return True

    def _perm(self, group_id, protocol, low, high):
        for perm in self.groups[group_id]["perms"]:
            if (perm["protocol"], perm["from"], perm["to"]) == (protocol, low, high):
                return perm
        return None

    def _authorize(self, id, from_port, to_port, cidr_ips=None, group_pairs=None, protocol="tcp", description=None):
        perm = self._perm(id, protocol, from_port, to_port)
        if perm is None:
            perm = {"protocol": protocol, "from": from_port, "to": to_port, "cidrs": [], "groups": []}
            self.groups[id]["perms"].append(perm)
        for cidr in cidr_ips or []:
            if cidr in perm["cidrs"]:
                raise Exception("InvalidPermission.Duplicate: the rule already exists")
            perm["cidrs"].append(cidr)
        for pair in group_pairs or []:
            assert pair["group_id"] in self.groups, pair
            if pair["group_id"] in perm["groups"]:
                raise Exception("InvalidPermission.Duplicate: the rule already exists")
            perm["groups"].append(pair["group_id"])
        return True

    def _revoke(self, id, from_port, to_port, cidr_ips=None, group_pairs=None, protocol="tcp"):
        perm = self._perm(id, protocol, from_port, to_port)
        cidrs, groups = list(cidr_ips or []), [p["group_id"] for p in group_pairs or []]
        if perm is None or not (cidrs or groups) or not set(cidrs) <= set(perm["cidrs"]) \
                or not set(groups) <= set(perm["groups"]):
            raise Exception("InvalidPermission.NotFound: The specified rule does not exist in this security group.")
        perm["cidrs"] = [c for c in perm["cidrs"] if c not in cidrs]
        perm["groups"] = [g for g in perm["groups"] if g not in groups]
        if not perm["cidrs"] and not perm["groups"]:
            self.groups[id]["perms"].remove(perm)
        return True

    def _delete_group(self, group_id):
        if group_id in self.fail_delete:
            raise Exception(self.fail_delete[group_id])
        if self.in_use[group_id]:
            self.in_use[group_id] -= 1
            raise Exception("DependencyViolation: resource %s has a dependent object" % group_id)
        del self.groups[group_id]
        return True

    # -- set-up and inspection
    def add_group(self, name, vpc_id="vpc-default", description="", tags=None):
        group_id = "sg-%04d" % next(self._ids)
        self.groups[group_id] = {"name": name, "description": description, "vpc_id": vpc_id,
                                 "tags": dict(tags or {}), "perms": []}
        return group_id

    def group_id(self, name):
        found = [i for i, g in self.groups.items() if g["name"] == name]
        return found[0] if found else None

    def ingress(self, name):
        """{(protocol, low, high, source)}, source a CIDR or group:<name>."""
        group = self.groups[self.group_id(name)]
        rules = set()
        for perm in group["perms"]:
            rules.update((perm["protocol"], perm["from"], perm["to"], c) for c in perm["cidrs"])
            rules.update((perm["protocol"], perm["from"], perm["to"], "group:" + self.groups[g]["name"])
                         for g in perm["groups"])
        return rules


@pytest.fixture
def ec2():
    return Ec2Cloud()


def ec2_access(cloud, cluster=CLUSTER, ssh=(CONTROLLER,), ports=INTERNAL, public=(), options=None):
    return access_for(cloud.driver, cluster, list(ssh), list(ports), "ec2-user", options or {}, list(public))


EC2_WANTED = {("tcp", 22, 22, CONTROLLER), ("tcp", 2222, 2229, "group:" + NAME), ("tcp", 8020, 8020, "group:" + NAME)}


def test_ec2_present_lets_ssh_in_from_the_controller_and_internal_ports_from_the_group_itself(ec2):
    access = ec2_access(ec2)

    facts = access.present(PUBKEY)

    group_id = ec2.group_id(NAME)
    assert ec2.ingress(NAME) == EC2_WANTED
    assert ec2.groups[group_id]["tags"] == {"tfdist_cluster": CLUSTER}
    assert ec2.keys[NAME] == {"material": PUBKEY, "tags": {"tfdist_cluster": CLUSTER}}
    assert (facts["cloud"], facts["firewall_id"], facts["public_ports"]) == ("ec2", group_id, ["22"])
    assert access.changes[:2] == ["key pair " + NAME, "security group " + NAME]


def test_ec2_second_present_changes_nothing(ec2):
    ec2_access(ec2).present(PUBKEY)
    before = copy.deepcopy((ec2.groups, ec2.keys))
    ec2.driver.reset_mock()

    access = ec2_access(ec2)
    access.present(PUBKEY)

    assert access.changes == []
    assert (ec2.groups, ec2.keys) == before
    ec2.driver.ex_authorize_security_group_ingress.assert_not_called()
    ec2.driver.ex_revoke_security_group_ingress.assert_not_called()


def test_ec2_key_imported_by_hand_under_the_cluster_name_is_kept(ec2):
    ec2.keys[NAME] = {"material": "ssh-rsa AAAAB3NzaC1yc2E old", "tags": {}}

    access = ec2_access(ec2)
    access.present(PUBKEY)

    assert ec2.keys[NAME]["material"] == "ssh-rsa AAAAB3NzaC1yc2E old"
    assert "key pair " + NAME not in access.changes


def test_ec2_old_controller_hand_made_rules_and_other_groups_are_revoked(ec2):
    ec2_access(ec2, ssh=[OLD_CONTROLLER]).present(PUBKEY)
    group_id, web = ec2.group_id(NAME), ec2.add_group("web")
    ec2._authorize(group_id, 3389, 3389, cidr_ips=["0.0.0.0/0"])
    ec2._authorize(group_id, 2222, 2229, group_pairs=[{"group_id": web}])
    ec2._authorize(group_id, 8020, 8020, cidr_ips=["10.0.0.0/8"])

    access = ec2_access(ec2, ssh=[NEW_CONTROLLER], public=["6006"])
    access.present(PUBKEY)

    assert ec2.ingress(NAME) == {("tcp", 22, 22, NEW_CONTROLLER), ("tcp", 6006, 6006, NEW_CONTROLLER),
                                 ("tcp", 2222, 2229, "group:" + NAME), ("tcp", 8020, 8020, "group:" + NAME)}
    assert sorted(access.changes) == sorted([
        "allow tcp 22 from " + NEW_CONTROLLER, "allow tcp 6006 from " + NEW_CONTROLLER,
        "revoke tcp 22 from " + OLD_CONTROLLER, "revoke tcp 3389 from 0.0.0.0/0",
        "revoke tcp 2222-2229 from " + web, "revoke tcp 8020 from 10.0.0.0/8"])


def test_ec2_all_traffic_rule_from_anywhere_is_revoked(ec2):
    ec2_access(ec2).present(PUBKEY)
    group_id = ec2.group_id(NAME)
    ec2._authorize(group_id, None, None, cidr_ips=["0.0.0.0/0"], protocol="-1")

    ec2_access(ec2).present(PUBKEY)

    assert ec2.ingress(NAME) == EC2_WANTED


def test_ec2_check_mode_lists_the_plan_and_changes_nothing(ec2):
    access = ec2_access(ec2)
    facts = access.present(PUBKEY, check_mode=True)
    assert access.changes == ["key pair " + NAME, "security group " + NAME]
    assert ec2.groups == {} and ec2.keys == {} and facts["firewall_id"] is None

    ec2_access(ec2, ssh=[OLD_CONTROLLER]).present(PUBKEY)
    before = copy.deepcopy((ec2.groups, ec2.keys))
    access = ec2_access(ec2)
    access.present(PUBKEY, check_mode=True)
    assert sorted(access.changes) == ["allow tcp 22 from " + CONTROLLER, "revoke tcp 22 from " + OLD_CONTROLLER]
    access = ec2_access(ec2)
    access.absent(check_mode=True)
    assert access.changes == ["key pair " + NAME, "security group %s (%s)" % (NAME, ec2.group_id(NAME))]
    assert (ec2.groups, ec2.keys) == before


def test_ec2_absent_removes_key_and_group_retrying_while_nodes_terminate(ec2, clock):
    ec2_access(ec2).present(PUBKEY)
    ec2_access(ec2, cluster="other").present(PUBKEY)
    ec2.in_use[ec2.group_id(NAME)] = 3

    access = ec2_access(ec2)
    access.absent()

    assert [g["name"] for g in ec2.groups.values()] == ["tfdist-other"]
    assert sorted(ec2.keys) == ["tfdist-other"]
    assert clock.sleeps == [_access.DELETE_RETRY_PERIOD] * 3


def test_ec2_absent_gives_up_after_the_timeout_naming_the_group(ec2, clock):
    ec2_access(ec2).present(PUBKEY)
    group_id = ec2.group_id(NAME)
    ec2.fail_delete[group_id] = "DependencyViolation: resource %s has a dependent object" % group_id

    with pytest.raises(TfdistCloudError) as error:
        ec2_access(ec2).absent()

    assert str(error.value) == "could not remove security group %s (%s): %s" % (NAME, group_id,
                                                                                ec2.fail_delete[group_id])
    waited = sum(clock.sleeps)
    assert _access.DELETE_RETRY_SECONDS <= waited < _access.DELETE_RETRY_SECONDS + 2 * _access.DELETE_RETRY_PERIOD


def test_ec2_absent_fails_at_once_on_an_error_other_than_in_use(ec2, clock):
    ec2_access(ec2).present(PUBKEY)
    ec2.fail_delete[ec2.group_id(NAME)] = "UnauthorizedOperation: You are not authorized"

    with pytest.raises(TfdistCloudError, match="could not remove security group tfdist-demo .*UnauthorizedOperation"):
        ec2_access(ec2).absent()
    assert clock.sleeps == []


def test_ec2_node_kwargs_in_the_default_vpc_name_the_key_and_the_group(ec2):
    facts = ec2_access(ec2).present(PUBKEY)

    kwargs = node_kwargs(ec2.driver, facts)

    assert kwargs == {"ex_keyname": NAME, "ex_securitygroup": [NAME]}
    create_node_accepts(EC2NodeDriver, kwargs)


def test_ec2_node_kwargs_in_a_subnet_give_the_group_id(ec2):
    facts = ec2_access(ec2, options={"vpc_id": "vpc-1", "subnet_id": "subnet-7"}).present(PUBKEY)

    kwargs = node_kwargs(ec2.driver, facts)

    assert ec2.groups[facts["firewall_id"]]["vpc_id"] == "vpc-1"
    assert kwargs["ex_keyname"] == NAME and kwargs["ex_subnet"].id == "subnet-7"
    assert kwargs["ex_security_group_ids"] == [facts["firewall_id"]] and "ex_securitygroup" not in kwargs
    create_node_accepts(EC2NodeDriver, kwargs)


def test_ec2_group_of_the_same_name_in_another_vpc_is_not_touched(ec2):
    other = ec2.add_group(NAME, vpc_id="vpc-2")
    ec2._authorize(other, 22, 22, cidr_ips=["0.0.0.0/0"])

    facts = ec2_access(ec2, options={"vpc_id": "vpc-1"}).present(PUBKEY)

    assert facts["firewall_id"] != other
    assert ec2.groups[other]["perms"][0]["cidrs"] == ["0.0.0.0/0"]


# ---------------------------------------------------------------------------------------------------------
# Shared: ports, providers, retries.


def test_parse_ports_merges_overlapping_and_adjacent_ranges():
    assert parse_ports(["8020", 2222, "2223-2229", " 9866 ", "9867", "2224", "9870"]) == [
        (2222, 2229), (8020, 8020), (9866, 9867), (9870, 9870)]
    assert parse_ports([]) == []


@pytest.mark.parametrize("ports, message", [
    (["2222", "tensorboard"], r"internal_ports\[1\]: 'tensorboard' is not a port or a port range like 2222-2229"),
    (["2222-x"], r"internal_ports\[0\]: '2222-x' is not a port"),
    (["0"], r"internal_ports\[0\]: '0' is not within 1-65535"),
    (["22", "65536"], r"internal_ports\[1\]: '65536' is not within 1-65535"),
    (["2229-2222"], r"internal_ports\[0\]: '2229-2222' is not within 1-65535 \(low to high\)"),
])
def test_parse_ports_names_the_bad_item(ports, message):
    with pytest.raises(TfdistCloudError, match=message):
        parse_ports(ports)


def test_bad_public_port_is_named_as_such(ec2):
    with pytest.raises(TfdistCloudError, match=r"public_ports\[2\]: 'http'"):
        ec2_access(ec2, public=["6006", "http"])


def test_access_for_an_unsupported_provider_lists_the_supported_ones():
    driver = SimpleNamespace(type="linode")

    with pytest.raises(TfdistCloudError) as error:
        access_for(driver, CLUSTER, [CONTROLLER], INTERNAL)

    assert "provider 'linode'" in str(error.value)
    assert "azure_arm, ec2, gce, openstack" in str(error.value) and "create_args" in str(error.value)


def test_node_kwargs_refuse_access_made_for_another_cloud(ec2, gce):
    facts = ec2_access(ec2).present(PUBKEY)

    with pytest.raises(TfdistCloudError, match="access: made for 'ec2', but the provider is 'gce'"):
        node_kwargs(gce.driver, facts)


def test_node_kwargs_without_access_are_empty(gce):
    assert node_kwargs(gce.driver, {}) == {} and node_kwargs(gce.driver, None) == {}


def test_facts_are_json_safe_and_sorted(ec2):
    access = ec2_access(ec2, ssh=[NEW_CONTROLLER, CONTROLLER, CONTROLLER], ports=["9870", "2222", "2223"])

    facts = access.present(PUBKEY)

    assert sent(facts) == facts
    assert facts["ssh_cidrs"] == [CONTROLLER, NEW_CONTROLLER]
    assert facts["internal_ports"] == ["2222-2223", "9870"]


@pytest.mark.parametrize("refusal", [
    "DependencyViolation: resource sg-1 has a dependent object",
    "The network resource 'projects/p/global/networks/tfdist-demo' is already being used by "
    "'projects/p/global/firewalls/tfdist-demo-ssh'",
])
def test_retry_while_in_use_retries_then_succeeds(clock, refusal):
    attempts = []

    def delete():
        attempts.append(1)
        if len(attempts) < 3:
            raise RuntimeError(refusal)

    _access.retry_while_in_use(delete, "security group tfdist-demo (sg-1)")

    assert len(attempts) == 3 and clock.sleeps == [_access.DELETE_RETRY_PERIOD] * 2


def test_retry_while_in_use_gives_up_after_the_timeout(clock):
    def delete():
        raise RuntimeError("DependencyViolation: resource sg-1 has a dependent object")

    with pytest.raises(TfdistCloudError,
                       match=r"could not remove security group tfdist-demo \(sg-1\): DependencyViolation"):
        _access.retry_while_in_use(delete, "security group tfdist-demo (sg-1)", timeout=12)

    assert 12 <= sum(clock.sleeps) < 12 + _access.DELETE_RETRY_PERIOD


def test_fakes_return_real_libcloud_objects(openstack, ec2):
    """The fakes answer with libcloud's own classes, so _access sees what it sees on the clouds."""
    openstack_access(openstack, ports=[]).present(PUBKEY)
    ec2_access(ec2).present(PUBKEY)

    assert all(isinstance(k, KeyPair) for k in openstack.driver.list_key_pairs())
    [group] = openstack.driver.ex_list_security_groups()
    assert isinstance(group, OpenStackSecurityGroup)
    assert all(isinstance(r, OpenStackSecurityGroupRule) for r in group.rules)
    assert all(isinstance(g, EC2SecurityGroup) for g in ec2.driver.ex_get_security_groups())
    with pytest.raises(TypeError):
        openstack.driver.ex_create_security_group_rule(group, "tcp", 22, 22, remote_ip_prefix=CONTROLLER)
