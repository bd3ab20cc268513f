"""What the unit tests' fake clouds share: libcloud's own driver code run over a fake connection (test__access.py,
test__cloud_gce_images.py, test__cloud_azure*.py), and the fake Azure Resource Manager endpoint (AzureCloud)."""

import collections
import copy
import functools
import ipaddress
import itertools
import json
import re
from types import SimpleNamespace
from unittest.mock import create_autospec

from libcloud.common.azure_arm import AzureResourceManagementConnection
from libcloud.common.exceptions import exception_from_message
from libcloud.compute.drivers.azure_arm import AzureNodeDriver


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
