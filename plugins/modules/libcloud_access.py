#!/usr/bin/python
# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r'''
module: libcloud_access
short_description: The key pair and firewall of a TensorFlow cluster on EC2, GCE, Azure or OpenStack
description:
  - Creates, corrects or removes what decides who reaches the nodes of a cluster, with one policy on every cloud
    SSH comes in only from O(ssh_from); the cluster's O(internal_ports) (TF tasks, HDFS) only from the
    cluster's own nodes; nothing else comes in.
  - Below, C(tfdist-{cluster}) is C(tfdist-{cluster}-{owner}) with O(owner), {owner} the first 6 characters of the
    controller's id, so that two controllers' clusters of one name never share a key pair or a firewall.
  - V(ec2) a key pair and a security group named C(tfdist-{cluster}), both tagged C(tfdist_cluster={cluster}) (and
    C(tfdist_owner) with O(owner)); the internal ports are opened to the group itself.
  - V(openstack) a key pair and a security group named C(tfdist-{cluster}), internal ports opened to the group.
  - V(gce) a VPC network C(tfdist-{cluster}) (custom subnet mode) with a subnet C(tfdist-{cluster}) in the zone's
    region, removed with the cluster; or the network the options name, left alone, with a rule
    C(tfdist-{cluster}-deny) (priority 1, every protocol from anywhere) right below tfdist's own (priority 0) so that
    the network's other rules do not reach the nodes. Firewall rules C(tfdist-{cluster}-ssh) and
    C(tfdist-{cluster}-internal) on it, aimed at the network tag C(tfdist-{cluster}) (the internal ports from that tag
    only). The public key goes into each node's C(ssh-keys) metadata with C(block-project-ssh-keys); nodes get no
    service account unless the options name one. The owner's mark is in the descriptions (GCE keeps no labels there).
  - V(azure_arm) a network security group C(tfdist-{cluster}) (tagged) that denies the rest of the virtual
    network, on a subnet C(tfdist-{cluster}) of its own; the public key goes in at node creation.
  - With O(state=absent), only this controller's (O(owner)); another owner's key pair and firewall stay.
  - Rules found on the group that open more than this (an old controller address, a hand-made rule) are revoked.
  - Pass RV(access) to M(tfdist.cluster.libcloud_node) so that new nodes get the key and sit behind the firewall.
version_added: 0.2.0
author: tfdist maintainers (@tfdist)
extends_documentation_fragment:
  - tfdist.cluster.attributes
  - tfdist.cluster.attributes.action
  - tfdist.cluster.attributes.action_here
  - tfdist.cluster.libcloud
attributes:
  check_mode:
    support: full
    details: Lists in RV(changes) what would be created, corrected or removed, and changes nothing.
  diff_mode:
    support: none
  idempotent:
    support: full
