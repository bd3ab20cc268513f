"""What EC2's RunInstances makes besides the instances (the volumes, the network interfaces) is tagged at creation
with the instances' tags: _cloud_ec2.tags_on_what_instances_make, on the request libcloud's own create_node builds,
through the connection of the driver that _libcloud.get_driver makes. (tests/e2e/test_audit_volumes.py shows it on
the EC2 emulator, with the audit and destroy.) And the audit lists those that would outlive their node, not those
that EC2 deletes with it (DeleteOnTermination), which moto does not report."""

import xml.etree.ElementTree as ET
from types import SimpleNamespace
from unittest.mock import patch

from libcloud.compute.base import NodeImage, NodeSize
from libcloud.compute.drivers.ec2 import NAMESPACE as EC2_NAMESPACE
from libcloud.compute.drivers.ec2 import EC2Connection

from ansible_collections.tfdist.cluster.plugins.module_utils._cloud_ec2 import tags_on_what_instances_make
from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import get_driver

KEYS = {"access_key": "AKIDEXAMPLE", "secret_key": "secret"}


def tag_specifications(params):
    """{resource type: {tag: value}} of TagSpecification.N.* query parameters."""
    types = {key.split(".")[1]: value for key, value in params.items()
             if key.startswith("TagSpecification.") and key.endswith(".ResourceType")}
    specs = {kind: {} for kind in types.values()}
    for key, value in params.items():
        parts = key.split(".")
        if parts[0] == "TagSpecification" and parts[2] == "Tag" and parts[4] == "Key":
            specs[types[parts[1]]][value] = params[key[:-len("Key")] + "Value"]
    return specs


def sent_run_instances(**create_args):
    """The query parameters of the RunInstances that create_node sends through get_driver('ec2')'s connection, as
    they reach the signer (nothing leaves the process)."""
    driver = get_driver("ec2", "us-east-1", KEYS)
    signed = []

    def signer(connection, params):
        signed.append(params)
        raise RuntimeError("stop before the network")

    with patch.object(EC2Connection, "add_default_params", signer):
        try:
            driver.create_node(name="demo-worker-pending", size=NodeSize("t3.large", "", 0, 0, 0, 0, driver),
                               image=NodeImage("ami-0123", "", driver), **create_args)
        except RuntimeError:
            pass
    [params] = signed
    return params


def test_the_volumes_and_interfaces_of_new_nodes_get_the_nodes_tags_but_their_name():
    params = sent_run_instances(ex_metadata={"tfdist_cluster": "demo", "tfdist_role": "worker"}, ex_mincount=2,
                                ex_maxcount=2)
    assert tag_specifications(params) == {
        "instance": {"Name": "demo-worker-pending", "tfdist_cluster": "demo", "tfdist_role": "worker"},
        "volume": {"tfdist_cluster": "demo", "tfdist_role": "worker"},
        "network-interface": {"tfdist_cluster": "demo", "tfdist_role": "worker"}}
    assert params["MinCount"] == "2"


def test_a_tag_specification_already_given_for_volumes_is_kept_and_other_requests_are_left_alone():
    run = {"Action": "RunInstances", "TagSpecification.1.ResourceType": "instance",
           "TagSpecification.1.Tag.1.Key": "tfdist_cluster", "TagSpecification.1.Tag.1.Value": "demo",
           "TagSpecification.2.ResourceType": "volume",
           "TagSpecification.2.Tag.1.Key": "backup", "TagSpecification.2.Tag.1.Value": "daily"}
    assert tag_specifications(tags_on_what_instances_make(run)) == {
        "instance": {"tfdist_cluster": "demo"}, "volume": {"backup": "daily"},
        "network-interface": {"tfdist_cluster": "demo"}}
    tags = {"Action": "CreateTags", "ResourceId.1": "i-0123", "Tag.1.Key": "Name", "Tag.1.Value": "demo-worker-0"}
    assert tags_on_what_instances_make(tags) == tags


# What the audit makes of the tagged volumes and interfaces: DescribeVolumes and DescribeNetworkInterfaces answers as
# EC2 writes them, read by libcloud's own parsers.
ANSWERS = {
    "DescribeInstances": "<reservationSet/>",
    "DescribeKeyPairs": "<keySet/>",
    "DescribeSecurityGroups": "<securityGroupInfo/>",
    "DescribeVolumes": "<volumeSet>%s</volumeSet>",
    "DescribeNetworkInterfaces": "<networkInterfaceSet>%s</networkInterfaceSet>",
}
TAGS = "<tagSet><item><key>tfdist_cluster</key><value>demo</value></item></tagSet>"


def volume(ident, attached_to=None, delete_on_termination=None):
    attachment = ("<attachmentSet><item><volumeId>%s</volumeId><instanceId>%s</instanceId><device>/dev/sda1</device>"
                  "<status>attached</status><deleteOnTermination>%s</deleteOnTermination></item></attachmentSet>"
                  % (ident, attached_to, delete_on_termination) if attached_to else "<attachmentSet/>")
    return ("<item><volumeId>%s</volumeId><size>8</size><status>%s</status><availabilityZone>us-east-1a"
            "</availabilityZone>%s%s</item>" % (ident, "in-use" if attached_to else "available", attachment, TAGS))


def interface(ident, attached_to=None, delete_on_termination=None):
    attachment = ("<attachment><attachmentId>eni-attach-%s</attachmentId><instanceId>%s</instanceId><deviceIndex>0"
                  "</deviceIndex><status>attached</status><deleteOnTermination>%s</deleteOnTermination></attachment>"
                  % (ident, attached_to, delete_on_termination) if attached_to else "")
    return ("<item><networkInterfaceId>%s</networkInterfaceId><status>%s</status>%s<groupSet/>"
            "<privateIpAddressesSet/>%s</item>" % (ident, "in-use" if attached_to else "available", attachment, TAGS))


def audited(volumes, interfaces):
    """(kind, id) of what _audit.find lists of cluster demo on an EC2 that holds these volumes and interfaces."""
    from ansible_collections.tfdist.cluster.plugins.module_utils._audit import find
    driver = get_driver("ec2", "us-east-1", KEYS)
    items = {"DescribeVolumes": "".join(volumes), "DescribeNetworkInterfaces": "".join(interfaces)}

    def request(path, params=None, **kwargs):
        body = ANSWERS[params["Action"]].replace("%s", items.get(params["Action"], ""))
        return SimpleNamespace(object=ET.fromstring('<Response xmlns="%s">%s</Response>' % (EC2_NAMESPACE, body)))

    with patch.object(driver.connection, "request", request):
        found, unchecked = find(driver, ["demo"])
    assert unchecked == []
    return [(resource.kind, resource.id) for resource in found]


def test_the_audit_lists_what_would_outlive_its_node_and_leaves_what_goes_with_it_to_the_node():
    assert audited(
        [volume("vol-root", "i-1", "true"), volume("vol-kept", "i-1", "false"), volume("vol-left")],
        [interface("eni-primary", "i-1", "true"), interface("eni-extra", "i-1", "false"), interface("eni-left")],
    ) == [("volume", "vol-kept"), ("volume", "vol-left"), ("network interface", "eni-extra"),
          ("network interface", "eni-left")]
