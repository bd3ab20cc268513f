"""The leak audit on OpenStack lists a cluster's ports and the floating IPs on them (_cloud_openstack.OpenStackAccess
.found through _audit.find), run through libcloud's own OpenStack_2_NodeDriver code over the fake neutron of
libcloud_fakes.py, extended here with /v2.0/ports and /v2.0/floatingips as neutron answers them."""

import pytest

from libcloud.compute.drivers.openstack import OpenStack_2_NodeDriver

from ansible_collections.tfdist.cluster.plugins.module_utils._access import access_name
from ansible_collections.tfdist.cluster.plugins.module_utils._audit import find, report
from ansible_collections.tfdist.cluster.tests.unit.plugins.module_utils.libcloud_fakes import (
    OpenStackCloud,
    response,
    run_real,
)


class NeutronWithPorts(OpenStackCloud):
    """OpenStackCloud's nova and neutron, plus neutron's ports and floating IPs (read-only, as the audit reads)."""

    def __init__(self):
        super().__init__()
        self.ports = []  # neutron port JSON
        self.floating_ips = []  # neutron floatingip JSON
        run_real(self.driver, OpenStack_2_NodeDriver, "ex_list_ports", "_to_port", "ex_list_floating_ips",
                 "_to_floating_ips", "_to_floating_ip")
        self.driver._paginated_request.side_effect = OpenStack_2_NodeDriver._paginated_request  # a staticmethod
        self.driver.list_nodes.return_value = []
        self.driver.list_volumes.return_value = []
        neutron = self.driver.network_connection.request.side_effect

        def request(action, params=None, data="", headers=None, method="GET", raw=False):
            if (method, action) == ("GET", "/v2.0/ports"):
                return response({"ports": [dict(port) for port in self.ports]})
            if (method, action) == ("GET", "/v2.0/floatingips"):
                return response({"floatingips": [dict(ip) for ip in self.floating_ips]})
            return neutron(action, params, data, headers, method, raw)

        self.driver.network_connection.request.side_effect = request

    def add_port(self, port_id, groups, server="", name=""):
        self.ports.append({"id": port_id, "name": name, "status": "ACTIVE" if server else "DOWN",
                           "device_id": server, "device_owner": "compute:nova" if server else "",
                           "network_id": "net-1", "security_groups": [self.group(g)["id"] for g in groups],
                           "fixed_ips": [], "mac_address": "fa:16:3e:00:00:01", "admin_state_up": True,
                           "tenant_id": self.TENANT})

    def add_floating_ip(self, ip_id, address, port_id=None):
        self.floating_ips.append({"id": ip_id, "floating_ip_address": address, "port_id": port_id,
                                  "floating_network_id": "public", "status": "ACTIVE" if port_id else "DOWN",
                                  "tenant_id": self.TENANT})


@pytest.fixture
def cloud():
    cloud = NeutronWithPorts()
    cloud.add_group(access_name("demo"))
    cloud.add_group(access_name("other"))
    cloud.add_group("web")
    return cloud


def test_the_ports_in_a_clusters_group_and_the_floating_ips_on_them_are_the_clusters(cloud):
    cloud.add_port("port-1", [access_name("demo")], server="server-1", name="demo-worker-0")
    cloud.add_port("port-2", [access_name("demo"), "web"])  # left by a node that is gone
    cloud.add_port("port-3", ["web"], server="server-9")
    cloud.add_port("port-4", [access_name("other")], server="server-5")
    cloud.add_floating_ip("fip-1", "203.0.113.10", "port-1")
    cloud.add_floating_ip("fip-2", "203.0.113.11", "port-3")
    cloud.add_floating_ip("fip-3", "203.0.113.12")

    found, unchecked = find(cloud.driver, ["demo"])

    assert unchecked == []
    assert [(r.kind, r.id, r.name) for r in found] == [
        ("network interface", "port-1", "demo-worker-0"), ("network interface", "port-2", "port-2"),
        ("floating IP", "fip-1", "203.0.113.10"),
        ("security group", cloud.group(access_name("demo"))["id"], access_name("demo"))]
    assert report(found) == ["demo: network interface demo-worker-0 (port-1), network interface port-2, "
                             "floating IP 203.0.113.10 (fip-1), security group %s (%s)"
                             % (access_name("demo"), cloud.group(access_name("demo"))["id"])]


def test_every_clusters_ports_are_listed_by_their_cluster(cloud):
    cloud.add_port("port-1", [access_name("demo")], server="server-1")
    cloud.add_port("port-4", [access_name("other")], server="server-5")
    cloud.add_floating_ip("fip-4", "203.0.113.14", "port-4")

    found, dummy = find(cloud.driver)

    assert sorted((r.cluster, r.kind, r.id) for r in found if r.kind != "security group") == [
        ("demo", "network interface", "port-1"), ("other", "floating IP", "fip-4"),
        ("other", "network interface", "port-4")]