options:
  cluster:
    description: Name of the cluster.
    type: str
    required: true
  state:
    description:
      - V(present) creates or corrects the key pair and the firewall.
      - V(absent) removes them; remove the nodes first (M(tfdist.cluster.libcloud_node) with O(state=absent)).
        A security group still in use by terminating nodes is retried for up to 5 minutes.
    type: str
    choices: [present, absent]
    default: present
  public_key:
    description: The cluster's OpenSSH public key. Required with O(state=present).
    type: str
  ssh_from:
    description: CIDRs allowed to reach port 22, normally the controller's address as a C(/32).
    type: list
    elements: str
    default: []
  internal_ports:
    description: TCP ports or ranges (V(2222-2229)) that the cluster's nodes may reach on each other.
    type: list
    elements: str
    default: []
  public_ports:
    description: TCP ports or ranges opened to O(ssh_from) besides SSH, for example V(6006) for TensorBoard.
    type: list
    elements: str
    default: []
  owner:
    description:
      - The id of the controller that makes the cluster (the P(tfdist.cluster.controller_id#lookup) lookup), in the
        names of the key pair and firewall, and on their C(tfdist_owner) tag where the cloud keeps tags.
      - Unset, the names are C(tfdist-{cluster}) and nothing is marked (as before version 0.5.0).
    type: str
    version_added: 0.5.0
  own_unmarked:
    description:
      - With O(owner) and O(state=absent), also remove the key pair and firewall the cluster got before version 0.5.0
        (named C(tfdist-{cluster}), no owner's mark). Set it where this controller holds the cluster's inventory source.
    type: bool
    default: false
    version_added: 0.5.0
  ssh_user:
    description: The login user that gets the key where the key is set per node (GCE, Azure).
    type: str
    default: root
  options:
    description:
      - Cloud-specific placement. V(ec2) C(vpc_id), C(subnet_id). V(gce) C(network) and C(subnet) (a network of
        yours; unset, the cluster gets its own), C(subnet_range) (of the subnet tfdist makes, default
        V(10.42.0.0/20)), C(service_account) (the nodes' service account, scope C(cloud-platform); unset, none).
        V(azure_arm) C(resource_group), C(location) and C(network) (the virtual network), all required; the
        cluster's subnet C(tfdist-{cluster}) is the first /24 of the virtual network's address space that no subnet
        overlaps (kept on later runs), and the task fails naming C(network) when none is free.
    type: dict
    default: {}
notes:
  - The private key never leaves the controller; only the public key is sent.
'''

EXAMPLES = r'''
- name: Key pair and security group of cluster demo on EC2
  tfdist.cluster.libcloud_access:
    provider: ec2
    region: eu-west-1
    cluster: demo
    public_key: "{{ lookup('ansible.builtin.file', '~/.ssh/tfdist-demo.pub') }}"
    ssh_from: [203.0.113.7/32]
    internal_ports: [2222-2229, "8020", "9866"]
  register: demo_access

- name: Nodes behind it
  tfdist.cluster.libcloud_node:
    provider: ec2
    region: eu-west-1
    cluster: demo
    access: "{{ demo_access.access }}"
    roles:
      - {role: chief, count: 1, size: t3.large, image: ami-0123456789abcdef0}

- name: Remove them after the nodes
  tfdist.cluster.libcloud_access:
    provider: ec2
    region: eu-west-1
    cluster: demo
    state: absent
'''

RETURN = r'''
refusal:
  description:
    - When the cloud refused a call, the class of its refusal (as M(tfdist.cluster.libcloud_node) returns it), for a
      pipeline to branch on; one of V(credentials), V(permission), V(quota), V(capacity), V(spot_capacity),
      V(size_unavailable), V(unknown).
  returned: on failure, when the cloud refused
  type: str
  sample: credentials
  version_added: 0.5.0
access:
  description:
    - What M(tfdist.cluster.libcloud_node) needs to give new nodes the key and the firewall (its O(tfdist.cluster.libcloud_node#module:access) option).
    - Empty with O(state=absent).
    - On V(gce) also C(network) and C(subnet), the links of the network and subnet the nodes go on (C(subnet) null
      on a network of the user's without one).
  returned: always
  type: dict
  sample:
    cloud: ec2
    name: tfdist-demo
    cluster: demo
    firewall_id: sg-0123456789abcdef0
    ssh_user: root
    ssh_cidrs: [203.0.113.7/32]
    internal_ports: ["2222-2229"]
    public_ports: ["22"]
    options: {}
changes:
  description: What was (in check mode, would be) created, corrected or removed.
  returned: always
  type: list
  elements: str
  sample: ["key pair tfdist-demo", "security group tfdist-demo", "allow tcp 22 from 203.0.113.7/32"]
'''

import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._cluster import ClusterError, validate_cluster_name
from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import (
    HAS_LIBCLOUD,
    LIBCLOUD_IMPORT_ERROR,
    TfdistCloudError,
    access_for,
    classify_error,
    connection_argument_spec,
    explain_error,
    get_driver,
)


ARGUMENT_SPEC = dict(
    connection_argument_spec(),
    cluster=dict(type='str', required=True),
    state=dict(type='str', default='present', choices=['present', 'absent']),
    public_key=dict(type='str', no_log=False),
    ssh_from=dict(type='list', elements='str', default=[]),
    internal_ports=dict(type='list', elements='str', default=[]),
    public_ports=dict(type='list', elements='str', default=[]),
    ssh_user=dict(type='str', default='root'),
    options=dict(type='dict', default={}),
    owner=dict(type='str'),
    own_unmarked=dict(type='bool', default=False),
)
REQUIRED_IF = [('state', 'present', ['public_key'])]


def run_module(module):
    """The module's work, on what it uses of AnsibleModule (params, check_mode, exit_json, fail_json): the module's
    process, or the controller's own where the action runs it (plugins/action/libcloud_access.py)."""
    params = module.params
    try:
        validate_cluster_name(params['cluster'])
        if params['state'] == 'present' and not params['ssh_from']:
            raise TfdistCloudError('ssh_from: give at least one CIDR allowed to reach SSH (the controller\'s address)')
        driver = get_driver(params['provider'], params['region'], params['credentials'], params['driver_options'])
        access = access_for(driver, params['cluster'], params['ssh_from'], params['internal_ports'],
                            params['ssh_user'], params['options'], params['public_ports'], owner=params['owner'],
                            own_unmarked=params['own_unmarked'])
        if params['state'] == 'present':
            facts = access.present(params['public_key'].strip(), module.check_mode)
        else:
            access.absent(module.check_mode)
            facts = {}
    except (TfdistCloudError, ClusterError) as e:
        module.fail_json(msg=str(e))
    except Exception as e:  # libcloud raises many types (auth, HTTP, network); report them all plainly
        module.fail_json(msg=explain_error(params['provider'], e), exception=traceback.format_exc(),
                         refusal=classify_error(params['provider'], e).kind)
    module.exit_json(changed=bool(access.changes), access=facts, changes=access.changes)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True, required_if=REQUIRED_IF)
    if not HAS_LIBCLOUD:
        module.fail_json(msg=missing_required_lib('apache-libcloud'), exception=LIBCLOUD_IMPORT_ERROR)
    run_module(module)


if __name__ == '__main__':
    main()
