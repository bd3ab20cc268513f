# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

"""How a cluster's nodes are reached, per cloud: the cluster's key pair and its firewall.

Every cloud gets the same policy: SSH only from the controller's addresses, the cluster's
internal ports (TF, HDFS) only from members of the cluster. Each cloud spells it its own way:
EC2 and OpenStack security groups that refer to themselves, GCE firewall rules on a network
tag, an Azure network security group on the cluster's subnet.

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import TAG_CLUSTER, TfdistCloudError

SSH_PORT = 22
# Removing a security group fails while the cloud is still terminating the nodes in it.
DELETE_RETRY_SECONDS = 300
DELETE_RETRY_PERIOD = 5


def access_name(cluster):
    """The name of the cluster's key pair, security group, firewall tag: tfdist-<cluster>."""
    return 'tfdist-%s' % cluster


def parse_ports(ports, field='internal_ports'):
    """[(from, to)] sorted and merged, from ints, 'N' or 'N-M' strings."""
    ranges = []
    for n, item in enumerate(ports):
        text = str(item).strip()
        low, dummy, high = text.partition('-')
        try:
            low, high = int(low), int(high or low)
        except ValueError:
            raise TfdistCloudError('%s[%d]: %r is not a port or a port range like 2222-2229' % (field, n, item))
        if not 1 <= low <= high <= 65535:
            raise TfdistCloudError('%s[%d]: %r is not within 1-65535 (low to high)' % (field, n, item))
        ranges.append((low, high))
    merged = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(high, merged[-1][1]))
        else:
            merged.append((low, high))
    return merged


def _port_text(low, high):
    return str(low) if low == high else '%d-%d' % (low, high)


class ClusterAccess:
    """Key pair and firewall of one cluster. Subclasses speak one cloud each."""

    def __init__(self, driver, cluster, ssh_cidrs, internal_ports, ssh_user='root', options=None, public_ports=()):
        self.driver = driver
        self.cluster = cluster
        self.name = access_name(cluster)
        self.ssh_cidrs = sorted(set(ssh_cidrs))
        self.ports = parse_ports(internal_ports)
        # Open to ssh_cidrs: SSH, and what else the user asks for (TensorBoard, say).
        self.public = parse_ports([SSH_PORT] + list(public_ports), 'public_ports')
        self.ssh_user = ssh_user
        # Unset profile entries arrive as empty strings.
        self.options = dict((key, value) for key, value in (options or {}).items() if value not in (None, ''))
        self.changes = []

    # What tfdist_libcloud_node gets back: JSON-safe, turned into create_node arguments by node_kwargs().
    def facts(self, firewall_id=None):
        return {'cloud': self.driver.type, 'name': self.name, 'cluster': self.cluster, 'ssh_user': self.ssh_user,
                'firewall_id': firewall_id, 'ssh_cidrs': self.ssh_cidrs,
                'internal_ports': [_port_text(*r) for r in self.ports],
                'public_ports': [_port_text(*r) for r in self.public], 'options': self.options}

    def changed(self, what):
        self.changes.append(what)

    def present(self, public_key, check_mode=False):
        """Make the key pair and the firewall match; returns the access facts."""
        raise NotImplementedError

    def absent(self, check_mode=False):
        """Remove the key pair and the firewall of the cluster, whatever their state."""
        raise NotImplementedError

    @staticmethod
    def node_kwargs(driver, access):
        """create_node keyword arguments that put a node behind the firewall and give it the key."""
        raise NotImplementedError


