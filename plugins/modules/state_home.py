#!/usr/bin/python
# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
# The work is done by the action plugin of the same name; this file documents it.

from __future__ import annotations

DOCUMENTATION = r"""
module: state_home
short_description: Move the clusters an earlier tfdist kept in the old place to the state home
description:
  - Before tfdist 0.5.0 each cluster's key pair, inventory source, region record and this controller's id lived in the
    playbooks' parent folder, which for the collection's own playbooks is the installed collection, deleted by an
    upgrade. The first run with a state home elsewhere (C(~/.tfdist) by default) moves them there, rewriting the key
    paths in the moved inventory sources, so that no live cluster loses its key or its inventory source.
  - Nothing of the state home is overwritten. Where it holds files of the same names, or another controller id (the
    owner's mark of what was made in the clouds), nothing moves and a warning names the clusters and how to reach
    them (C(TFDIST_HOME=OLD_HOME)).
  - Artifacts (models, logs) are the user's results and stay where they are.
version_added: 0.5.0
author: tfdist maintainers (@tfdist)
extends_documentation_fragment:
  - tfdist.cluster.attributes
  - tfdist.cluster.attributes.action
options:
  home:
    description: The state home, on the controller.
    type: path
    required: true
  old_home:
    description: Where an earlier tfdist kept the state (the playbooks' parent folder). Nothing happens when it is O(home).
    type: path
    required: true
attributes:
  check_mode:
    support: full
    details: Says what would move, and moves nothing.
  diff_mode:
    support: none
  idempotent:
    support: full
"""

EXAMPLES = r"""
- name: Move the clusters of an earlier tfdist to the state home
  tfdist.cluster.state_home:
    home: "{{ lookup('tfdist.cluster.controller_path', 'home') }}"
    old_home: "{{ playbook_dir | dirname }}"
"""

RETURN = r"""
moved:
  description: The files moved, relative to both homes.
  returned: always
  type: list
  elements: str
  sample: [.cache/controller-id, .cache/keys/demo, .cache/keys/demo.pub, inventories/clusters/demo.libcloud.yml]
home:
  description: The state home.
  returned: always
  type: str
  sample: /home/me/.tfdist
"""
