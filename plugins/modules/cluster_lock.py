#!/usr/bin/python
# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
# The work is done by the action plugin of the same name; this file documents it.

from __future__ import annotations

DOCUMENTATION = r"""
module: cluster_lock
short_description: Hold a cluster's lock on the controller until the playbook ends
description:
  - Takes an exclusive lock (C(flock)) on O(path) on the controller for the C(ansible-playbook) process that runs the
    task, and holds it until that process ends, however it ends (done, failed or killed). A second deploy or destroy
    of the same cluster on this controller then waits for it, up to O(wait) seconds, or fails naming the process
    that holds it (its pid and command line).
  - The lock is held by a small process of its own that ends with the playbook's process. Another task of the same
    playbook (a deploy's teardown) finds the lock already its own and goes on.
  - The file keeps who holds the lock (JSON). When the playbook ends and nothing matches O(keep_with), it is removed.
version_added: 0.5.0
author: tfdist maintainers (@tfdist)
extends_documentation_fragment:
  - tfdist.cluster.attributes
  - tfdist.cluster.attributes.action
options:
  path:
    description: The lock file on the controller, an absolute path (made with mode C(0600) where missing).
    type: path
    required: true
  cluster:
    description: The cluster's name, for the message.
    type: str
    required: true
  wait:
    description: How many seconds to wait for another run to release the lock before failing; V(0) fails at once.
    type: int
    default: 0
  keep_with:
    description:
      - A file name pattern (a glob) on the controller, for example the cluster's inventory source. When the playbook
        ends and nothing matches it, the lock file is removed (a destroyed cluster leaves none); empty, it is kept.
    type: str
    default: ""
attributes:
  check_mode:
    support: full
    details: Takes the lock in check mode too, so that a check does not read a cluster while another run changes it.
  diff_mode:
    support: none
  idempotent:
    support: full
notes:
  - Locks are per controller (its file system); two controllers are told apart by the owner's mark instead.
"""

EXAMPLES = r"""
- name: One deploy or destroy of cluster demo at a time
  tfdist.cluster.cluster_lock:
    path: "{{ playbook_dir }}/../inventories/clusters/.demo.lock"
    cluster: demo
    wait: 60
"""

RETURN = r"""
path:
  description: The lock file.
  returned: always
  type: str
  sample: /home/me/project/inventories/clusters/.demo.lock
locked:
  description: Whether this playbook holds the lock now.
  returned: always
  type: bool
  sample: true
holder:
  description: Who holds the lock (this playbook, or the other one when RV(locked) is false).
  returned: always
  type: dict
  contains:
    pid:
      description: The process id of the C(ansible-playbook) that holds it.
      type: int
      sample: 4321
    command:
      description: Its command line.
      type: str
      sample: /usr/bin/python3 /usr/bin/ansible-playbook playbooks/deploy.yml -e cloud=aws -e cluster_name=demo
    holder_pid:
      description: The process that holds the lock for it.
      type: int
      sample: 4330
    since:
      description: When it took the lock (seconds since the epoch).
      type: float
      sample: 1795000000.5
"""
