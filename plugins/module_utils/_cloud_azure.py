# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

"""Microsoft Azure Resource Manager (libcloud provider `azure_arm`): service-principal credentials, location,
tags, marketplace image URNs, the cluster's network security group on a subnet of its own (a free /24 of the virtual
network, with the nodes' NICs, which destroy removes with their VMs, or alone where a VM was never made), and the
deallocation of nodes powered off from inside, which Azure keeps allocated and billed.

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import ipaddress
import re

from ansible_collections.tfdist.cluster.plugins.module_utils._access import ClusterAccess, access_parts, port_text, retry_while_in_use
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._cluster import NODE_NAME_RE, TAG_CLUSTER, TAG_OWNER
from ansible_collections.tfdist.cluster.plugins.module_utils._provider import CloudProvider, RadlImages, Refusal, TfdistCloudError
from ansible_collections.tfdist.cluster.plugins.module_utils._sizes import SizeFacts, to_int

# Constructor argument -> (credentials key, environment variables, required).
CREDENTIALS = {
    'tenant_id': ('tenant_id', ('AZURE_TENANT_ID',), True),
    'subscription_id': ('subscription_id', ('AZURE_SUBSCRIPTION_ID',), True),
    'key': ('client_id', ('AZURE_CLIENT_ID',), True),
    'secret': ('secret', ('AZURE_SECRET',), True),
}


def list_images(driver, wanted):
    """Marketplace images given as publisher:offer:sku:version URNs, made without a call (listing them takes many)."""
    from libcloud.compute.drivers.azure_arm import AzureImage
    location = getattr(driver.default_location, 'id', None)
    return [AzureImage(*reversed(value.split(':')), location=location, driver=driver)
            for value in wanted if len(str(value).split(':')) == 4]


# Each cluster's subnet: a /24 (251 addresses for nodes: Azure keeps five of each subnet).
SUBNET_PREFIX_LENGTH = 24
# Tries at a free /24 while clusters made at the same moment take the one chosen.
SUBNET_TRIES = 3


def free_prefix(address_space, taken):
    """The first /24 of the virtual network's address space (its prefixes, in order) that overlaps none of the
    `taken` prefixes (those of its subnets), as text like '10.0.1.0/24'; None when there is none. IPv6 prefixes and
    IPv4 prefixes smaller than a /24 hold none."""
    used = sorted((int(net.network_address), int(net.broadcast_address))
                  for net in (ipaddress.ip_network(prefix, strict=False) for prefix in taken) if net.version == 4)
    size = 2 ** (32 - SUBNET_PREFIX_LENGTH)
    for space in (ipaddress.ip_network(prefix, strict=False) for prefix in address_space):
        if space.version != 4 or space.prefixlen > SUBNET_PREFIX_LENGTH:
            continue
        start, end = int(space.network_address), int(space.broadcast_address)
        while start + size - 1 <= end:
            clash = next((high for low, high in used if low < start + size and high >= start), None)
            if clash is None:
                return str(ipaddress.ip_network((start, SUBNET_PREFIX_LENGTH)))
            start = (clash // size + 1) * size  # the first /24 past the subnet in the way
    return None


def subnet_prefixes(subnet):
    """The address prefixes of a subnet (ARM gives one as addressPrefix, or several as addressPrefixes)."""
    properties = (subnet or {}).get('properties') or {}
    if properties.get('addressPrefix'):
        return [properties['addressPrefix']]
    return list(properties.get('addressPrefixes') or [])


def deallocate_stopped(driver, nodes, check_mode=False):
    """The nodes among `nodes` that are powered off but still allocated, each deallocated unless check_mode.

    A VM shut down from inside (tfdist's idle guard powers a node off once its job is over) stays allocated: Azure
    bills its compute as if it ran until it is deallocated; its disks are billed in both states. libcloud's driver
    reads Azure's instance view: PowerState/stopped is its `paused`, PowerState/deallocated its `stopped`.
    """
    from libcloud.compute.types import NodeState
    stopped = [node for node in nodes if node.state == NodeState.PAUSED]
    if not check_mode:
        for node in stopped:
            driver.stop_node(node, ex_deallocate=True)
    return stopped


def nic_subnet(ip_configuration):
    """The lower-cased id of the subnet a NIC's IP configuration is on ('' when none)."""
    return str(((ip_configuration.get('properties') or {}).get('subnet') or {}).get('id') or '').lower()


class AzureAccess(ClusterAccess):
    """A network security group tfdist-<cluster>, tagged, on a subnet of its own in the given virtual network.

    Azure lets the whole virtual network in by default (AllowVnetInBound), so the group denies it
    explicitly and lets in only the cluster's own subnet. The key goes in at node creation.
    """

    NSG_API = '2023-09-01'

    def _nsg_path(self, name=None):
        return ('/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/networkSecurityGroups/%s'
                % (self.driver.subscription_id, self._option('resource_group'), name or self.name))

    def _nics_path(self):
        return ('/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/networkInterfaces'
                % (self.driver.subscription_id, self._option('resource_group')))

    def _network_path(self):
        return ('/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/virtualNetworks/%s'
                % (self.driver.subscription_id, self._option('resource_group'), self._option('network')))

    def _subnet_path(self, name=None):
        return '%s/subnets/%s' % (self._network_path(), name or self.name)

    def _option(self, key):
        if not self.options.get(key):
            raise TfdistCloudError('options.%s is required on azure_arm (the profile\'s libcloud_access_options)' % key)
        return self.options[key]

    def _get(self, path):
        from libcloud.common.exceptions import BaseHTTPError
        try:
            return self.driver.connection.request(path, params={'api-version': self.NSG_API}).object
        except BaseHTTPError as e:
            if getattr(e, 'code', None) == 404:
                return None
            raise

    def _put(self, path, body):
        self.driver.connection.request(path, params={'api-version': self.NSG_API}, data=body, method='PUT')

    def _rules(self, prefix):
        def rule(name, priority, access, **fields):
            properties = {'priority': priority, 'direction': 'Inbound', 'access': access,
                          'protocol': 'Tcp' if access == 'Allow' else '*', 'sourcePortRange': '*',
                          'destinationAddressPrefix': '*'}
            properties.update(fields)
            return {'name': name, 'properties': properties}
        return [rule('tfdist-ssh', 100, 'Allow', sourceAddressPrefixes=self.ssh_cidrs,
                     destinationPortRanges=[port_text(*r) for r in self.public]),
                rule('tfdist-internal', 110, 'Allow', sourceAddressPrefixes=[prefix],
                     destinationPortRanges=[port_text(*r) for r in self.ports]),
                # ARM takes a service tag or '*' only in the singular fields.
                rule('tfdist-deny-vnet', 4000, 'Deny', sourceAddressPrefix='VirtualNetwork', destinationPortRange='*')]

    @staticmethod
    def _rule_view(rules):
        keys = ('priority', 'direction', 'access', 'protocol', 'sourceAddressPrefix', 'sourceAddressPrefixes',
                'destinationPortRange', 'destinationPortRanges')
        # ARM answers an unused field as '' or [] (or leaves it out): all the same here.
        return sorted((r['name'], tuple((k, str(r['properties'].get(k) or None)) for k in keys)) for r in rules or [])

    def _subnet_prefix(self, subnet):
        """The cluster's /24: that of its subnet where it has one (a re-run keeps it), else the first free one of the
        virtual network's address space."""
        if subnet_prefixes(subnet):
            return subnet_prefixes(subnet)[0]
        network = self._get(self._network_path())
        if network is None:
            raise TfdistCloudError('options.network: no virtual network %s in resource group %s'
                                   % (self._option('network'), self._option('resource_group')))
        space = ((network.get('properties') or {}).get('addressSpace') or {}).get('addressPrefixes') or []
        subnets = (self._get(self._network_path() + '/subnets') or {}).get('value') or []
        taken = [prefix for other in subnets for prefix in subnet_prefixes(other)]
        prefix = free_prefix(space, taken)
        if prefix is None:
            raise TfdistCloudError('options.network: the virtual network %s has no free /%d for cluster %s (its '
                                   'address space %s; its subnets take %s): add an address space to it or remove a '
                                   'subnet'
                                   % (self._option('network'), SUBNET_PREFIX_LENGTH, self.cluster,
                                      ', '.join(space) or 'is empty', ', '.join(taken) or 'none'))
        return prefix

    def present(self, public_key, check_mode=False):
        from libcloud.common.exceptions import BaseHTTPError
        for key in ('location', 'resource_group', 'network'):
            self._option(key)
        if 'subnet_prefix' in self.options:
            raise TfdistCloudError('options.subnet_prefix: tfdist now gives each cluster a free /%d of options.network '
                                   'itself; remove subnet_prefix from libcloud_access_options' % SUBNET_PREFIX_LENGTH)
        for attempt in range(1, SUBNET_TRIES + 1):
            done = len(self.changes)
            try:
                self._converge(check_mode)
                break
            except BaseHTTPError as e:
                # Another cluster made at the same moment took the same /24: Azure refuses the second subnet.
                if 'overlap' not in str(e).lower() or attempt == SUBNET_TRIES:
                    raise
                del self.changes[done:]
        facts = self.facts(self._nsg_path())
        facts['public_key'] = public_key
        return facts

    def _converge(self, check_mode):
        """Make the group and the subnet match (the subnet on its /24, behind the group)."""
        subnet = self._get(self._subnet_path())
        prefix = self._subnet_prefix(subnet)
        nsg = self._get(self._nsg_path())
        wanted = self._rules(prefix)
        tags = {TAG_CLUSTER: self.cluster}
        if self.owner:
            tags[TAG_OWNER] = self.owner
        if (nsg is None or self._rule_view(nsg.get('properties', {}).get('securityRules')) != self._rule_view(wanted)
                or nsg.get('tags') != tags):
            self.changed('network security group %s' % self.name)
            if not check_mode:
                self._put(self._nsg_path(), {'location': self._option('location'), 'tags': tags,
                                             'properties': {'securityRules': wanted}})
        properties = (subnet or {}).get('properties', {})
        behind = str((properties.get('networkSecurityGroup') or {}).get('id', '')).lower() == self._nsg_path().lower()
        if subnet is None or not behind:
            self.changed('subnet %s (%s)' % (self.name, prefix))
            if not check_mode:
                # Subnets carry no tags: the name tfdist-<cluster>[-<owner's part>] says whose it is.
                self._put(self._subnet_path(), {'properties': {
                    'addressPrefix': prefix, 'networkSecurityGroup': {'id': self._nsg_path()}}})

    def _loose_nics(self, name):
        """The NICs on the subnet `name` that no VM holds: libcloud makes a node's NIC before its VM, so a create
        that failed leaves one, and it keeps the subnet in use for good."""
        subnet = self._subnet_path(name).lower()
        return [nic for nic in (self._get(self._nics_path()) or {}).get('value') or []
                if not (nic.get('properties') or {}).get('virtualMachine')
                and subnet in [nic_subnet(config) for config in (nic.get('properties') or {}).get('ipConfigurations') or []]]

    def absent(self, check_mode=False):
        from libcloud.common.exceptions import BaseHTTPError
        # This controller's: its own names, and the unmarked ones of a cluster made before owners were marked where
        # that is this controller's too (_access.ClusterAccess.owns).
        names = list(dict.fromkeys([self.name] + ([self.unmarked_name] if self.owns(None) else [])))
        doomed = [('network interface %s' % nic.get('name'), nic.get('id')) for name in names
                  for nic in self._loose_nics(name)]
        for name in names:
            doomed += [('subnet %s' % name, self._subnet_path(name)),
                       ('network security group %s' % name, self._nsg_path(name))]
        for what, path in doomed:
            if self._get(path) is None:
                continue
            self.changed(what)
            if not check_mode:
                def delete(path=path):
                    try:
                        self.driver.connection.request(path, params={'api-version': self.NSG_API}, method='DELETE')
                    except BaseHTTPError as e:
                        raise RuntimeError('%s' % e)
                    return True
                retry_while_in_use(delete, what)

    @classmethod
    def found(cls, driver, options):
        """Every cluster's network security groups (tagged tfdist_cluster, or named tfdist-<cluster>[-<owner's part>])
        in the resource group, and their subnets (so named) in the virtual network: options resource_group and
        network. The owner's mark is the group's tfdist_owner tag, else the owner's part of the name; a NIC has its
        subnet's."""
        access = cls(driver, 'audit', [], [], options=options)
        found = []
        groups = access._get(access._nsg_path().rpartition('/')[0]) or {}
        for group in groups.get('value') or []:
            tags = group.get('tags') or {}
            cluster, part = access_parts(group.get('name'))
            if tags.get(TAG_CLUSTER) or cluster:
                found.append(('network security group', group.get('id'), group.get('name'),
                              tags.get(TAG_CLUSTER) or cluster, tags.get(TAG_OWNER) or part))
        subnets = access._get(access._subnet_path().rpartition('/')[0]) or {}
        for subnet in subnets.get('value') or []:
            cluster, part = access_parts(subnet.get('name'))
            if cluster:
                found.append(('subnet', subnet.get('id'), subnet.get('name'), cluster, part))
        # A node's NIC (<node>-nic, on the cluster's subnet) outlives it when its VM was never made or destroy stopped.
        for nic in (access._get(access._nics_path()) or {}).get('value') or []:
            named = NODE_NAME_RE.match(str(nic.get('name') or '').rpartition('-nic')[0])
            on = [access_parts(nic_subnet(config).rpartition('/')[2])
                  for config in (nic.get('properties') or {}).get('ipConfigurations') or []]
            cluster, part = next((parts for parts in on if parts[0]), (named.group('cluster') if named else None, None))
            if cluster:
                found.append(('network interface', nic.get('id'), nic.get('name'), cluster, part))
        return found

    @staticmethod
    def node_kwargs(driver, access):
        from libcloud.compute.base import NodeAuthSSHKey
        options = access['options']
        # libcloud builds the subnet id from the virtual network's name (create_node's ex_network is a str).
        return {'auth': NodeAuthSSHKey(access['public_key']), 'ex_user_name': access['ssh_user'],
                'ex_resource_group': options['resource_group'], 'ex_network': options['network'],
                'ex_subnet': access['name'],
                'ex_use_managed_disks': True}


# Standard_<family><vCPUs><additive features>_<version>: the feature p is an Arm CPU (Standard_D4ps_v5).
_SIZE_NAME_RE = re.compile(r'^Standard_[A-Z]+\d+(?:-\d+)?([a-z]*)(?:_|$)')


def size_facts(size):
    """vCPUs (extra numberOfCores) and architecture of a VM size. Azure's size list says nothing of GPUs: the
    N series (NC, ND, NV) have some, how many is unknown (None); every other series has none."""
    extra = size.extra or {}
    name = str(size.name or size.id)
    gpus = None if name.startswith('Standard_N') else 0
    match = _SIZE_NAME_RE.match(name)
    arch = 'arm64' if match and 'p' in match.group(1) else 'x86_64'
    return SizeFacts(to_int(extra.get('numberOfCores')), gpus, arch)


def refusal(error, text, attempt):
    """The Refusal of an Azure Resource Manager error by its code ('[Code] message', as libcloud writes it); None for a
    code this does not know."""
    match = re.match(r'\[(\w+)\] ', text)
    code = match.group(1) if match else ''
    # Azure AD's sign-in errors (a wrong or expired client secret) come from its token endpoint as AADSTS<number>.
    if re.match(r'AADSTS\d+', text):
        return Refusal('credentials', text, '')
    # "Operation could not be completed as it results in exceeding approved standardNCFamily Cores quota. ..."
    # (https://learn.microsoft.com/azure/azure-resource-manager/templates/error-resource-quota)
    if code == 'QuotaExceeded' or (code == 'OperationNotAllowed' and 'quota' in text.lower()):
        family = re.search(r'approved (\w+) Cores quota', text)
        what = 'the %s vCPU quota' % family.group(1) if family else 'a vCPU quota'
        return Refusal('quota', "%s of your subscription is used up (%s)" % (what, code),
                       'ask for a quota increase (Azure portal, Quotas > Compute) or choose another size')
    if code == 'AllocationFailed':
        return Refusal('capacity', 'no capacity of this size in the region now (%s)' % code,
                       'try another region or size, or again later')
    # https://learn.microsoft.com/azure/azure-resource-manager/troubleshooting/error-sku-not-available
    if code == 'SkuNotAvailable':
        return Refusal('size_unavailable', 'the region does not offer this size to your subscription (%s)' % code,
                       'choose another region or size (az vm list-skus --location REGION)')
    if code == 'AuthorizationFailed':
        action = re.search(r"perform action '([^']+)'", text)
        what = action.group(1) if action else 'it'
        return Refusal('permission', 'the service principal may not perform %s (%s)' % (what, code),
                       'give it a role with %s on the resource group' % what)
    return None


PROVIDER = CloudProvider(
    'azure_arm',
    credentials=CREDENTIALS,
    tag_arg='ex_tags',
    list_images=list_images,
    access=AzureAccess,
    size_facts=size_facts,
    # No user-data: libcloud 3.9's azure_arm cannot send custom data (base64.b64encode(ex_customdata) refuses a str,
    # and the bytes it makes of bytes do not go into its JSON body). The login user and its key come with
    # ex_user_name and auth (AzureAccess.node_kwargs).
    user_data_arg=None,
    # azr://publisher/offer/sku/version; libcloud's driver takes publisher:offer:sku:version.
    radl=RadlImages('azr', 'azure', form='PUBLISHER/OFFER/SKU/VERSION', parts=4),
    release_stopped=deallocate_stopped,
    title='Azure',
    refusal=refusal,
)
