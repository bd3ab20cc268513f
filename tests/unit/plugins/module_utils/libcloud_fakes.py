"""The unit tests' fake clouds: libcloud's own driver code run over a fake connection that keeps state the way the
cloud does. The access tests' cluster (CLUSTER, PUBKEY...); the Azure Resource Manager endpoint (AzureCloud), GCE
(FakeGce), OpenStack's neutron and nova (OpenStackCloud) and EC2's security groups and key pairs (Ec2Cloud), for
test__access.py, test__cloud_*_access.py, test__cloud_azure.py, test__cloud_openstack_audit.py and the modules' tests.
"""

import base64
import collections
import copy
import functools
import inspect
import ipaddress
import itertools
import json
import re
import xml.etree.ElementTree as ET
from types import SimpleNamespace
from unittest.mock import create_autospec

from libcloud.common.azure_arm import AzureResourceManagementConnection
from libcloud.common.exceptions import BaseHTTPError, exception_from_message
from libcloud.compute.drivers.azure_arm import AzureNodeDriver
from libcloud.compute.drivers.ec2 import NAMESPACE as EC2_NAMESPACE
from libcloud.compute.drivers.ec2 import EC2Connection, EC2NodeDriver, EC2SecurityGroup
from libcloud.compute.drivers.openstack import (
    OpenStack_2_Connection,
    OpenStack_2_NetworkConnection,
    OpenStack_2_NodeDriver,
)

from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import access_for


def run_real(obj, cls, *names):
    """Let these methods of an autospecced driver or connection run libcloud's own code (on the fake)."""
    for name in names:
        getattr(obj, name).side_effect = functools.partial(getattr(cls, name), obj)


def response(obj=None, status=200):
    """A connection's answer as libcloud's code reads it."""
    return SimpleNamespace(object=obj, status=status)


def sent(data):
    """What the connection would put on the wire: JSON, so anything not JSON-safe fails here."""
    return json.loads(json.dumps(data))


