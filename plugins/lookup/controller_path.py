# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r'''
name: controller_path
author: tfdist maintainers (@tfdist)
short_description: The folders of the controller that tfdist works from
version_added: 0.5.0
description:
  - C(home) is the state home, where tfdist keeps what it must find again on later runs (each cluster's key pair,
    its nodes' pinned host keys, its inventory source, this controller's id and the caches). It lives outside the
    installed collection, so that upgrading the collection (C(ansible-galaxy collection install --force)) loses
    no cluster.
  - C(cwd) is the folder C(ansible-playbook) was started in, where paths given on the command line are relative to
    and where each cluster's artifacts go (C(artifacts/<cluster>)).
options:
  _terms:
    description: Which folder, C(home) or C(cwd) (one term).
    type: list
    elements: str
    required: true
  home:
    description:
      - The state home. A relative path in C(ansible.cfg) is relative to that file's folder (the repository's
        C(ansible.cfg) sets C(.), the clone itself).
    type: path
    default: ~/.tfdist
    env:
      - name: TFDIST_HOME
    ini:
      - section: tfdist
        key: home
'''

EXAMPLES = r'''
- name: Show where this controller keeps its clusters
  ansible.builtin.debug:
    msg: "{{ lookup('tfdist.cluster.controller_path', 'home') }}/inventories/clusters"
'''

RETURN = r'''
_raw:
  description: The folder's absolute path, one element.
  type: list
  elements: path
'''

import os

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        if len(terms) != 1 or terms[0] not in ("home", "cwd"):
            raise AnsibleLookupError("controller_path: give one of home, cwd; got %s" % ", ".join(map(str, terms)))
        if terms[0] == "cwd":
            return [os.getcwd()]
        return [os.path.abspath(os.path.expanduser(self.get_option("home")))]
