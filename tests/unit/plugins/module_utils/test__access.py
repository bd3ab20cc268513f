"""What module_utils/_access.py decides for every cloud: ports, providers, the facts it returns, the retries of a
removal while the cloud still holds it, and that node_kwargs match the access to its cloud. Each cloud's key pair and
firewall: test__cloud_<cloud>_access.py, over the fake clouds of libcloud_fakes.py (made with create_autospec from the
real driver classes, so a call with a signature the real driver does not have fails).
"""

from types import SimpleNamespace

import pytest

from libcloud.compute.base import KeyPair
from libcloud.compute.drivers.ec2 import EC2SecurityGroup
from libcloud.compute.drivers.openstack import OpenStackSecurityGroup, OpenStackSecurityGroupRule

from ansible_collections.tfdist.cluster.plugins.module_utils import _access
from ansible_collections.tfdist.cluster.plugins.module_utils._access import parse_ports
from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import TfdistCloudError, access_for, node_kwargs
from ansible_collections.tfdist.cluster.tests.unit.plugins.module_utils.libcloud_fakes import (
    CLUSTER,
    CONTROLLER,
    INTERNAL,
    NEW_CONTROLLER,
    PUBKEY,
    Ec2Cloud,
    FakeGce,
    OpenStackCloud,
    ec2_access,
    openstack_access,
    sent,
)


@pytest.fixture
def openstack():
    return OpenStackCloud()


@pytest.fixture
def ec2():
    return Ec2Cloud()


@pytest.fixture
def gce():
    return FakeGce()


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
