# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

"""OpenStack (libcloud provider `openstack`): credentials from the openrc environment, region, tags as metadata,
and the cluster's key pair and security group.

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import re

from ansible_collections.tfdist.cluster.plugins.module_utils._access import ClusterAccess, access_parts, port_text, retry_while_in_use
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._cluster import TAG_CLUSTER
from ansible_collections.tfdist.cluster.plugins.module_utils._provider import CloudProvider, RadlImages, Refusal, TfdistCloudError
from ansible_collections.tfdist.cluster.plugins.module_utils._sizes import SizeFacts, to_int

# Constructor argument -> (credentials key, environment variables, required).
CREDENTIALS = {
    'key': ('username', ('OS_USERNAME',), True),
    'secret': ('password', ('OS_PASSWORD',), True),
    'ex_force_auth_url': ('auth_url', ('OS_AUTH_URL',), True),
    'ex_tenant_name': ('project_name', ('OS_PROJECT_NAME', 'OS_TENANT_NAME'), True),
    'ex_domain_name': ('user_domain_name', ('OS_USER_DOMAIN_NAME',), False),
}


class OpenStackAccess(ClusterAccess):
    """A key pair and a security group named tfdist-<cluster>-<owner's part> (OpenStack keeps no tags on either)."""

    def _names(self, present):
        """The names of the cluster's key pair and group that are this controller's: its own, and on absent() the
        unmarked one of a cluster made before owners were marked where that is this controller's too."""
        return [self.name] if present or not self.owns(None) else [self.name, self.unmarked_name]

    def _group(self):
        groups = [g for g in self.driver.ex_list_security_groups() if g.name == self.name]
        return groups[0] if groups else None

    def _key(self, present=True):
        return [k for k in self.driver.list_key_pairs() if k.name in self._names(present)]

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
            self.changed('allow tcp %s from %s' % (port_text(low, high), source))
            if not check_mode:
                source_kwargs = {'cidr': source} if kind == 'cidr' else {'source_security_group': group}
                self.driver.ex_create_security_group_rule(group, 'tcp', low, high, **source_kwargs)
        for key in sorted(set(current) - wanted, key=str):
            self.changed('revoke tcp %s from %s' % (port_text(key[1], key[2]), key[3]))
            if not check_mode:
                self.driver.ex_delete_security_group_rule(current[key])
        return self.facts(group.id)

    def absent(self, check_mode=False):
        for key in self._key(present=False):
            self.changed('key pair %s' % key.name)
            if not check_mode:
                self.driver.delete_key_pair(key)
        for group in [g for g in self.driver.ex_list_security_groups() if g.name in self._names(present=False)]:
            self.changed('security group %s' % group.name)
            if not check_mode:
                retry_while_in_use(lambda group=group: self.driver.ex_delete_security_group(group),
                                   'security group %s' % group.name)

    @staticmethod
    def found(driver, options):
        """Every cluster's key pairs and security groups, named tfdist-<cluster>[-<owner's part>] (OpenStack tags
        neither): the name says the cluster and the owner; the ports in such a group, and the floating IPs on them."""
        groups = driver.ex_list_security_groups()
        found = [('key pair', key.name, key.name) + access_parts(key.name) for key in driver.list_key_pairs()]
        found += [('security group', str(group.id), group.name) + access_parts(group.name) for group in groups]
        # The ports (network interfaces) of the cluster's nodes carry its group; a floating IP is the cluster's while it
        # is on one of them (tfdist makes none: once its port is gone, nothing of the cluster is left on it).
        cluster_of_group = dict((group.id, access_parts(group.name)) for group in groups
                                if access_parts(group.name)[0])
        cluster_of_port = {}
        for port in driver.ex_list_ports():
            clusters = [cluster_of_group[group] for group in port.extra.get('security_groups') or []
                        if group in cluster_of_group]
            if clusters:
                cluster_of_port[port.id] = clusters[0]
                found.append(('network interface', port.id, port.extra.get('name') or port.id) + clusters[0])
        found += [('floating IP', ip.id, ip.ip_address) + cluster_of_port[ip.extra.get('port_id')]
                  for ip in driver.ex_list_floating_ips() if ip.extra.get('port_id') in cluster_of_port]
        return [item for item in found if item[3]]

    @staticmethod
    def node_kwargs(driver, access):
        groups = [g for g in driver.ex_list_security_groups() if g.id == access['firewall_id']]
        if not groups:
            raise TfdistCloudError('security group %s (%s) is gone; run deploy again to recreate it'
                                   % (access['name'], access['firewall_id']))
        return {'ex_keyname': access['name'], 'ex_security_groups': groups}


def size_facts(size):
    """vCPUs (NodeSize.vcpus) and GPUs of a flavor, from its extra specs: a vGPU resource (resources:VGPU=1) or
    PCI passthrough devices (pci_passthrough:alias=a100:2, several as a comma list). Architecture: unknown."""
    extra = size.extra or {}
    gpus = to_int(extra.get('resources:VGPU')) or 0
    for alias in str(extra.get('pci_passthrough:alias') or '').split(','):
        name, dummy, count = alias.strip().rpartition(':')
        if name:
            gpus += to_int(count) or 0
    return SizeFacts(to_int(getattr(size, 'vcpus', None)), gpus, None)


def refusal(error, text, attempt):
    """The Refusal of an OpenStack error (libcloud writes 'STATUS REASON message'); None for one this does not know."""
    # Nova's TooManyInstances: "Quota exceeded for cores: Requested 8, but already used 16 of 20 cores" (HTTP 403).
    quota = re.search(r'Quota exceeded for ([\w, ]+?): (.*)', text)
    if quota:
        return Refusal('quota', "your project's quota for %s is used up: %s" % quota.groups(),
                       "ask your cloud's operators for a quota increase or choose a smaller flavor")
    # Nova's PolicyNotAuthorized (HTTP 403): "Policy doesn't allow os_compute_api:servers:create to be performed."
    policy = re.search(r"Policy doesn't allow (\S+) to be performed", text)
    if policy:
        return Refusal('permission', 'your role may not perform %s (PolicyNotAuthorized)' % policy.group(1),
                       "ask your cloud's operators for a role that allows %s" % policy.group(1))
    return None


PROVIDER = CloudProvider(
    'openstack',
    credentials=CREDENTIALS,
    region_arg='ex_force_service_region',
    region_env=('OS_REGION_NAME',),
    # Keystone v3 and the compute API v2: what current clouds speak; driver_options may say otherwise.
    defaults={'api_version': '2.0', 'ex_force_auth_version': '3.x_password'},
    tag_arg='ex_metadata',
    access=OpenStackAccess,
    size_facts=size_facts,
    # The server's user_data (libcloud encodes it), read by cloud-init from the metadata service or config drive.
    user_data_arg='ex_userdata',
    # The URL holds the Keystone server, not a region.
    radl=RadlImages('ost', 'openstack', place='endpoint', form='SERVER[:PORT]/IMAGE_ID'),
    title='OpenStack',
    refusal=refusal,
)
