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
            driver.create_node(name="demo-worker-0-1", size=NodeSize("t3.large", "", 0, 0, 0, 0, driver),
                               image=NodeImage("ami-0123", "", driver), **create_args)
        except RuntimeError:
            pass
    [params] = signed
    return params


def test_the_volumes_and_interfaces_of_new_nodes_get_the_nodes_tags_but_their_name():
    params = sent_run_instances(ex_metadata={"tfdist_cluster": "demo", "tfdist_role": "worker"}, ex_mincount=2,
                                ex_maxcount=2)
    assert tag_specifications(params) == {
        "instance": {"Name": "demo-worker-0-1", "tfdist_cluster": "demo", "tfdist_role": "worker"},
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


# A batch's nodes are whole at creation (_cloud_ec2.batch_create): one RunInstances per run of consecutive indexes,
# no call per node; each node goes by its own name and index (_libcloud.node_identity), listed or just made. The
# EC2 below keeps the instances that RunInstances makes, with the tags asked for and launch indexes 0, 1, ... as EC2
# gives them, and answers in libcloud's own XML parsers' format.
class Ec2:
    def __init__(self, start_fewer=0, refuse_index=None):
        self.instances, self.calls = [], []
        self.start_fewer, self.refuse_index = start_fewer, refuse_index

    def request(self, path, params=None, **kwargs):
        self.calls.append(params["Action"])
        if params["Action"] == "RunInstances":
            tags = tag_specifications(params)["instance"]
            if tags.get("tfdist_index", tags.get("tfdist_first_index")) == self.refuse_index:
                raise RuntimeError("InsufficientInstanceCapacity")
            made = [{"id": "i-%d" % (len(self.instances) + n), "launch": n, "tags": tags}
                    for n in range(int(params["MinCount"]) - self.start_fewer)]
            self.instances += made
            # EC2 says nothing of the order: the last launched first here.
            body = "<instancesSet>%s</instancesSet>" % "".join(map(instance_xml, reversed(made)))
        else:
            body = "<reservationSet><item><instancesSet>%s</instancesSet></item></reservationSet>" % "".join(
                map(instance_xml, self.instances))
        return SimpleNamespace(object=ET.fromstring('<Response xmlns="%s">%s</Response>' % (EC2_NAMESPACE, body)))


def instance_xml(instance):
    tags = "".join("<item><key>%s</key><value>%s</value></item>" % pair for pair in instance["tags"].items())
    return ("<item><instanceId>%s</instanceId><instanceState><name>running</name></instanceState>"
            "<amiLaunchIndex>%d</amiLaunchIndex><tagSet>%s</tagSet></item>"
            % (instance["id"], instance["launch"], tags))


def create_workers(ec2, indexes):
    """batch_create's results for worker nodes of cluster demo with these indexes, on `ec2`."""
    from ansible_collections.tfdist.cluster.plugins.module_utils._cloud_ec2 import batch_create
    from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._cluster import node_name, node_tags
    driver = get_driver("ec2", "us-east-1", KEYS)
    size, image = NodeSize("t3.large", "", 0, 0, 0, 0, driver), NodeImage("ami-0123", "", driver)
    requests = [{"name": node_name("demo", "worker", index), "size": size, "image": image,
                 "ex_metadata": dict(node_tags("demo", "worker", index), tfdist_owner="me")} for index in indexes]
    with patch.object(driver.connection, "request", ec2.request):
        return batch_create(driver, lambda: driver, requests), driver


def test_a_batch_is_one_run_instances_per_run_of_indexes_and_its_nodes_are_named_by_index():
    from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import list_cluster_nodes, node_to_dict
    ec2 = Ec2()

    results, driver = create_workers(ec2, [0, 1, 2, 5])

    assert sorted(ec2.calls) == ["RunInstances", "RunInstances"]
    assert [node.name for node in results] == ["demo-worker-0", "demo-worker-1", "demo-worker-2", "demo-worker-5"]
    # What the cloud holds: the run's nodes share its tags and Name, the lone node has its own index and Name.
    assert sorted(tuple(sorted(i["tags"].items())) for i in ec2.instances) == sorted([
        (("Name", "demo-worker-0-2"), ("tfdist_cluster", "demo"), ("tfdist_first_index", "0"),
         ("tfdist_owner", "me"), ("tfdist_role", "worker"))] * 3 + [
        (("Name", "demo-worker-5"), ("tfdist_cluster", "demo"), ("tfdist_index", "5"), ("tfdist_owner", "me"),
         ("tfdist_role", "worker"))])
    # Listed again (the inventory, the next run): each node under its own name and index.
    with patch.object(driver.connection, "request", ec2.request):
        listed = sorted((node_to_dict(node) for node, identity in list_cluster_nodes(driver, "demo")),
                        key=lambda node: node["index"])
    assert [(node["name"], node["index"], node["role"]) for node in listed] == [
        ("demo-worker-0", 0, "worker"), ("demo-worker-1", 1, "worker"), ("demo-worker-2", 2, "worker"),
        ("demo-worker-5", 5, "worker")]
    assert [node["id"] for node in listed] == [node.id for node in results]


def test_each_node_a_run_did_not_get_fails_and_the_other_runs_are_made():
    results, driver = create_workers(Ec2(refuse_index="0"), [0, 1, 2, 5, 6])
    assert [str(result) for result in results[:3]] == ["InsufficientInstanceCapacity"] * 3
    assert [node.name for node in results[3:]] == ["demo-worker-5", "demo-worker-6"]

    results, driver = create_workers(Ec2(start_fewer=1), [0, 1, 2])
    assert [node.name for node in results[:2]] == ["demo-worker-0", "demo-worker-1"]
    assert str(results[2]) == "the cloud started 2 nodes instead of 3"
