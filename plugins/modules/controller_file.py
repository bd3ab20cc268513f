#!/usr/bin/python
# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
# The work is done by the action plugin of the same name; this file documents it.

from __future__ import annotations

DOCUMENTATION = r"""
module: controller_file
short_description: Write a file on the controller, only when its content or mode differs
description:
  - Writes O(content) to O(path) on the controller, from the controller's own process, creating the missing folders
    (mode C(0700), its user's alone). The file is replaced at once (written beside it, then renamed), so that a reader
    never sees half of it.
  - For the files a deploy keeps on the controller (its inventory sources, its RADL). A copy or template task costs two
    module runs (a stat, then the write); this costs none, whatever the host of the play.
version_added: 0.5.0
author: tfdist maintainers (@tfdist)
extends_documentation_fragment:
  - tfdist.cluster.attributes
  - tfdist.cluster.attributes.action
options:
  path:
    description: The file on the controller, an absolute path.
    type: path
    required: true
  content:
    description: What the file holds.
    type: str
    required: true
  mode:
    description: Its permissions, in octal (for example V('0644')). By default it is its user's alone.
    type: raw
    default: '0600'
attributes:
  check_mode:
    support: full
    details: Says whether the file would change, and writes nothing.
  diff_mode:
    support: full
  idempotent:
    support: full
"""

EXAMPLES = r"""
- name: Write the cluster's static inventory
  tfdist.cluster.controller_file:
    path: "{{ playbook_dir }}/../inventories/clusters/demo.local.yml"
    content: "{{ lookup('ansible.builtin.template', 'local.yml.j2') }}"
"""

RETURN = r"""
path:
  description: The file written (or that would have been, in check mode).
  returned: always
  type: str
  sample: /home/me/project/inventories/clusters/demo.local.yml
"""
