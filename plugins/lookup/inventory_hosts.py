# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r'''
name: inventory_hosts
author: tfdist maintainers (@tfdist)
short_description: The hosts an inventory source gives, with their groups and variables, for add_host
version_added: 0.5.0
description:
  - Reads inventory sources (a cluster's static inventory or its C(tfdist.cluster.libcloud) source, or any other the
    enabled inventory plugins read) as C(ansible-inventory) would, and returns one element per host, in the form
    M(ansible.builtin.add_host) takes - C(name), C(groups) and each of the host's variables (its groups' variables
    merged under its own).
  - This is how a playbook run with no C(-i) (C(ansible-playbook tfdist.cluster.deploy) from a project folder) finds
    the cluster it just made - its inventory source lives in the state home, which is not among the run's sources.
  - Values are trusted as templates, as the same file given with C(-i) would be - the sources are the controller's own.
options:
  _terms:
    description: Inventory sources on the controller (files or folders).
    type: list
    elements: path
    required: true
'''

EXAMPLES = r'''
- name: Add the cluster's nodes to this run's inventory
  ansible.builtin.add_host: "{{ item }}"
  loop: "{{ lookup('tfdist.cluster.inventory_hosts', home ~ '/inventories/clusters/demo.libcloud.yml', wantlist=true) }}"
  loop_control:
    label: "{{ item.name }}"
'''

RETURN = r'''
_raw:
  description: One element per host - C(name), C(groups) (its groups but C(all) and C(ungrouped)), and its variables.
  type: list
  elements: dict
'''

from ansible.errors import AnsibleError, AnsibleLookupError
from ansible.inventory.helpers import get_group_vars
from ansible.inventory.manager import InventoryManager
from ansible.plugins.lookup import LookupBase
from ansible.template import trust_as_template
from ansible.utils.vars import combine_vars

# What Ansible sets on every host itself, and add_host's own arguments: not a host's variables.
NOT_HOST_VARS = frozenset(('inventory_file', 'inventory_dir', 'inventory_hostname', 'inventory_hostname_short',
                           'group_names', 'name', 'groups'))


def trusted(value):
    """The value with its strings trusted as templates, as Ansible trusts what it reads from an inventory file."""
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return {key: trusted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [trusted(item) for item in value]
    return value


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        sources = [str(term) for term in terms]
        try:
            inventory = InventoryManager(loader=self._loader, sources=sources, parse=True)
        except AnsibleError as error:
            raise AnsibleLookupError('inventory_hosts: %s: %s' % (', '.join(sources), error)) from None
        hosts = []
        for host in inventory.get_hosts():
            groups = host.get_groups()
            host_vars = combine_vars(get_group_vars(groups), host.get_vars())
            entry = {key: trusted(value) for key, value in host_vars.items() if key not in NOT_HOST_VARS}
            entry.update(name=host.name,
                         groups=[group.name for group in groups if group.name not in ('all', 'ungrouped')])
            hosts.append(entry)
        return hosts