class Ec2Access(ClusterAccess):
    """A key pair and a security group named tfdist-<cluster>, both tagged tfdist_cluster=<cluster>."""

    def _tag_filter(self):
        return {'tag:%s' % TAG_CLUSTER: self.cluster}

    def _request(self, params):
        return self.driver.connection.request(self.driver.path, params=params).object

    def _key_pairs(self):
        """Names of the cluster's key pairs: tagged with the cluster or named after it (imported untagged)."""
        from libcloud.utils.xml import findall, findtext
        from libcloud.compute.drivers.ec2 import NAMESPACE
        names = set()
        for params in ({'Action': 'DescribeKeyPairs', 'Filter.1.Name': 'tag:%s' % TAG_CLUSTER,
                        'Filter.1.Value.1': self.cluster},
                       {'Action': 'DescribeKeyPairs', 'Filter.1.Name': 'key-name', 'Filter.1.Value.1': self.name}):
            for item in findall(self._request(params), 'keySet/item', NAMESPACE):
                names.add(findtext(item, 'keyName', NAMESPACE))
        return sorted(names)

    def _groups(self):
        found = dict((g.id, g) for g in self.driver.ex_get_security_groups(filters=self._tag_filter()))
        for group in self.driver.ex_get_security_groups(filters={'group-name': self.name}):
            found.setdefault(group.id, group)
        vpc_id = self.options.get('vpc_id')
        return [g for g in found.values() if not vpc_id or g.extra.get('vpc_id') in (None, vpc_id)]

    def present(self, public_key, check_mode=False):
        if self.name not in self._key_pairs():
            self.changed('key pair %s' % self.name)
            if not check_mode:
                import base64
                # ImportKeyPair with a tag specification: libcloud's import_key_pair_from_string tags nothing.
                self._request({'Action': 'ImportKeyPair', 'KeyName': self.name,
                               'PublicKeyMaterial': base64.b64encode(public_key.encode()).decode(),
                               'TagSpecification.1.ResourceType': 'key-pair',
                               'TagSpecification.1.Tag.1.Key': TAG_CLUSTER,
                               'TagSpecification.1.Tag.1.Value': self.cluster})
        groups = [g for g in self._groups() if g.name == self.name]
        if groups:
            group = groups[0]
        elif check_mode:
            self.changed('security group %s' % self.name)
            return self.facts()
        else:
            self.changed('security group %s' % self.name)
            created = self.driver.ex_create_security_group(
                self.name, 'tfdist cluster %s: SSH from the controller, TF and HDFS within' % self.cluster,
                vpc_id=self.options.get('vpc_id'))
            self.driver.ex_create_tags(SimpleNamespace(id=created['group_id']), {TAG_CLUSTER: self.cluster})
            group = self.driver.ex_get_security_groups(group_ids=[created['group_id']])[0]
        self._sync_rules(group, check_mode)
        return self.facts(group.id)

    def _wanted_rules(self, group_id):
        rules = set(('cidr', low, high, cidr) for cidr in self.ssh_cidrs for low, high in self.public)
        rules.update(('group', low, high, group_id) for low, high in self.ports)
        return rules

    @staticmethod
    def _current_rules(group):
        rules = set()
        for rule in group.ingress_rules:
            if rule.get('protocol') != 'tcp':
                # AWS revokes a rule only when given its protocol, ports and source.
                sources = ([('cidr', cidr) for cidr in rule.get('cidr_ips') or []]
                           + [('group', pair['group_id']) for pair in rule.get('group_pairs') or []])
                rules.update(('other', rule.get('protocol'), rule.get('from_port'), rule.get('to_port'), source)
                             for source in sources)
                continue
            low, high = int(rule['from_port']), int(rule['to_port'])
            rules.update(('cidr', low, high, cidr) for cidr in rule.get('cidr_ips') or [])
            rules.update(('group', low, high, pair['group_id']) for pair in rule.get('group_pairs') or [])
        return rules

    def _sync_rules(self, group, check_mode):
        wanted, current = self._wanted_rules(group.id), self._current_rules(group)
        for rule in sorted(wanted - current, key=str):
            kind, low, high, source = rule
            self.changed('allow tcp %s from %s' % (_port_text(low, high), source))
            if not check_mode:
                self.driver.ex_authorize_security_group_ingress(
                    group.id, low, high, **({'cidr_ips': [source]} if kind == 'cidr' else
                                           {'group_pairs': [{'group_id': source}]}))
        # Anything else opens the cluster wider than asked (a hand-made rule, an old controller address).
        for rule in sorted(current - wanted, key=str):
            if rule[0] == 'other':
                protocol, low, high, (kind, source) = rule[1:]
                self.changed('revoke %s%s from %s' % (protocol, '' if low is None else ' %s-%s' % (low, high), source))
                if not check_mode:
                    params = {'Action': 'RevokeSecurityGroupIngress', 'GroupId': group.id,
                              'IpPermissions.1.IpProtocol': protocol}
                    if low is not None:
                        params.update({'IpPermissions.1.FromPort': low, 'IpPermissions.1.ToPort': high})
                    params['IpPermissions.1.IpRanges.1.CidrIp' if kind == 'cidr'
                           else 'IpPermissions.1.Groups.1.GroupId'] = source
                    self._request(params)
                continue
            kind, low, high, source = rule
            self.changed('revoke tcp %s from %s' % (_port_text(low, high), source))
            if not check_mode:
                self.driver.ex_revoke_security_group_ingress(
                    group.id, low, high, **({'cidr_ips': [source]} if kind == 'cidr' else
                                           {'group_pairs': [{'group_id': source}]}))

    def absent(self, check_mode=False):
        for key in self._key_pairs():
            self.changed('key pair %s' % key)
            if not check_mode:
                self._request({'Action': 'DeleteKeyPair', 'KeyName': key})
        for group in self._groups():
            self.changed('security group %s (%s)' % (group.name, group.id))
            if not check_mode:
                _retry_while_in_use(lambda: self.driver.ex_delete_security_group_by_id(group.id),
                                    'security group %s (%s)' % (group.name, group.id))

    @staticmethod
    def node_kwargs(driver, access):
        kwargs = {'ex_keyname': access['name']}
        # In a chosen subnet EC2 wants group ids; in the default VPC the name is enough.
        if access['options'].get('subnet_id'):
            kwargs['ex_subnet'] = SimpleNamespace(id=access['options']['subnet_id'])
            kwargs['ex_security_group_ids'] = [access['firewall_id']]
        else:
            kwargs['ex_securitygroup'] = [access['name']]
        return kwargs


