"""What the unit tests' fake clouds share: libcloud's own driver code run over a fake connection (test__access.py,
test__cloud_gce_images.py, test__cloud_azure*.py), and the fake Azure Resource Manager endpoint (AzureCloud)."""

import collections
import copy
import functools
import ipaddress
import json
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
