# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r'''
name: controller_id
author: tfdist maintainers (@tfdist)
short_description: This controller's id, the owner's mark on what it makes in a cloud
version_added: 0.5.0
description:
  - Returns the controller id kept in the file given, and makes it there first where it is missing (32 random
    hexadecimal digits, mode C(0600), its folder C(0700) when new). Two runs that start at once make one id.
  - tfdist marks what it makes in a cloud with it (the C(tfdist_owner) tag, the last part of a key pair's or a
    firewall's name), so that destroy and the leak audit of one controller never touch another's clusters.
  - Given O(ssh_key), the id is the one that key gives (the same for every controller that holds it), and no file is
    read or made.
options:
  _terms:
    description: The file that keeps the id, on the controller (one term).
    type: list
    elements: path
    required: true
  ssh_key:
    description:
      - A private key on the controller (C(tf_ssh_key)); its public half, as C(ssh-keygen -y) gives it, makes the id.
      - Empty, the id in the file.
    type: str
    default: ''
'''

EXAMPLES = r'''
- name: Mark the cluster's resources with this controller's id
  ansible.builtin.set_fact:
    provision_owner: "{{ lookup('tfdist.cluster.controller_id', tfdist_home ~ '/.cache/controller-id') }}"
'''

RETURN = r'''
_raw:
  description: The controller id, one element.
  type: list
  elements: str
'''

import os

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.tfdist.cluster.plugins.module_utils._owner import controller_id, key_id, public_key

# The id each key gave, by its path and modification time: a playbook reads the owner many times.
_key_ids = {}


def ssh_key_id(path):
    stamp = (path, os.stat(path).st_mtime_ns)
    if stamp not in _key_ids:
        _key_ids[stamp] = key_id(public_key(path))
    return _key_ids[stamp]


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        if len(terms) != 1:
            raise AnsibleLookupError('controller_id: give one file, got %d' % len(terms))
        key = self.get_option('ssh_key')
        if key:
            try:
                return [ssh_key_id(key)]
            except (OSError, ValueError) as error:
                raise AnsibleLookupError('tf_ssh_key: %s' % error) from None  # the playbooks' setting that gives it
        try:
            return [controller_id(str(terms[0]))]
        except (OSError, ValueError) as error:
            raise AnsibleLookupError('controller_id: %s' % error) from None
