# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r'''
name: libcloud
short_description: TensorFlow cluster nodes on any cloud, through apache-libcloud
description:
  - Lists the nodes created by M(tfdist.cluster.libcloud_node) (nodes tagged C(tfdist_cluster), C(tfdist_role)
    and C(tfdist_index), on EC2 C(tfdist_first_index) and their launch index instead of C(tfdist_index) where one
    call made several, or named C({cluster}-{role}-{index}) on drivers that keep no tags), with one
    C(list_nodes) call. Other nodes are ignored.
  - Hosts are named C({cluster}-{role}-{index}) (not after EC2's C(Name) tag, which the nodes made in one call
    share) and grouped in C(tfdist_<cluster>), C(tfdist_<cluster>_<role>) and the bare
    role groups C(chief), C(worker), C(ps) and C(evaluator); dashes in group names become underscores.
  - The host that leads each cluster (its chief, or worker 0 of a cluster without a chief) is also in
    C(tfdist_<cluster>_leader).
  - Sets C(ansible_host), C(tfdist_cluster), C(tfdist_role), C(tfdist_index), C(tfdist_public_ip),
    C(tfdist_private_ip) and C(libcloud_id), C(libcloud_name), C(libcloud_state), C(libcloud_provider),
    C(libcloud_size), C(libcloud_image), C(libcloud_extra), C(ansible_become) with O(become), and the ssh settings of
    O(known_hosts). Values from the cloud are marked unsafe, so they are never templated.
  - Uses a YAML configuration file whose name ends with C(.libcloud.yml) or C(.libcloud.yaml).
  - O(provider), O(region), O(credentials) and O(driver_options) may be templates, for example to read a secret
    with the P(ansible.builtin.env#lookup) lookup.
version_added: 0.1.0
author: tfdist maintainers (@tfdist)
extends_documentation_fragment:
  - tfdist.cluster.libcloud
  - constructed
  - inventory_cache
options:
  plugin:
    description: Marks this as an instance of the C(tfdist.cluster.libcloud) plugin.
    type: str
    required: true
    choices: [tfdist.cluster.libcloud]
  clusters:
    description: Names of the clusters to include. All tfdist clusters when empty.
    type: list
    elements: str
    default: []
  owner:
    description:
      - Only the nodes of this controller, the id in their C(tfdist_owner) tag
        (P(tfdist.cluster.controller_id#lookup)), and nodes without that tag (made before version 0.5.0). Another
        controller's cluster of the same name is left out.
      - Unset, every tfdist node.
    type: str
    version_added: 0.5.0
  states:
    description: Libcloud node states to include.
    type: list
    elements: str
    default: [running]
  address:
    description:
      - Which IP becomes C(ansible_host). When a node has none of that kind, the other kind is used.
    type: str
    choices: [public, private]
    default: public
  become:
    description:
      - Whether Ansible becomes root on the nodes (sets C(ansible_become) on every host), for a login user that is not
        root but has passwordless sudo, as the clouds' images give theirs (C(ubuntu) on EC2, C(debian) on tfdist's
        VM-like docker nodes). Tasks delegated to the controller are not affected.
      - V(false) sets nothing, leaving C(become) to the playbook.
    type: bool
    default: false
    version_added: 0.5.0
  known_hosts:
    description:
      - A known_hosts file that pins the nodes' host keys, one line per node named after it, as
        M(tfdist.cluster.libcloud_node) writes it (O(tfdist.cluster.libcloud_node#module:user_data.known_hosts)).
      - Every host then gets C(ansible_ssh_common_args) that make ssh accept only its line's key
        (C(StrictHostKeyChecking=yes), C(UserKnownHostsFile) this file and no other, C(HostKeyAlias) the node's name,
        so that a node whose address changes is still known), C(ansible_host_key_checking=true) (over
        C(host_key_checking = False) in an C(ansible.cfg)) and C(tfdist_known_hosts), the file, with which the
        C(tfdist.cluster.concise) callback names a node that answers with another key. O(compose) may still override
        them.
      - Unset, nothing of the kind is set.
    type: path
    version_added: 0.5.0
'''

EXAMPLES = r'''
# inventories/aws.libcloud.yml: the running nodes of every tfdist cluster in one EC2 region
plugin: tfdist.cluster.libcloud
provider: ec2
region: eu-west-1

---
# Nodes whose login user is not root: Ansible logs in as ubuntu and becomes root with sudo
plugin: tfdist.cluster.libcloud
provider: ec2
region: eu-west-1
become: true
compose:
  ansible_user: "'ubuntu'"

---
# Nodes made with user-data and pinned host keys: ssh accepts from each only the key tfdist gave it
plugin: tfdist.cluster.libcloud
provider: ec2
region: eu-west-1
clusters: [tfdist]
become: true
known_hosts: .cache/keys/tfdist.known_hosts
compose:
  ansible_user: "'ubuntu'"

---
# Only cluster "tfdist", reached on private IPs, the password read from the environment, cached
plugin: tfdist.cluster.libcloud
provider: openstack
credentials:
  password: "{{ lookup('ansible.builtin.env', 'TFDIST_OS_PASSWORD') }}"
clusters: [tfdist]
address: private
cache: true
cache_plugin: ansible.builtin.jsonfile
cache_connection: .cache/inventory
keyed_groups:
  - key: libcloud_size
    prefix: size
compose:
  tf_port: 2222
'''

from ansible.errors import AnsibleError
from ansible.module_utils.basic import missing_required_lib
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable
from ansible.utils.unsafe_proxy import wrap_var

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._cluster import (
    TAG_CLUSTER,
    TAG_INDEX,
    TAG_ROLE,
    LEADER,
    TASK_TYPES,
    ClusterError,
    cluster_order,
    group_name,
    leader,
    validate_cluster_name,
)
from ansible_collections.tfdist.cluster.plugins.module_utils._host_keys import KNOWN_HOSTS_VAR, ssh_args
from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import (
    HAS_LIBCLOUD,
    TfdistCloudError,
    explain_error,
    get_driver,
    list_cluster_nodes,
    node_to_dict,
    pick_address,
)
from ansible_collections.tfdist.cluster.plugins.module_utils._owner import is_own


def pinned_host_vars(known_hosts, node):
    """The host variables that make Ansible's ssh accept from `node` only the key pinned for it in `known_hosts`."""
    return {'ansible_ssh_common_args': ssh_args(known_hosts, node), 'ansible_host_key_checking': True,
            KNOWN_HOSTS_VAR: known_hosts}


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):

    NAME = 'tfdist.cluster.libcloud'

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith(('.libcloud.yml', '.libcloud.yaml'))

    def _fetch_nodes(self):
        """The tfdist nodes as JSON-safe dicts (what the cache stores), from one list_nodes() call."""
        options = dict((name, self.templar.template(self.get_option(name)))
                       for name in ('provider', 'region', 'credentials', 'driver_options'))
        try:
            driver = get_driver(**options)
            nodes = list_cluster_nodes(driver)
        except TfdistCloudError as e:
            raise AnsibleError('%s: %s' % (self.NAME, e)) from e
        except Exception as e:  # libcloud raises many types (auth, HTTP, network)
            raise AnsibleError('%s: %s' % (self.NAME, explain_error(options['provider'], e))) from e
        return [dict(node_to_dict(node), libcloud_provider=options['provider']) for node, identity in nodes]

    def _populate(self, nodes):
        clusters = self.get_option('clusters')
        states = self.get_option('states')
        strict = self.get_option('strict')
        owner = self.get_option('owner')
        for role in TASK_TYPES:
            self.inventory.add_group(role)
        placed = []  # the TF tasks found, per cluster: who leads each is known once all are seen
        # In the cluster's order (chief, workers, ps, evaluator, each by index), not the cloud's: plays then go through
        # the hosts, and show them, in that order.
        in_order = sorted(nodes, key=lambda node: (node['cluster'] or '', cluster_order(node['role'], node['index']), node['name']))
        for node in in_order:
            if (clusters and node['cluster'] not in clusters) or node['state'] not in states:
                continue
            # The inventory source is this controller's: its unmarked nodes are too (_owner.py).
            if not is_own(node.get('owner'), owner, own_unmarked=True):
                continue
            if node['index'] is None:
                continue  # no index (a tag edited by hand, or left by tfdist before 0.5.0): not a TF task
            host = self.inventory.add_host(wrap_var(node['name']))
            cluster_group = self.inventory.add_group(group_name(node['cluster']))
            role_group = self.inventory.add_group(group_name(node['cluster'], node['role']))
            for group in (cluster_group, role_group, node['role']):
                self.inventory.add_child(group, host)
            placed.append({'cluster': node['cluster'], 'type': node['role'], 'index': int(node['index']), 'host': host})
            hostvars = {
                'ansible_host': pick_address(node['public_ips'], node['private_ips'], self.get_option('address')),
                TAG_CLUSTER: node['cluster'],
                TAG_ROLE: node['role'],
                TAG_INDEX: node['index'],
                'tfdist_public_ip': pick_address(node['public_ips'], []),
                'tfdist_private_ip': pick_address([], node['private_ips']),
                'libcloud_id': node['id'],
                'libcloud_name': node['name'],
                'libcloud_state': node['state'],
                'libcloud_provider': node['libcloud_provider'],
                'libcloud_size': node['size'],
                'libcloud_image': node['image'],
                'libcloud_extra': node['extra'],
            }
            if self.get_option('become'):
                hostvars['ansible_become'] = True
            if self.get_option('known_hosts'):
                hostvars.update(pinned_host_vars(self.get_option('known_hosts'), node['name']))
            for name, value in hostvars.items():
                self.inventory.set_variable(host, name, wrap_var(value))

            variables = self.inventory.get_host(host).get_vars()
            self._set_composite_vars(self.get_option('compose'), variables, host, strict=strict)
            self._add_host_to_composed_groups(self.get_option('groups'), variables, host, strict=strict)
            self._add_host_to_keyed_groups(self.get_option('keyed_groups'), variables, host, strict=strict)

        for cluster in sorted(set(task['cluster'] for task in placed)):
            tasks = [task for task in placed if task['cluster'] == cluster]
            try:
                leading = leader(tasks)
            except ClusterError:
                continue  # a cluster being created or removed: no worker 0 yet
            self.inventory.add_child(self.inventory.add_group(group_name(cluster, LEADER)), leading['host'])

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        if not HAS_LIBCLOUD:
            raise AnsibleError(missing_required_lib('apache-libcloud'))
        self._read_config_data(path)
        try:
            for n, cluster in enumerate(self.get_option('clusters')):
                validate_cluster_name(cluster, 'clusters[%d]' % n)
        except ClusterError as e:
            raise AnsibleError('%s: %s' % (self.NAME, e)) from e

        cache_key = self.get_cache_key(path)
        use_cache = self.get_option('cache') and cache
        update_cache = self.get_option('cache') and not cache
        nodes = None
        if use_cache:
            try:
                nodes = self._cache[cache_key]
            except KeyError:
                update_cache = True
        if nodes is None:
            nodes = self._fetch_nodes()
        if update_cache:
            self._cache[cache_key] = nodes
        self._populate(nodes)
