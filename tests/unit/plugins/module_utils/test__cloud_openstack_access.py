"""The key pair and security group of a cluster on OpenStack: the policy of module_utils/_access.py as
_cloud_openstack.OpenStackAccess spells it, reached through _libcloud.access_for and node_kwargs as the modules
reach it.

No emulator runs OpenStack here, so these tests drive _access through a libcloud driver made with create_autospec
from the real driver class: a call with a signature the real driver does not have fails. The driver's own code runs
over a fake REST endpoint that keeps state the way neutron and nova do (libcloud_fakes.OpenStackCloud).
The assertions read the cloud's state: what reaches the nodes, from where, and which key they get.
"""

import copy

import pytest

from libcloud.compute.drivers.openstack import (
    OpenStack_2_NodeDriver,
    OpenStackSecurityGroup,
    OpenStackSecurityGroupRule,
)

from ansible_collections.tfdist.cluster.plugins.module_utils import _access
from ansible_collections.tfdist.cluster.plugins.module_utils._cloud_openstack import OpenStackAccess
from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import TfdistCloudError, node_kwargs
from ansible_collections.tfdist.cluster.tests.unit.plugins.module_utils.libcloud_fakes import (
    CLUSTER,
    CONTROLLER,
    NAME,
    NEW_CONTROLLER,
    OLD_CONTROLLER,
    PUBKEY,
    OpenStackCloud,
    create_node_accepts,
    openstack_access,
)


@pytest.fixture
def openstack():
    return OpenStackCloud()


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