class AzureCloud:
    """The ARM endpoint tfdist talks to through libcloud's AzureNodeDriver: PUT, GET and DELETE of resources by path
    (network security groups, a virtual network with its address space and subnets, NICs), and virtual machines with
    their power state (instance view, start, powerOff, deallocate), keeping state as Azure does. The driver is made
    with create_autospec; the methods a test names with run_real run libcloud's own code over this endpoint."""

    SUBSCRIPTION = "00000000-0000-0000-0000-0000000000aa"
    RESOURCE_GROUP = "rg-tfdist"
    VNET = "vnet-tfdist"
    # The virtual network's address space, the user's own subnet in it, and the /24 a first cluster gets.
    ADDRESS_SPACE = ["10.0.0.0/16"]
    DEFAULT_SUBNET = "10.0.0.0/24"
    PREFIX = "10.0.1.0/24"
    OPTIONS = {"resource_group": RESOURCE_GROUP, "location": "westeurope", "network": VNET}
    # What a GET lists (ARM answers a list of the children of an existing parent).
    COLLECTIONS = ("/networkinterfaces", "/networksecuritygroups", "/subnets")
    # The POST actions on a VM and the power state each leaves (libcloud's stop_node, start_node).
    VM_ACTIONS = {"deallocate": "deallocated", "poweroff": "stopped", "start": "running"}

    def __init__(self, name="tfdist-demo", address_space=None):
        self.resources = {}  # lower-cased path -> resource JSON (ARM ids are case-insensitive)
        self.power = {}  # lower-cased VM path -> its power state (running, stopped, deallocated)
        self.locked = set()  # lower-cased paths a CanNotDelete lock keeps from DELETE (actions still allowed)
        self.writes = []  # (method, path) of every PUT, POST and DELETE, in order
        self.bodies = []  # (method, path, body as sent) of the same
        self.in_use = collections.Counter()  # lower-cased path -> DELETEs to refuse (NICs still on the subnet)
        self.before_put = None  # called with the path of each PUT before it is made (another client at work)
        self.rg_path = "/subscriptions/%s/resourceGroups/%s" % (self.SUBSCRIPTION, self.RESOURCE_GROUP)
        self.vnet_path = self.rg_path + "/providers/Microsoft.Network/virtualNetworks/" + self.VNET
        self.name = name
        self.nsg_path = self.nsg_of(name)
        self.subnet_path = self.subnet_of(name)
        self.resources[self.rg_path.lower()] = {"id": self.rg_path, "name": self.RESOURCE_GROUP, "properties": {}}
        self.resources[self.vnet_path.lower()] = {"id": self.vnet_path, "name": self.VNET, "properties": {
            "addressSpace": {"addressPrefixes": list(address_space or self.ADDRESS_SPACE)}}}
        self._put(self.subnet_of("default"), {"properties": {"addressPrefix": self.DEFAULT_SUBNET}})
        driver = create_autospec(AzureNodeDriver, instance=True)
        driver.type = "azure_arm"
        driver.subscription_id = self.SUBSCRIPTION
        driver.connection = create_autospec(AzureResourceManagementConnection, instance=True)
        driver.connection.request.side_effect = self._request
        driver.connection.driver = driver
        run_real(driver, AzureNodeDriver, "list_nodes", "_to_node", "_fetch_power_state", "ex_get_nic", "_to_nic",
                 "stop_node", "start_node", "destroy_node", "ex_destroy_nic")
        self.driver = driver

    def nsg_of(self, name):
        return self.rg_path + "/providers/Microsoft.Network/networkSecurityGroups/" + name

    def subnet_of(self, name):
        return self.vnet_path + "/subnets/" + name

    def vm_path(self, name):
        return self.rg_path + "/providers/Microsoft.Compute/virtualMachines/" + name

    @staticmethod
    def _parent(path):
        if "/subnets/" in path:
            return path.rsplit("/subnets/", 1)[0]
        return path.split("/providers/", 1)[0]

    def _request(self, action, params=None, data=None, headers=None, method="GET", raw=False):
        assert params and params.get("api-version"), "ARM refuses a request without api-version"
        key = action.lower()
        if method == "GET":
            return self._get(action, key)
        self.writes.append((method, action))
        self.bodies.append((method, action, None if data is None else sent(data)))
        if method == "PUT":
            if self.before_put:
                self.before_put(action)
            if self._parent(key) not in self.resources:
                raise exception_from_message(404, "[ParentResourceNotFound] %s" % self._parent(action))
            if "/subnets/" in key:
                self._refuse_overlap(action, sent(data))
            return response(self._put(action, sent(data)), 201)
        if method == "POST":
            vm, dummy, verb = key.rpartition("/")
            if vm not in self.power or verb not in self.VM_ACTIONS:
                raise exception_from_message(404, "[ResourceNotFound] %s" % action)
            self.power[vm] = self.VM_ACTIONS[verb]
            return response("", 202)
        if method == "DELETE":
            return self._delete(action, key)
        raise AssertionError("unexpected ARM call %s %s" % (method, action))

    def _get(self, action, key):
        if key == "/subscriptions/%s/providers/microsoft.compute/virtualmachines" % self.SUBSCRIPTION.lower():
            return response({"value": [copy.deepcopy(self.resources[vm]) for vm in sorted(self.power)]})
        if key.endswith("/instanceview") and key.rsplit("/", 1)[0] in self.power:
            return response({"statuses": [{"code": "ProvisioningState/succeeded"},
                                          {"code": "PowerState/" + self.power[key.rsplit("/", 1)[0]]}]})
        if key.endswith(self.COLLECTIONS) and self._parent(key) in self.resources:
            return response({"value": [copy.deepcopy(r) for path, r in sorted(self.resources.items())
                                       if path.rsplit("/", 1)[0] == key]})
        if key not in self.resources:
            raise exception_from_message(404, "[ResourceNotFound] The Resource '%s' was not found." % action)
        return response(copy.deepcopy(self.resources[key]))

    def _refuse_overlap(self, action, body):
        """Azure refuses a subnet whose range overlaps another subnet of the virtual network."""
        wanted = ipaddress.ip_network(body["properties"]["addressPrefix"])
        for path, other in self.resources.items():
            if (path.startswith(self.vnet_path.lower() + "/subnets/") and path != action.lower()
                    and wanted.overlaps(ipaddress.ip_network(other["properties"]["addressPrefix"]))):
                raise exception_from_message(400, "[NetcfgSubnetRangesOverlap] Subnet '%s' is not valid because its IP "
                                                  "address range overlaps with that of an existing subnet in virtual "
                                                  "network '%s'." % (action.rsplit("/", 1)[1], self.VNET))

    def _delete(self, action, key):
        if key not in self.resources:
            return response(None, 204)
        if key in self.locked:
            raise exception_from_message(409, "[ScopeLocked] The scope '%s' cannot perform delete operation because "
                                              "following scope(s) are locked: '%s'" % (action, self.rg_path))
        if self.in_use[key] or self.nics_on(action):
            self.in_use[key] = max(self.in_use[key] - 1, 0)
            raise exception_from_message(400, "[InUseSubnetCannotBeDeleted] Subnet %s is in use by a NIC"
                                         % action.rsplit("/", 1)[1])
        attached = [r for r in self.resources.values()
                    if r.get("properties", {}).get("networkSecurityGroup", {}).get("id", "").lower() == key]
        if attached:
            raise exception_from_message(400, "[InUseNetworkSecurityGroupCannotBeDeleted] %s is in use by %s"
                                         % (action, attached[0]["id"]))
        del self.resources[key]
        if key in self.power:  # the VM lets its NICs go
            del self.power[key]
            for nic in self.resources.values():
                if nic.get("properties", {}).get("virtualMachine", {}).get("id", "").lower() == key:
                    del nic["properties"]["virtualMachine"]
        return response(None, 202)

    def _put(self, path, body):
        resource = dict(body, id=path, name=path.rsplit("/", 1)[1])
        properties = dict(body.get("properties", {}), provisioningState="Succeeded")
        nsg_ref = properties.get("networkSecurityGroup", {}).get("id")
        if nsg_ref and nsg_ref.lower() not in self.resources:
            raise exception_from_message(400, "[InvalidResourceReference] %s" % nsg_ref)
        if "securityRules" in properties:
            properties["securityRules"] = [
                dict(rule, id="%s/securityRules/%s" % (path, rule["name"]), etag='W/"1"',
                     properties=self._echo_rule(rule["properties"])) for rule in properties["securityRules"]]
            properties["defaultSecurityRules"] = [{"name": "AllowVnetInBound", "properties": {
                "priority": 65000, "access": "Allow", "direction": "Inbound", "protocol": "*",
                "sourceAddressPrefix": "VirtualNetwork", "destinationPortRange": "*"}}]
        resource["properties"] = properties
        self.resources[path.lower()] = resource
        return copy.deepcopy(resource)

    @staticmethod
    def _echo_rule(properties):
        """A rule as ARM gives it back: each plural field present, empty where the singular one was used."""
        echo = dict(properties, provisioningState="Succeeded")
        for field in ("sourceAddressPrefix", "sourcePortRange", "destinationAddressPrefix", "destinationPortRange"):
            echo.setdefault(field + ("es" if field.endswith("Prefix") else "s"), [])
        return echo

    def get(self, path):
        return self.resources.get(path.lower())

    def nic_path(self, name):
        return self.rg_path + "/providers/Microsoft.Network/networkInterfaces/" + name

    def put_nic(self, name, subnet_path, vm=None):
        """A NIC as libcloud's create_node makes it (untagged, one IP configuration), held by a VM or not."""
        properties = {"ipConfigurations": [{"name": "myip1", "properties": {"subnet": {"id": subnet_path}}}]}
        if vm:
            properties["virtualMachine"] = {"id": vm}
        return self._put(self.nic_path(name), {"location": "westeurope", "tags": {}, "properties": properties})

    def add_vm(self, name, power="running", tags=None, subnet_path=None):
        """A VM as libcloud's create_node makes it (its NIC <name>-nic on the subnet, a managed OS disk), tagged, in
        the power state given: running, stopped (powered off from inside, still allocated) or deallocated."""
        path = self.vm_path(name)
        nic = self.put_nic(name + "-nic", subnet_path or self.subnet_path, vm=path)
        self._put(path, {"location": "westeurope", "tags": dict(tags or {}), "properties": {
            "hardwareProfile": {"vmSize": "Standard_D2s_v5"},
            "storageProfile": {"osDisk": {"name": name, "managedDisk": {
                "id": self.rg_path + "/providers/Microsoft.Compute/disks/" + name}}},
            "networkProfile": {"networkInterfaces": [{"id": nic["id"]}]}}})
        self.power[path.lower()] = power
        return path

    def nics_on(self, subnet_path):
        return [r["name"] for r in self.resources.values() if "ipConfigurations" in r.get("properties", {})
                and subnet_path.lower() in [c["properties"]["subnet"]["id"].lower()
                                            for c in r["properties"]["ipConfigurations"]]]

    def rules(self, nsg_path=None):
        return dict((r["name"], r["properties"])
                    for r in self.get(nsg_path or self.nsg_path)["properties"]["securityRules"])

    def puts(self, path):
        """The bodies of the PUTs of `path`, as sent."""
        return [body for method, action, body in self.bodies if method == "PUT" and action.lower() == path.lower()]


