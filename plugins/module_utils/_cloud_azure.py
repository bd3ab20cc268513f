# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

"""Microsoft Azure Resource Manager (libcloud provider `azure_arm`): service-principal credentials, location,
tags, marketplace image URNs, and the cluster's network security group on a subnet of its own (with the nodes' NICs,
which destroy removes with their VMs, or alone where a VM was never made).

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import re

from ansible_collections.tfdist.cluster.plugins.module_utils._access import ClusterAccess, access_cluster, port_text, retry_while_in_use
from ansible_collections.tfdist.cluster.plugins.module_utils._cluster import NODE_NAME_RE, TAG_CLUSTER
from ansible_collections.tfdist.cluster.plugins.module_utils._provider import CloudProvider, RadlImages, TfdistCloudError
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


def nic_subnet(ip_configuration):
    """The lower-cased id of the subnet a NIC's IP configuration is on ('' when none)."""
    return str(((ip_configuration.get('properties') or {}).get('subnet') or {}).get('id') or '').lower()


class AzureAccess(ClusterAccess):
    """A network security group tfdist-<cluster>, tagged, on a subnet of its own in the given virtual network.

    Azure lets the whole virtual network in by default (AllowVnetInBound), so the group denies it
    explicitly and lets in only the cluster's own subnet. The key goes in at node creation.
    """

    NSG_API = '2023-09-01'

    def _nsg_path(self):
        return ('/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/networkSecurityGroups/%s'
                % (self.driver.subscription_id, self._option('resource_group'), self.name))

    def _nics_path(self):
        return ('/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/networkInterfaces'
                % (self.driver.subscription_id, self._option('resource_group')))

    def _subnet_path(self):
        return ('/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/virtualNetworks/%s/subnets/%s'
                % (self.driver.subscription_id, self._option('resource_group'), self._option('network'), self.name))

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

    def _rules(self):
        prefix = self._option('subnet_prefix')

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

    def present(self, public_key, check_mode=False):
        location = self._option('location')
        for key in ('resource_group', 'network', 'subnet_prefix'):
            self._option(key)
        nsg = self._get(self._nsg_path())
        wanted = self._rules()
        if nsg is None or self._rule_view(nsg.get('properties', {}).get('securityRules')) != self._rule_view(wanted):
            self.changed('network security group %s' % self.name)
            if not check_mode:
                self._put(self._nsg_path(), {'location': location, 'tags': {TAG_CLUSTER: self.cluster},
                                             'properties': {'securityRules': wanted}})
        subnet = self._get(self._subnet_path())
        properties = (subnet or {}).get('properties', {})
        behind = str((properties.get('networkSecurityGroup') or {}).get('id', '')).lower() == self._nsg_path().lower()
        if subnet is None or not behind or properties.get('addressPrefix') != self._option('subnet_prefix'):
            self.changed('subnet %s' % self.name)
            if not check_mode:
                self._put(self._subnet_path(), {'properties': {
                    'addressPrefix': self._option('subnet_prefix'),
                    'networkSecurityGroup': {'id': self._nsg_path()}}})
        facts = self.facts(self._nsg_path())
        facts['public_key'] = public_key
        return facts

    def _loose_nics(self):
        """The NICs on the cluster's subnet that no VM holds: libcloud makes a node's NIC before its VM, so a create
        that failed leaves one, and it keeps the subnet in use for good."""
        subnet = self._subnet_path().lower()
        return [nic for nic in (self._get(self._nics_path()) or {}).get('value') or []
                if not (nic.get('properties') or {}).get('virtualMachine')
                and subnet in [nic_subnet(config) for config in (nic.get('properties') or {}).get('ipConfigurations') or []]]

    def absent(self, check_mode=False):
        from libcloud.common.exceptions import BaseHTTPError
        doomed = [('network interface %s' % nic.get('name'), nic.get('id')) for nic in self._loose_nics()]
        doomed += [('subnet %s' % self.name, self._subnet_path()), ('network security group %s' % self.name, self._nsg_path())]
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
        """Every cluster's network security groups (tagged tfdist_cluster, or named tfdist-<cluster>) in the resource
        group, and their subnets (named tfdist-<cluster>) in the virtual network: options resource_group and network."""
        access = cls(driver, 'audit', [], [], options=options)
        found = []
        groups = access._get(access._nsg_path().rpartition('/')[0]) or {}
        for group in groups.get('value') or []:
            cluster = (group.get('tags') or {}).get(TAG_CLUSTER) or access_cluster(group.get('name'))
            if cluster:
                found.append(('network security group', group.get('id'), group.get('name'), cluster))
        subnets = access._get(access._subnet_path().rpartition('/')[0]) or {}
        for subnet in subnets.get('value') or []:
            cluster = access_cluster(subnet.get('name'))
            if cluster:
                found.append(('subnet', subnet.get('id'), subnet.get('name'), cluster))
        # A node's NIC (<node>-nic, on the cluster's subnet) outlives it when its VM was never made or destroy stopped.
        for nic in (access._get(access._nics_path()) or {}).get('value') or []:
            named = NODE_NAME_RE.match(str(nic.get('name') or '').rpartition('-nic')[0])
            on = [access_cluster(nic_subnet(config).rpartition('/')[2])
                  for config in (nic.get('properties') or {}).get('ipConfigurations') or []]
            cluster = next((c for c in on if c), named.group('cluster') if named else None)
            if cluster:
                found.append(('network interface', nic.get('id'), nic.get('name'), cluster))
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
)
