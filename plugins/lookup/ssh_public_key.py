# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r'''
name: ssh_public_key
author: tfdist maintainers (@tfdist)
short_description: The public half of a private SSH key on the controller
version_added: 0.5.0
description:
  - Returns the OpenSSH public key line of each private key given, as C(ssh-keygen -y) prints it, without asking for
    a passphrase.
  - This is how the provision role reads the public half of C(tf_ssh_key) (its C(provision_ssh_key)) for the cluster's
    key pair; the P(tfdist.cluster.controller_id#lookup) lookup derives the owner's id from the same line.
  - A key that C(ssh) cannot use as it is (no such file, a passphrase, not a private key) fails the lookup with the
    reason C(ssh-keygen) gives.
options:
  _terms:
    description: Private key files on the controller.
    type: list
    elements: path
    required: true
notes:
  - Needs C(ssh-keygen) (OpenSSH's client) on the controller.
'''

EXAMPLES = r'''
- name: Read the public half of the user's key
  ansible.builtin.set_fact:
    provision_public_key: "{{ lookup('tfdist.cluster.ssh_public_key', '~/.ssh/id_ed25519') }}"
'''

RETURN = r'''
_raw:
  description: One OpenSSH public key line per key given.
  type: list
  elements: str
  sample: ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB... tfdist"]
'''

import os

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.tfdist.cluster.plugins.module_utils._owner import public_key


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        try:
            return [public_key(os.path.expanduser(str(path))) for path in terms]
        except ValueError as error:
            raise AnsibleLookupError('ssh_public_key: %s' % error) from None