# ---------------------------------------------------------------------------------------------------------
# GCE: a project's networks, subnets, firewall rules and instances behind GCENodeDriver's own code
# (test__cloud_gce_access.py, test__access.py).

GCE_PROJECT = "tfdist-test"
GCE_ZONE = "europe-west4-a"
GCE_REGION = "europe-west4"
GCE_NAME_RE = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")


def gce_link(path, project=GCE_PROJECT):
    """A GCE selfLink: https://www.googleapis.com/compute/v1/projects/<project>/<path>."""
    return "https://www.googleapis.com/compute/v1/projects/%s/%s" % (project, path)


def gce_error(status, reason, message):
    """The exception libcloud's own GCEResponse raises for GCE's error answer (status, errors[0].reason)."""
    from libcloud.compute.drivers.gce import GCEResponse
    answer = GCEResponse.__new__(GCEResponse)
    answer.status, answer.parse_zero_length_body = status, False
    answer.body = json.dumps({"error": {"code": status, "message": message,
                                        "errors": [{"domain": "global", "reason": reason, "message": message}]}})
    try:
        answer.parse_body()
    except Exception as e:  # what libcloud raises is the point
        return e
    raise AssertionError("libcloud took an error answer for a success")


class FakeGce:
    """GCE's /global/networks, /regions/*/subnetworks, /global/firewalls and one zone's instances, keeping state and
    refusing what GCE refuses (a taken name, a subnet range that overlaps another of its network, a network or subnet
    still in use, an instance on a custom network without a subnet, a rule moved to another network). The driver is
    made with create_autospec from GCENodeDriver; the methods tfdist goes through run libcloud's own code.

    `requests`: (method, path, body) of every call that changes something, in order; `in_use`: path -> DELETEs to
    refuse as GCE does while it is still deleting the nodes that use the resource."""

    def __init__(self):
        from libcloud.compute.drivers.gce import GCEConnection, GCENodeDriver, GCERegion, GCEZone
        self.networks, self.subnets, self.firewalls, self.instances = {}, {}, {}, {}  # subnets: (region, name) ->
        self.requests = []
        self.in_use = collections.Counter()
        self._ids = itertools.count(5001)
        driver = create_autospec(GCENodeDriver, instance=True)
        driver.type, driver.project = "gce", GCE_PROJECT
        zone = GCEZone(next(self._ids), GCE_ZONE, "UP", [], None, driver,
                       extra={"selfLink": self.link("zones/" + GCE_ZONE)})
        region = GCERegion(next(self._ids), GCE_REGION, "UP", [zone], [], None, driver,
                           extra={"selfLink": self.link("regions/" + GCE_REGION)})
        driver.zone, driver.region, driver.zone_dict, driver.region_list = zone, region, {GCE_ZONE: zone}, [region]
        # What autospec makes of class attributes is a mock: the real tables.
        driver.KIND_METHOD_MAP, driver.AUTH_URL = GCENodeDriver.KIND_METHOD_MAP, GCENodeDriver.AUTH_URL
        driver.SA_SCOPES_MAP = GCENodeDriver.SA_SCOPES_MAP
        driver.connection = create_autospec(GCEConnection, instance=True)
        driver.connection.request_path = "/compute/v1/projects/%s" % GCE_PROJECT
        driver.connection.request.side_effect = self._request
        driver.connection.async_request.side_effect = self._request  # GCE's operation is done when it answers
        run_real(driver.connection, GCEConnection, "paginated_request", "request_aggregated_items",
                 "_merge_response_items")
        run_real(driver, GCENodeDriver,
                 "ex_get_network", "ex_create_network", "ex_destroy_network", "ex_list_networks", "_to_network",
                 "ex_get_subnetwork", "ex_create_subnetwork", "ex_destroy_subnetwork", "_to_subnetwork",
                 "ex_list_firewalls", "ex_get_firewall", "ex_create_firewall", "ex_destroy_firewall", "_to_firewall",
                 "_to_region", "ex_get_zone", "_get_object_by_kind", "_get_components_from_path", "_set_region",
                 "_set_zone", "_get_region_from_zone", "_verify_zone_is_set",
                 "create_node", "_create_node_req", "_create_instance_properties", "_build_network_gce_struct",
                 "_build_service_accounts_gce_list", "_build_service_account_gce_struct",
                 "_build_scheduling_gce_struct", "_format_metadata", "_get_selflink_or_name", "ex_get_disktype",
                 "_to_disktype", "destroy_node")
        self.driver = driver

    @staticmethod
    def link(path):
        return gce_link(path)

    # -- what the test puts there, as GCE keeps it
    def add_network(self, name, auto=False):
        self.networks[name] = {"kind": "compute#network", "id": str(next(self._ids)), "name": name,
                               "autoCreateSubnetworks": auto, "selfLink": self.link("global/networks/" + name)}

    def add_subnet(self, name, network, cidr, region=GCE_REGION):
        self._store_subnet(region, {"name": name, "network": self.link("global/networks/" + network),
                                    "ipCidrRange": cidr, "region": self.link("regions/" + region)})

    def add_rule(self, name, network, **fields):
        self._store_rule(dict({"name": name, "network": self.link("global/networks/" + network)}, **fields))

    def node(self, name):
        """A libcloud Node of an instance, as destroy_node takes it."""
        from libcloud.compute.base import Node
        return Node(self.instances[name]["id"], name, "running", [], [], self.driver,
                    extra={"zone": self.driver.zone})

    # -- what reaches an instance
    def admits(self, instance, port, source_ip, source_tags=()):
        """Whether GCE lets TCP `port` from `source_ip` (an instance there carrying `source_tags`) into `instance`: its
        network's ingress rules that aim at it, the lowest priority number first, a deny before an allow of the same
        number; nothing matches, nothing comes in (GCE's implied rule)."""
        import ipaddress
        target = self.instances[instance]
        network, tags = target["networkInterfaces"][0]["network"], set(target.get("tags", {}).get("items", []))

        def matches(rule):
            if rule["network"] != network or rule.get("disabled") or rule.get("direction", "INGRESS") != "INGRESS":
                return False
            if rule.get("targetTags") and not tags & set(rule["targetTags"]):
                return False
            by_range = any(ipaddress.ip_address(source_ip) in ipaddress.ip_network(cidr)
                           for cidr in rule.get("sourceRanges", []))
            if not (by_range or set(source_tags) & set(rule.get("sourceTags", []))):
                return False
            return any(entry["IPProtocol"] in ("tcp", "all") and self._port_in(port, entry.get("ports"))
                       for entry in rule.get("allowed", rule.get("denied", [])))

        for rule in sorted(filter(matches, self.firewalls.values()), key=lambda r: (r["priority"], "allowed" in r)):
            return "allowed" in rule
        return False

    @staticmethod
    def _port_in(port, ports):
        if not ports:
            return True
        for text in ports:
            low, dummy, high = text.partition("-")
            if int(low) <= port <= int(high or low):
                return True
        return False

    # -- the API
    def _request(self, action, params=None, data=None, headers=None, method="GET", context=None):
        path = action.replace(self.link(""), "/")  # a full link, as libcloud's connection takes it too
        body = sent(data) if data is not None else None
        if method != "GET":
            self.requests.append((method, path, body))
            if self.in_use[path] > 0:
                self.in_use[path] -= 1
                raise gce_error(400, "resourceInUseByAnotherResource",
                                "The resource '%s' is already being used by an instance being deleted" % path)
        parts = path.strip("/").split("/")
        if parts[0] == "global" and parts[1] == "networks":
            return self._networks(method, parts[2:], body)
        if parts[0] == "global" and parts[1] == "firewalls":
            return self._firewalls(method, parts[2:], body)
        if path == "/aggregated/subnetworks":
            items = {}
            for (region, dummy), subnet in sorted(self.subnets.items()):
                items.setdefault("regions/" + region, {"subnetworks": []})["subnetworks"].append(copy.deepcopy(subnet))
            return response({"items": items})
        if parts[0] == "regions" and len(parts) == 2 and method == "GET":
            return response({"kind": "compute#region", "id": "1", "name": parts[1], "status": "UP",
                             "zones": [self.link("zones/" + GCE_ZONE)], "selfLink": self.link(path.strip("/"))})
        if parts[0] == "regions" and parts[2] == "subnetworks":
            return self._subnetworks(method, parts[1], parts[3:], body)
        if parts[:3] == ["zones", GCE_ZONE, "diskTypes"] and method == "GET":
            return response({"kind": "compute#diskType", "id": "1", "name": parts[3],
                             "zone": self.link("zones/" + GCE_ZONE), "selfLink": self.link(path.strip("/")),
                             "validDiskSize": "10GB-65536GB"})
        if parts[:3] == ["zones", GCE_ZONE, "instances"]:
            return self._instances(method, parts[3:], body)
        raise AssertionError("unexpected GCE call %s %s" % (method, path))

    def _missing(self, what):
        return gce_error(404, "notFound", "The resource '%s' was not found" % what)

    def _used(self, what, user):
        return gce_error(400, "resourceInUseByAnotherResource",
                         "The %s resource '%s' is already being used by '%s'" % (what[0], what[1], user))

    def _check_name(self, name):
        if not GCE_NAME_RE.match(name):
            raise gce_error(400, "invalid", "Invalid value for field 'resource.name': '%s'" % name)

    def _networks(self, method, rest, body):
        if not rest and method == "GET":
            return response({"items": copy.deepcopy(list(self.networks.values()))})
        if not rest and method == "POST":
            self._check_name(body["name"])
            if body["name"] in self.networks:
                raise gce_error(409, "alreadyExists", "The resource 'networks/%s' already exists" % body["name"])
            assert "autoCreateSubnetworks" in body, "a legacy network (GCE no longer makes them)"
            self.add_network(body["name"], auto=body["autoCreateSubnetworks"])
            self.networks[body["name"]]["description"] = body.get("description")
            return response({"status": "DONE"})
        name = rest[0]
        if name not in self.networks:
            raise self._missing("global/networks/" + name)
        link = self.networks[name]["selfLink"]
        if method == "GET":
            network = copy.deepcopy(self.networks[name])
            network["subnetworks"] = [s["selfLink"] for s in self.subnets.values() if s["network"] == link]
            return response(network)
        if method == "DELETE":
            users = ([s["selfLink"] for s in self.subnets.values() if s["network"] == link]
                     + [f["selfLink"] for f in self.firewalls.values() if f["network"] == link]
                     + [i["selfLink"] for i in self.instances.values()
                        if i["networkInterfaces"][0]["network"] == link])
            if users:
                raise self._used(("network", link), users[0])
            del self.networks[name]
            return response({"status": "DONE"})
        raise AssertionError("unexpected GCE call %s networks/%s" % (method, name))

    def _store_subnet(self, region, body):
        import ipaddress
        self._check_name(body["name"])
        if (region, body["name"]) in self.subnets:
            raise gce_error(409, "alreadyExists", "The resource 'subnetworks/%s' already exists" % body["name"])
        assert body["region"] == self.link("regions/" + region), body["region"]
        assert body["network"] in [n["selfLink"] for n in self.networks.values()], body["network"]
        cidr = ipaddress.ip_network(body["ipCidrRange"])  # strict: a host address with a prefix is refused
        assert cidr.is_private, cidr
        for other in self.subnets.values():
            if other["network"] == body["network"] and cidr.overlaps(ipaddress.ip_network(other["ipCidrRange"])):
                raise gce_error(400, "invalid", "Invalid IPCidrRange: %s conflicts with existing subnetwork '%s'"
                                % (cidr, other["name"]))
        subnet = dict((key, value) for key, value in body.items() if value is not None)
        subnet.update(kind="compute#subnetwork", id=str(next(self._ids)), gatewayAddress=str(cidr[1]),
                      selfLink=self.link("regions/%s/subnetworks/%s" % (region, body["name"])))
        self.subnets[(region, body["name"])] = subnet

    def _subnetworks(self, method, region, rest, body):
        if not rest and method == "POST":
            self._store_subnet(region, body)
            return response({"status": "DONE"})
        key = (region, rest[0])
        if key not in self.subnets:
            raise self._missing("regions/%s/subnetworks/%s" % key)
        if method == "GET":
            return response(copy.deepcopy(self.subnets[key]))
        if method == "DELETE":
            link = self.subnets[key]["selfLink"]
            users = [i["selfLink"] for i in self.instances.values()
                     if i["networkInterfaces"][0].get("subnetwork") == link]
            if users:
                raise self._used(("subnetwork", link), users[0])
            del self.subnets[key]
            return response({"status": "DONE"})
        raise AssertionError("unexpected GCE call %s subnetworks/%s" % (method, rest))

    def _store_rule(self, body, rule_id=None):
        self._check_name(body["name"])
        assert body["network"] in [n["selfLink"] for n in self.networks.values()], body["network"]
        assert ("allowed" in body) != ("denied" in body), "a rule allows or denies: %s" % body
        assert 0 <= body.get("priority", 1000) <= 65535
        rule = dict((key, value) for key, value in body.items() if value is not None)
        rule.setdefault("direction", "INGRESS")
        rule.setdefault("priority", 1000)  # what GCE gives a rule (a PUT too) that names none
        rule.update(kind="compute#firewall", id=rule_id or str(next(self._ids)), disabled=rule.get("disabled", False),
                    selfLink=self.link("global/firewalls/" + body["name"]))
        self.firewalls[body["name"]] = rule

    def _firewalls(self, method, rest, body):
        if not rest and method == "GET":
            items = copy.deepcopy(list(self.firewalls.values()))
            return response({"items": items} if items else {})  # GCE leaves `items` out of an empty list
        if not rest and method == "POST":
            if body["name"] in self.firewalls:
                raise gce_error(409, "alreadyExists", "The resource 'firewalls/%s' already exists" % body["name"])
            self._store_rule(body)
            return response({"status": "DONE"})
        name = rest[0]
        if name not in self.firewalls:
            raise self._missing("global/firewalls/" + name)
        if method == "GET":
            return response(copy.deepcopy(self.firewalls[name]))
        if method == "PUT":  # replaces the whole rule: what the body leaves out is gone
            if body.get("network") != self.firewalls[name]["network"]:
                raise gce_error(400, "invalid", "Invalid value for field 'resource.network': cannot be changed")
            self._store_rule(body, self.firewalls[name]["id"])
            return response({"status": "DONE"})
        if method == "DELETE":
            del self.firewalls[name]
            return response({"status": "DONE"})
        raise AssertionError("unexpected GCE call %s firewalls/%s" % (method, name))

    def _instances(self, method, rest, body):
        if not rest and method == "POST":
            self._check_name(body["name"])
            nic = body["networkInterfaces"][0]
            network = next(n for n in self.networks.values() if n["selfLink"] == nic["network"])
            subnet = [s for s in self.subnets.values() if s["selfLink"] == nic.get("subnetwork")]
            if not network["autoCreateSubnetworks"] and not subnet:
                raise gce_error(400, "invalid", "Invalid value for field 'resource.networkInterfaces[0].subnetwork'")
            assert not subnet or subnet[0]["network"] == network["selfLink"], "a subnet of another network"
            self.instances[body["name"]] = dict(body, id=str(next(self._ids)), status="RUNNING",
                                                selfLink=self.link("zones/%s/instances/%s" % (GCE_ZONE, body["name"])))
            return response({"status": "DONE"})
        if method == "DELETE" and rest[0] in self.instances:
            del self.instances[rest[0]]
            return response({"status": "DONE"})
        raise AssertionError("unexpected GCE call %s instances/%s" % (method, rest))


# ---------------------------------------------------------------------------------------------------------
# The cluster the access tests make on each fake cloud (test__access.py, test__cloud_*_access.py).

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
# OpenStack: neutron security groups and nova key pairs behind OpenStack_2_NodeDriver's own code
# (test__cloud_openstack_access.py, test__cloud_openstack_audit.py, test__access.py).


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


def openstack_access(cloud, cluster=CLUSTER, ssh=(CONTROLLER,), ports=INTERNAL, public=()):
    return access_for(cloud.driver, cluster, list(ssh), list(ports), "ubuntu", {}, list(public))


# ---------------------------------------------------------------------------------------------------------
# EC2: security groups behind EC2NodeDriver's methods and the query API _access calls itself
# (test__cloud_ec2_access.py, test__access.py, modules/test_libcloud_access.py; the emulator covers EC2 end to end).


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


def ec2_access(cloud, cluster=CLUSTER, ssh=(CONTROLLER,), ports=INTERNAL, public=(), options=None):
    return access_for(cloud.driver, cluster, list(ssh), list(ports), "ec2-user", options or {}, list(public))