class OpenStackAccess(ClusterAccess):
    """A key pair and a security group named tfdist-<cluster> (OpenStack keeps no tags on either)."""

    def _group(self):
        groups = [g for g in self.driver.ex_list_security_groups() if g.name == self.name]
        return groups[0] if groups else None

    def _key(self):
        return [k for k in self.driver.list_key_pairs() if k.name == self.name]

    def present(self, public_key, check_mode=False):
        if not self._key():
            self.changed('key pair %s' % self.name)
            if not check_mode:
                self.driver.import_key_pair_from_string(self.name, public_key)
        group = self._group()
        if group is None:
            self.changed('security group %s' % self.name)
            if check_mode:
                return self.facts()
            group = self.driver.ex_create_security_group(
                self.name, '%s=%s: SSH from the controller, TF and HDFS within' % (TAG_CLUSTER, self.cluster))
        wanted = set(('cidr', low, high, cidr) for cidr in self.ssh_cidrs for low, high in self.public)
        wanted.update(('group', low, high, group.id) for low, high in self.ports)
        current = {}
        for rule in group.rules:
            if rule.ip_protocol == 'tcp' and rule.from_port is not None:
                # libcloud gives the remote group as {'name': <group id (neutron) or name (nova)>, 'tenant_id': ...}.
                remote = rule.group.get('name') if isinstance(rule.group, dict) else rule.group
                source = ('group', remote) if remote else ('cidr', rule.ip_range)
                # Neutron names the remote group by id, nova by name.
                source_id = group.id if source[0] == 'group' and source[1] in (group.id, group.name) else source[1]
                current[(source[0], int(rule.from_port), int(rule.to_port), source_id)] = rule
        for kind, low, high, source in sorted(wanted - set(current), key=str):
            self.changed('allow tcp %s from %s' % (_port_text(low, high), source))
            if not check_mode:
                self.driver.ex_create_security_group_rule(
                    group, 'tcp', low, high, **({'cidr': source} if kind == 'cidr' else
                                               {'source_security_group': group}))
        for key in sorted(set(current) - wanted, key=str):
            self.changed('revoke tcp %s from %s' % (_port_text(key[1], key[2]), key[3]))
            if not check_mode:
                self.driver.ex_delete_security_group_rule(current[key])
        return self.facts(group.id)

    def absent(self, check_mode=False):
        for key in self._key():
            self.changed('key pair %s' % key.name)
            if not check_mode:
                self.driver.delete_key_pair(key)
        group = self._group()
        if group is not None:
            self.changed('security group %s' % group.name)
            if not check_mode:
                _retry_while_in_use(lambda: self.driver.ex_delete_security_group(group),
                                    'security group %s' % group.name)

    @staticmethod
    def node_kwargs(driver, access):
        groups = [g for g in driver.ex_list_security_groups() if g.id == access['firewall_id']]
        if not groups:
            raise TfdistCloudError('security group %s (%s) is gone; run deploy again to recreate it'
                                   % (access['name'], access['firewall_id']))
        return {'ex_keyname': access['name'], 'ex_security_groups': groups}


