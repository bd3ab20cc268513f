"""tfdist.cluster.libcloud_access run in-process against a registered EC2-like provider.

The provider is tests/unit/plugins/module_utils/libcloud_fakes.py's Ec2Cloud: an EC2NodeDriver made with
create_autospec whose security groups and key pairs keep state. The rule logic itself is tested in
test__cloud_ec2_access.py; here, what the module takes and gives back.
"""

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.tfdist.cluster.plugins.module_utils import _clouds
from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import register_driver
from ansible_collections.tfdist.cluster.plugins.modules import libcloud_access
from ansible_collections.tfdist.cluster.tests.unit.plugins.module_utils.libcloud_fakes import (
    CONTROLLER,
    NAME,
    PUBKEY,
    Ec2Cloud,
)

PROVIDER = "tfdist_test_ec2"


@pytest.fixture
def ec2():
    """A fresh EC2-like cloud, reachable as provider tfdist_test_ec2; counts how often a driver was made."""
    cloud = Ec2Cloud()
    cloud.connects = []

    def connect(**kwargs):
        cloud.connects.append(kwargs)
        return cloud.driver

    register_driver(PROVIDER, connect)
    yield cloud
    _clouds.PROVIDERS.pop(PROVIDER, None)


@pytest.fixture
def run(capsys):
    """Run the module with the given options; returns its JSON result (with `failed` on failure)."""
    def run_module(check_mode=False, **options):
        args = dict(provider=PROVIDER, cluster="demo")
        args.update(options, _ansible_check_mode=check_mode)
        with patch_module_args(args), pytest.raises(SystemExit):
            libcloud_access.main()
        return json.loads(capsys.readouterr().out)
    return run_module


PRESENT = dict(public_key=PUBKEY + "\n", ssh_from=[CONTROLLER], internal_ports=["2222-2229", "8020"])


def test_present_without_ssh_from_fails_naming_it_and_touches_no_cloud(run, ec2):
    result = run(public_key=PUBKEY, internal_ports=["2222"])

    assert result["failed"] is True
    assert result["msg"].startswith("ssh_from: give at least one CIDR")
    assert ec2.connects == [] and ec2.groups == {}


def test_present_without_public_key_fails_naming_it(run, ec2):
    result = run(ssh_from=[CONTROLLER])

    assert result["failed"] is True and "public_key" in result["msg"]


def test_bad_internal_port_is_named(run, ec2):
    result = run(**dict(PRESENT, internal_ports=["2222", "hdfs"]))

    assert result["failed"] is True
    assert result["msg"].startswith("internal_ports[1]: 'hdfs' is not a port")
    assert ec2.groups == {}


def test_present_makes_key_and_group_and_returns_what_libcloud_node_needs(run, ec2):
    result = run(**PRESENT)

    assert result["changed"] is True
    group_id = ec2.group_id(NAME)
    assert result["access"] == {
        "cloud": "ec2", "name": NAME, "cluster": "demo", "ssh_user": "root", "firewall_id": group_id,
        "ssh_cidrs": [CONTROLLER], "internal_ports": ["2222-2229", "8020"], "public_ports": ["22"], "options": {}}
    assert ec2.keys[NAME]["material"] == PUBKEY  # the trailing newline of a key file is not sent
    assert ec2.ingress(NAME) == {("tcp", 22, 22, CONTROLLER), ("tcp", 2222, 2229, "group:" + NAME),
                                 ("tcp", 8020, 8020, "group:" + NAME)}
    assert result["changes"][:2] == ["key pair " + NAME, "security group " + NAME]


def test_second_present_reports_no_change(run, ec2):
    first = run(**PRESENT)

    second = run(**PRESENT)

    assert second["changed"] is False and second["changes"] == []
    assert second["access"] == first["access"]


def test_check_mode_reports_the_plan_and_creates_nothing(run, ec2):
    result = run(check_mode=True, **PRESENT)

    assert result["changed"] is True
    assert result["changes"] == ["key pair " + NAME, "security group " + NAME]
    assert ec2.groups == {} and ec2.keys == {}


def test_absent_removes_key_and_group(run, ec2):
    run(**PRESENT)

    result = run(state="absent")

    assert result["changed"] is True and result["access"] == {}
    assert ec2.groups == {} and ec2.keys == {}
    assert run(state="absent")["changed"] is False


def test_provider_without_access_support_is_refused_naming_the_supported_ones(run, cloud):
    result = run(provider="fake", **PRESENT)

    assert result["failed"] is True
    assert result["msg"].startswith("provider dummy: ") and "azure_arm, ec2, gce, openstack" in result["msg"]
