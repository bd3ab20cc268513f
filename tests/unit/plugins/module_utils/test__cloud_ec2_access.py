"""The key pair and security group of a cluster on EC2: the rule logic of module_utils/_access.py as
_cloud_ec2.Ec2Access spells it, reached through _libcloud.access_for and node_kwargs as the modules reach it
(the EC2 emulator covers EC2 end to end in tests/e2e).

No emulator runs EC2 in a unit test, so these tests drive _access through a libcloud driver made with
create_autospec from the real driver class: a call with a signature the real driver does not have fails. Security
groups go through the driver's methods, key pairs and revokes through EC2's query API that _access calls itself
(libcloud_fakes.Ec2Cloud).
The assertions read the cloud's state: what reaches the nodes, from where, and which key they get.
"""

import copy

import pytest

from libcloud.compute.drivers.ec2 import EC2NodeDriver

from ansible_collections.tfdist.cluster.plugins.module_utils import _access
from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import TfdistCloudError, node_kwargs
from ansible_collections.tfdist.cluster.tests.unit.plugins.module_utils.libcloud_fakes import (
    CLUSTER,
    CONTROLLER,
    NAME,
    NEW_CONTROLLER,
    OLD_CONTROLLER,
    PUBKEY,
    Ec2Cloud,
    create_node_accepts,
    ec2_access,
)


@pytest.fixture
def ec2():
    return Ec2Cloud()


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