class GceAccess(ClusterAccess):
    """Two firewall rules on the network, tfdist-<cluster>-ssh and -internal, aimed at the network tag
    tfdist-<cluster> that every node of the cluster carries. The key goes into each node's metadata."""

    def _wanted(self):
        network = self.options.get('network', 'default')
        ssh = dict(allowed=[{'IPProtocol': 'tcp', 'ports': [_port_text(*r) for r in self.public]}], source_ranges=self.ssh_cidrs,
                   source_tags=None, target_tags=[self.name], network=network)
        internal = dict(allowed=[{'IPProtocol': 'tcp', 'ports': [_port_text(*r) for r in self.ports]}],
                        source_ranges=None, source_tags=[self.name], target_tags=[self.name], network=network)
        wanted = {self.name + '-ssh': ssh}
        if self.ports:  # GCE reads an empty port list as every port
            wanted[self.name + '-internal'] = internal
        return wanted

    def _existing(self):
        return dict((fw.name, fw) for fw in self.driver.ex_list_firewalls()
                    if fw.name in (self.name + '-ssh', self.name + '-internal'))

    @staticmethod
    def _differs(firewall, spec):
        def norm(value):
            return sorted(value or [], key=str)
        return (norm(firewall.allowed) != norm(spec['allowed']) or norm(firewall.source_ranges) != norm(spec['source_ranges'])
                or norm(firewall.source_tags) != norm(spec['source_tags'])
                or norm(firewall.target_tags) != norm(spec['target_tags'])
                or str(firewall.network.name if hasattr(firewall.network, 'name') else firewall.network)
                != spec['network'])

    def present(self, public_key, check_mode=False):
        existing, wanted = self._existing(), self._wanted()
        for name in sorted(set(existing) - set(wanted)):
            self.changed('firewall %s removed' % name)
            if not check_mode:
                self.driver.ex_destroy_firewall(existing[name])
        for name, spec in sorted(wanted.items()):
            firewall = existing.get(name)
            if firewall is None:
                self.changed('firewall %s' % name)
                if not check_mode:
                    self.driver.ex_create_firewall(name, description='tfdist cluster %s' % self.cluster, **spec)
            elif self._differs(firewall, spec):
                self.changed('firewall %s rules' % name)
                if not check_mode:
                    for attr in ('allowed', 'source_ranges', 'source_tags', 'target_tags'):
                        setattr(firewall, attr, spec[attr])
                    self.driver.ex_update_firewall(firewall)
        facts = self.facts(self.name)
        facts['public_key'] = public_key
        return facts

    def absent(self, check_mode=False):
        for name, firewall in sorted(self._existing().items()):
            self.changed('firewall %s' % name)
            if not check_mode:
                self.driver.ex_destroy_firewall(firewall)

    @staticmethod
    def node_kwargs(driver, access):
        return {'ex_tags': [access['name']], 'ex_network': access['options'].get('network', 'default'),
                'ex_metadata': {'ssh-keys': '%s:%s' % (access['ssh_user'], access['public_key'])}}


