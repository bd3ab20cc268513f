#!/usr/bin/python
# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
# The work is done by the action plugin of the same name; this file documents it.

from __future__ import annotations

DOCUMENTATION = r"""
module: check_command_line
short_description: Check deploy's command line on the controller, naming the first bad field
description:
  - Applies every rule of the command line of the collection's playbooks (deploy, check, provision) in one action on
    the controller, and fails with the message of the first rule broken, which starts with the field at fault.
  - The rules, in this order. A RADL file (O(radl_path)) and the command line agree on the cloud and the counts, and a
    C(parameter_server) job's RADL deploys a ps. The counts, steps, batch size, ports and restarts are whole numbers
    large enough. The counts make a cluster (one chief or none, what the strategy needs). C(tf_chief_name),
    C(tf_strategy), C(tf_restart), C(tf_idle_minutes) and C(tf_worker_loss) have known values; the switches
    C(tf_spot), C(tf_hdfs), C(tf_tensorboard), C(tf_keras) and C(teardown) are words Ansible's C(bool) filter knows;
    C(tf_ssh_from), passed as the list the firewall gets, holds CIDRs, none wider than a /16 (a /48 for IPv6) unless
    C(tf_ssh_from_any) is true; C(tf_hdfs_ports) is a list of port
    numbers or ranges the firewall takes (its own rule); and a C(multi_worker_mirrored) job has no ps.
  - No port open to C(tf_ssh_from) (the RADL's TCP outports, C(tf_tensorboard_port) with C(tf_tensorboard), the
    O(public_ports)) is a TF port (C(tf_port_base) and one more per task) or an HDFS port (C(tf_hdfs_ports)), which
    take no password, and only the cluster's own nodes may reach them. The message names both fields and the port.
    A script of your own (C(tf_script)) is a file and its interface is
    known. A key of your own (C(tf_ssh_key), O(ssh_key_path)) is a private key file only its user can read, that ssh
    uses without a passphrase. HDFS on the cluster has workers to run on. The storage policy found no error (O(storage)), and the local
    datasets to stage or read exist.
  - Reads the controller's files only; changes nothing, and never touches a host.
version_added: 0.5.0
author: tfdist maintainers (@tfdist)
extends_documentation_fragment:
  - tfdist.cluster.attributes
  - tfdist.cluster.attributes.action
options:
  settings:
    description:
      - Values that replace the play's variables of the same names. The action reads every setting of the command line
        from the play's variables unless given here - those of the collection's playbooks
        (C(playbooks/group_vars/all.yml)), C(cloud), C(teardown), C(image) and the C(tf_*) settings it checks.
      - C(tf_ssh_from) given as the list of CIDRs the firewall gets.
    type: dict
    default: {}
  radl:
    description: The cluster shape of the RADL file (the C(tfdist.cluster.radl) lookup), empty without one.
    type: dict
    default: {}
  radl_path:
    description: The RADL file as the command line named it (C(radl)); empty without one.
    type: str
    default: ''
  storage:
    description: What the storage settings mean (the C(tfdist.cluster.storage_plan) filter).
    type: dict
    required: true
  script_path:
    description: The controller path of C(tf_script).
    type: str
    default: ''
  ssh_key_path:
    description: The controller path of C(tf_ssh_key).
    type: str
    default: ''
  public_ports:
    description:
      - The ports the firewall opens to C(tf_ssh_from) besides SSH, as the provision role gets them
        (C(provision_public_ports)), TCP ports or ranges such as V(6006) or V(8000-8010).
    type: list
    elements: raw
    default: []
    version_added: 0.5.0
attributes:
  check_mode:
    support: full
    details: Reads only.
  diff_mode:
    support: none
  idempotent:
    support: full
"""

EXAMPLES = r"""
# The play's variables hold the command line (cloud, tf_workers, tf_strategy, ...), as in the collection's playbooks.
- name: Check the settings
  tfdist.cluster.check_command_line:
    settings:
      tf_ssh_from: "{{ tf_ssh_from | split(',') | map('trim') | select | list }}"
    storage: "{{ {'tf_data': tf_data} | tfdist.cluster.storage_plan }}"
"""

RETURN = r"""
msg:
  description: The first rule broken, naming its field; on success, that the command line is fine.
  returned: always
  type: str
  sample: "tf_workers: must be a whole number >= 1 (workers run the training steps), got '0'"
"""