class AzureAccess(ClusterAccess):
    """A network security group tfdist-<cluster>, tagged, on a subnet of its own in the given virtual network.

    Azure lets the whole virtual network in by default (AllowVnetInBound), so the group denies it
    explicitly and lets in only the cluster's own subnet. The key goes in at node creation.
    """

    NSG_API = '2023-09-01'

    def _nsg_path(self):
        return ('/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/networkSecurityGroups/%s'
                % (self.driver.subscription_id, self._option('resource_group'), self.name))

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
                     destinationPortRanges=[_port_text(*r) for r in self.public]),
                rule('tfdist-internal', 110, 'Allow', sourceAddressPrefixes=[prefix],
                     destinationPortRanges=[_port_text(*r) for r in self.ports]),
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

    def absent(self, check_mode=False):
        from libcloud.common.exceptions import BaseHTTPError
        for what, path in (('subnet', self._subnet_path()), ('network security group', self._nsg_path())):
            if self._get(path) is None:
                continue
            self.changed('%s %s' % (what, self.name))
            if not check_mode:
                def delete(path=path):
                    try:
                        self.driver.connection.request(path, params={'api-version': self.NSG_API}, method='DELETE')
                    except BaseHTTPError as e:
                        raise RuntimeError('%s' % e)
                    return True
                _retry_while_in_use(delete, '%s %s' % (what, self.name))

    @staticmethod
    def node_kwargs(driver, access):
        from libcloud.compute.base import NodeAuthSSHKey
        options = access['options']
        # libcloud builds the subnet id from the virtual network's name (create_node's ex_network is a str).
        return {'auth': NodeAuthSSHKey(access['public_key']), 'ex_user_name': access['ssh_user'],
                'ex_resource_group': options['resource_group'], 'ex_network': options['network'],
                'ex_subnet': access['name'],
                'ex_use_managed_disks': True}


ACCESS_CLASSES = {'ec2': Ec2Access, 'openstack': OpenStackAccess, 'gce': GceAccess, 'azure_arm': AzureAccess}


def access_for(driver, *args, **kwargs):
    cls = ACCESS_CLASSES.get(driver.type)
    if cls is None:
        raise TfdistCloudError('provider %r: tfdist manages key pairs and firewalls on %s only; '
                               'give the nodes your own with create_args' % (driver.type, ', '.join(sorted(ACCESS_CLASSES))))
    return cls(driver, *args, **kwargs)


def node_kwargs(driver, access):
    """create_node arguments for the access facts that libcloud_access returned (empty when none)."""
    if not access:
        return {}
    cls = ACCESS_CLASSES.get(driver.type)
    if cls is None or access.get('cloud') != driver.type:
        raise TfdistCloudError('access: made for %r, but the provider is %r' % (access.get('cloud'), driver.type))
    return cls.node_kwargs(driver, access)


def _retry_while_in_use(delete, what, timeout=None):
    """Call delete() until it works: a group stays in use until the cloud has terminated its nodes."""
    deadline = time.monotonic() + (DELETE_RETRY_SECONDS if timeout is None else timeout)
    while True:
        try:
            # Errors come as exceptions; the boolean some drivers return is not reliable (EC2 emulators).
            delete()
            return
        except Exception as e:
            text = str(e)
            in_use = any(word in text for word in ('DependencyViolation', 'in use', 'InUse', 'Conflict', '409'))
            if not in_use or time.monotonic() >= deadline:
                raise TfdistCloudError('could not remove %s: %s' % (what, text))
            time.sleep(DELETE_RETRY_PERIOD)
