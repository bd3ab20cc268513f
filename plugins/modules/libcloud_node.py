#!/usr/bin/python
# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r'''
module: libcloud_node
short_description: Create and remove the nodes of a TensorFlow cluster on any cloud with apache-libcloud
description:
  - Declares how many nodes each TensorFlow role (chief, worker, ps, evaluator) of a cluster has, and creates
    or removes nodes until the cloud matches, like M(amazon.aws.ec2_instance) with its C(exact_count) option.
  - Nodes are named C({cluster}-{role}-{index}) and tagged with C(tfdist_cluster), C(tfdist_role) and
    C(tfdist_index) (EC2 and OpenStack metadata, Azure tags, GCE labels). On drivers that keep no tags the
    name alone identifies the node.
  - On EC2 the new nodes of a role with consecutive indexes come from one C(RunInstances) call and are whole at
    creation, with no call per node. Instead of C(tfdist_index) they carry C(tfdist_first_index), the first index of
    the run, to which each node's launch index within the call (C(amiLaunchIndex), 0 for the first) adds; their
    C(Name) tag names the run, C({cluster}-{role}-{first}-{last}). A node created alone is tagged C(tfdist_index) and
    named C({cluster}-{role}-{index}). Either way tfdist, its results and its inventory call the node
    C({cluster}-{role}-{index}).
  - The cluster's nodes are found with a single C(list_nodes) call. Missing nodes get the lowest free
    indexes; surplus nodes are removed highest index first. The nodes of one role are created together.
  - If a node cannot be created, the nodes this run created are destroyed again and the task fails.
  - A stopped node of the cluster is started again with O(state=present). A node the cloud will not destroy fails
    the task; on V(azure_arm), where a VM powered off from inside stays allocated and billed, it is deallocated
    instead when it was powered off.
  - Roles not listed in O(roles) are left as they are; give them O(roles[].count=0) to remove their nodes.
version_added: 0.1.0
author: tfdist maintainers (@tfdist)
extends_documentation_fragment:
  - tfdist.cluster.attributes
  - tfdist.cluster.attributes.action
  - tfdist.cluster.attributes.action_here
  - tfdist.cluster.libcloud
attributes:
  check_mode:
    support: full
    details: Computes the plan (returned as RV(plan)), resolving sizes and images, and changes nothing.
  diff_mode:
    support: full
    details: The diff lists the names of the cluster's nodes before and after.
  idempotent:
    support: full
options:
  cluster:
    description:
      - Name of the cluster. Lowercase letters, digits and dashes, starting with a letter, at most 40 characters.
    type: str
    required: true
  state:
    description:
      - V(present) makes each role listed in O(roles) have exactly its O(roles[].count) nodes.
      - V(absent) destroys every node of the cluster.
    type: str
    choices: [present, absent]
    default: present
  roles:
    description:
      - The nodes wanted per TensorFlow role. Used with O(state=present).
    type: list
    elements: dict
    default: []
    suboptions:
      role:
        description: The TensorFlow task type.
        type: str
        required: true
        choices: [chief, worker, ps, evaluator]
      count:
        description: Exact number of nodes of this role, 0 or more.
        type: int
        required: true
      size:
        description:
          - Id or name of the libcloud size (instance type, flavor, machine type).
          - Required when nodes of this role must be created, unless O(roles[].constraints) choose it.
          - Or a list of sizes in order of preference (version 0.5.0). The first is the role's size; the others are
            where its nodes go when the cloud refuses the first for capacity in every zone of O(zones) (see O(zones)
            for the order). The plan prices the first.
        type: raw
      constraints:
        description:
          - The least vCPUs, memory and GPUs of this role's nodes, as a RADL system's C(cpu.count),
            C(memory.size) and C(gpu.count) or a cloud profile's role give them. Without O(roles[].size), the
            nodes get the cheapest size of the cloud that meets them all, from the driver's C(list_sizes)
            (RAM, vCPUs, GPUs and price as the driver knows them; sizes of unknown price rank after the
            priced ones, then by memory and vCPUs; only sizes of the image's CPU architecture, x86_64 unless
            the image says otherwise). RV(plan) says which size and why. An explicit O(roles[].size) wins.
          - GPUs are NVIDIA GPUs. Azure's size list does not count GPUs, so a GPU constraint there needs a size.
          - When no size meets them the task fails, naming O(roles[].constraints.source) (or the role) and the
            constraint nothing met, and creates nothing.
        type: dict
        version_added: 0.5.0
        suboptions:
          cpus:
            description: The least number of vCPUs (RADL C(cpu.count >= N)).
            type: int
          memory:
            description:
              - The least memory, with a unit as RADL writes it (RADL C(memory.size >= 16g)); V(k), V(m), V(g),
                V(t) are powers of 1000, V(ki), V(mi), V(gi), V(ti) powers of 1024.
            type: str
          gpus:
            description: The least number of GPUs (RADL C(gpu.count >= N)).
            type: int
          source:
            description:
              - "Where the constraints come from (for example V(cluster.radl: system 'worker')), named in the error
                when no size meets them. Default C(roles[N].constraints (<role> nodes))."
            type: str
      image:
        description:
          - Id or name of the libcloud image.
          - Required when nodes of this role must be created.
        type: str
      location:
        description: Id or name of the libcloud location (zone, datacenter) for new nodes.
        type: str
      create_args:
        description:
          - Extra keyword arguments for the driver's C(create_node), such as C(ex_keyname) or C(ex_security_groups).
          - Tags given under the driver's tag argument (for example C(ex_metadata)) are kept next to the tfdist tags.
        type: dict
        default: {}
      spot:
        description:
          - Create this role's new nodes on the cloud's interruptible capacity, where libcloud's driver can ask for it
            (EC2 spot instances through C(ex_spot), GCE preemptible instances through C(ex_preemptible) with no
            automatic restart). The cloud may take such a node away at any time; it costs less.
          - They are tagged C(tfdist_spot=true), and RV(nodes[].spot) and RV(plan) say so.
          - On any other cloud (Azure, OpenStack, Docker; libcloud's drivers for them have no such argument) the task
            fails before anything is created, naming C(roles[N].spot).
          - Nodes that already run stay as they are.
        type: bool
        default: false
        version_added: 0.5.0
      price_per_hour:
        description:
          - The price of one of this role's nodes an hour, in US dollars, for RV(plan) and RV(cost). It wins over the
            price in libcloud's price list, which lacks many sizes (for example EC2's C(m5.xlarge) in libcloud 3.9).
          - Without it the price comes from libcloud's list, its bundled one or the newer one fetched with
            C(libcloud.pricing.download_pricing_file()) into C(~/.libcloud/pricing.json), which libcloud reads instead.
          - More than 0; the plan fails naming C(roles[N].price_per_hour) otherwise.
        type: float
        version_added: 0.5.0
  zones:
    description:
      - The zones (libcloud locations, such as EC2's availability zones) in which the cluster's new nodes may go, in
        order of preference. The role's nodes go to the first; when the cloud refuses them there for capacity (the
        RV(refusal) classes V(capacity), V(spot_capacity) and V(size_unavailable)), to the next zone, and once no zone
        has their size, to their next size (O(roles[].size) as a list) from the first zone again. A quota, the
        credentials, a permission or an unknown error is not routed around (another zone would not help).
      - Zones first, then sizes, because the size is what the user chose for the model (memory, speed, price) and the
        zones of a region differ only in where the nodes run.
      - Unless O(spread_zones), the nodes of the cluster stay in one zone (TensorFlow's traffic between zones is slower
        and billed), so a refusal for one role moves the whole cluster to the next zone, and the nodes this run created
        in the zone it leaves are destroyed. Nodes that already run keep their zone, and the new ones go there too
        (only sizes are tried there). RV(routed) names each refusal routed around and RV(placed) where the nodes went.
      - Empty, the cloud chooses the zone in the region (or O(roles[].location) does; the two cannot both be set), and
        only sizes are tried.
    type: list
    elements: str
    default: []
    version_added: 0.5.0
  spread_zones:
    description:
      - Whether a role's nodes may go to another zone than the rest of the cluster's when the cloud refuses them for
        capacity; only the refused role then moves, and nodes of the other roles stay where they are.
    type: bool
    default: false
    version_added: 0.5.0
  wait:
    description: Wait until new nodes are running and have an address of the O(address) kind.
    type: bool
    default: true
  wait_timeout:
    description: How many seconds to wait in all, for the nodes to run and for O(wait_for_port).
    type: int
    default: 600
  wait_for_port:
    description:
      - Also wait until this TCP port accepts connections on each new node's address, for example V(22) for SSH.
      - Only with O(wait=true).
    type: int
  access:
    version_added: 0.2.0
    description:
      - The cluster's key pair and firewall, as returned in RV(tfdist.cluster.libcloud_access#module:access). New nodes
        get the cluster's key and sit behind its firewall (EC2 and OpenStack key pair and security group, GCE network,
        subnet, network tag, C(ssh-keys) and C(block-project-ssh-keys) metadata and no service account unless the
        access options name one, Azure SSH key and subnet).
    type: dict
    default: {}
  owner:
    version_added: 0.5.0
    description:
      - The id of the controller that makes the cluster (the P(tfdist.cluster.controller_id#lookup) lookup). New nodes
        are tagged C(tfdist_owner) with it, and only nodes tagged with it are the cluster's; the nodes of another
        controller's cluster of the same name are neither counted nor removed.
      - Unset, every node of the cluster is, tagged or not (as before version 0.5.0).
    type: str
  own_unmarked:
    version_added: 0.5.0
    description:
      - With O(owner), whether nodes of the cluster without a C(tfdist_owner) tag (made before version 0.5.0) are this
        controller's too. Set it where this controller holds the cluster's inventory source.
    type: bool
    default: false
  user_data:
    version_added: 0.5.0
    description:
      - The user-data (a cloud-config, read by cloud-init at the node's first boot) of every new node, as the clouds'
        images make their login user - O(user_data.user) with O(user_data.public_key) in its C(authorized_keys) and
        passwordless sudo - and with no SSH login as root. The node's image must run cloud-init.
      - Handed over as each cloud takes user-data - EC2 C(UserData), GCE metadata C(user-data), OpenStack
        C(user_data), and on V(docker) a NoCloud seed in the container, which then boots its image's own init
        (C(tfdist/node-vm), systemd as PID 1). libcloud's Azure driver cannot send it - the task fails there, naming
        this option.
      - Nodes that already run stay as they are.
    type: dict
    suboptions:
      user:
        description: The login user, not V(root).
        type: str
        required: true
      public_key:
        description: The OpenSSH public key line that logs in as O(user_data.user) (the cluster's key).
        type: str
        required: true
      known_hosts:
        description:
          - A known_hosts file on the controller (the host the module runs on) that pins the nodes' host keys. The
            nodes of one role that a run creates get one ed25519 host key pair, made here, in their cloud-config
            (cloud-init's C(ssh_keys); the image's other host keys are deleted and none is generated), so that they
            share one user-data and the cloud makes them in one call (EC2's RunInstances); the nodes of a cluster
            trust each other anyway (their TF ports are open to each other). Its public key is written to this file
            as soon as the nodes exist, on a line per node named after it (C(NAME ssh-ed25519 KEY)), not its
            address. A node created again under the same name (a lost node replaced) gets a new key that replaces its
            line; a node that already runs keeps its line; the lines of the nodes a run removes go.
          - Where the cloud's tags hold such text (not GCE's labels), each node also carries its public host key in
            the tag C(tfdist_host_key), and a run pins the nodes it finds with no line in this file from that tag, so a
            controller that did not make the cluster (a fresh execution environment with the cluster's SSH key)
            logs in to its nodes with their keys pinned all the same.
          - The private key is never written on the controller, and is masked (no_log) in whatever the module
            returns; node data a cloud hands back with the user-data in it (GCE's metadata) is returned without it.
            It does travel to the node in its user-data, which the cloud keeps with the node.
          - The file is made mode 0600, its folder 0700 when missing. Connect with the
            P(tfdist.cluster.libcloud#inventory) plugin's O(tfdist.cluster.libcloud#inventory:known_hosts) set to it.
          - Unset, cloud-init makes the nodes' host keys and nothing is pinned.
        type: path
        version_added: 0.5.0
  address:
    description:
      - Which IP address to wait for and to return as C(address) on each node.
      - When a node has no address of that kind, C(address) falls back to the other kind.
    type: str
    choices: [public, private]
    default: public
notes:
  - On EC2 every new node is created with C(InstanceInitiatedShutdownBehavior=terminate) (libcloud's
    C(ex_terminate_on_shutdown)), so a node that shuts itself down is gone instead of stopped; C(create_args) may
    override it.
  - Besides the new nodes, the wait covers existing nodes of the cluster still in state C(pending),
    for example those left by an interrupted run, even when nothing else changes.
  - Sizes and images are looked up with the driver's C(list_sizes) and C(list_images), once per run and only
    when nodes must be created or a role's size comes from its O(roles[].constraints).
'''

EXAMPLES = r'''
- name: Create a cluster of one chief and three workers on EC2
  tfdist.cluster.libcloud_node:
    provider: ec2
    region: eu-west-1
    cluster: tfdist
    roles:
      - role: chief
        count: 1
        size: m5.xlarge
        image: ami-0123456789abcdef0
      - role: worker
        count: 3
        size: m5.xlarge
        image: ami-0123456789abcdef0
        create_args:
          ex_keyname: tfdist
          ex_security_groups: [tfdist]
    wait_for_port: 22
  register: tfdist_nodes

- name: Scale the workers down to one (removes the highest indexes, tfdist-worker-2 and tfdist-worker-1)
  tfdist.cluster.libcloud_node:
    provider: ec2
    region: eu-west-1
    cluster: tfdist
    roles:
      - role: worker
        count: 1
        size: m5.xlarge
        image: ami-0123456789abcdef0

- name: Use an emulated EC2 endpoint on localhost
  tfdist.cluster.libcloud_node:
    provider: ec2
    region: us-east-1
    credentials:
      access_key: test
      secret_key: test
    driver_options:
      host: 127.0.0.1
      port: 5000
      secure: false
      signature_version: "4"
    cluster: tfdist
    roles:
      - role: worker
        count: 2
        size: t2.micro
        image: ami-12345678

- name: Workers on the cheapest EC2 instance type with 4 vCPUs, 16 GB and one GPU (the plan says which)
  tfdist.cluster.libcloud_node:
    provider: ec2
    region: us-east-1
    cluster: tfdist
    roles:
      - role: worker
        count: 2
        constraints: {cpus: 4, memory: 16g, gpus: 1}
        image: ami-0123456789abcdef0
  register: tfdist_nodes

- name: VM-like docker nodes whose login user, debian, cloud-init makes from their user-data, with pinned host keys
  tfdist.cluster.libcloud_node:
    provider: docker
    cluster: tfdist
    roles:
      - role: worker
        count: 2
        size: host
        image: tfdist/node-vm:bookworm
    user_data:
      user: debian
      public_key: "{{ lookup('ansible.builtin.file', '.cache/keys/tfdist.pub') }}"
      known_hosts: .cache/keys/tfdist.known_hosts
    address: private
    wait_for_port: 22

- name: Remove the whole cluster
  tfdist.cluster.libcloud_node:
    provider: ec2
    region: eu-west-1
    cluster: tfdist
    state: absent
'''

RETURN = r'''
created:
  description: The nodes this run created, with the same fields as RV(nodes). Empty in check mode.
  returned: always
  type: list
  elements: dict
removed:
  description: The nodes this run destroyed, with the same fields as RV(nodes). Empty in check mode.
  returned: always
  type: list
  elements: dict
removed_leftovers:
  description:
    - With O(state=absent), what else of the cluster this run removed once its nodes were gone (in check mode, what
      it would remove). On V(docker), the cluster's network, left by a destroy cut short or a create that failed
      before its first container. Other clouds' firewalls and key pairs are M(tfdist.cluster.libcloud_access)'s.
  returned: always
  type: list
  elements: str
  sample: ["network tfdist-demo"]
  version_added: 0.5.0
started:
  description:
    - The stopped nodes of the cluster that this run started again (O(state=present) means running).
    - In check mode, the nodes that would be started.
  returned: always
  type: list
  elements: dict
nothing_to_do:
  description:
    - Nothing for a run to do - no node to create, start or remove, and none pending (which O(wait) waits for).
      Read in check mode, it tells whether the run itself can be left out.
  returned: always
  type: bool
  version_added: 0.5.0
nodes:
  description: All nodes of the cluster after the run (in check mode, as they are now), by role then index.
  returned: always
  type: list
  elements: dict
  contains:
    id:
      description: The provider's node id.
      type: str
      sample: i-0123456789abcdef0
    name:
      description: The node name, C({cluster}-{role}-{index}).
      type: str
      sample: tfdist-worker-1
    cluster:
      description: The cluster name.
      type: str
      sample: tfdist
    role:
      description: The TensorFlow task type.
      type: str
      sample: worker
    index:
      description: The TensorFlow task index within the role.
      type: int
      sample: 1
    state:
      description: The libcloud node state.
      type: str
      sample: running
    public_ips:
      description: The node's public IP addresses.
      type: list
      elements: str
      sample: ["203.0.113.10"]
    private_ips:
      description: The node's private IP addresses.
      type: list
      elements: str
      sample: ["10.0.0.12"]
    address:
      description: The first IP of the O(address) kind, else of the other kind; null when the node has none.
      type: str
      sample: 203.0.113.10
    size:
      description: The node's size id, when the driver reports it.
      type: str
      sample: m5.xlarge
    image:
      description: The node's image id, when the driver reports it.
      type: str
      sample: ami-0123456789abcdef0
    spot:
      version_added: 0.5.0
      description: Whether the node runs on interruptible capacity (tagged C(tfdist_spot=true), or an EC2 spot instance).
      type: bool
      sample: false
    extra:
      description: The JSON-representable part of the driver's extra node data.
      type: dict
      sample: {"tags": {"tfdist_cluster": "tfdist", "tfdist_role": "worker", "tfdist_index": "1"}}
plan:
  description:
    - Per role, the names of the nodes to create and to remove (already done unless in check mode).
    - For a role whose size comes from O(roles[].constraints), also C(size), the size chosen, and
      C(size_reason), why (version 0.5.0).
    - With O(state=present), for every role, C(spot), whether its new nodes are spot nodes, and C(price), the price of
      one node an hour (null when unknown), and C(price_source), where that price comes from, V(profile) (the role's
      O(roles[].price_per_hour)) or V(list) (libcloud's on-demand list price of its size) (version 0.5.0).
    - For a role with O(zones), O(roles[].location) or several sizes, C(zone), the zone its new nodes go to first (null
      when the cloud chooses), and C(fallbacks), the zones then sizes tried after a capacity refusal, in order
      (version 0.5.0).
  returned: always
  type: dict
  sample:
    worker:
      to_create: ["tfdist-worker-2"]
      to_remove: []
      size: g4dn.xlarge
      size_reason: "g4dn.xlarge: 4 vCPUs, 16 GiB, 1 GPU, $0.526/h: the cheapest of 39 x86_64 sizes with gpu.count >= 1"
      spot: true
      price: 0.526
      price_source: list
cost:
  description:
    - What the wanted cluster costs an hour at the roles' O(roles[].price_per_hour), else at the list prices libcloud
      knows for their sizes (on-demand prices; spot nodes are billed at the cloud's lower, changing spot price), for
      the roles in O(roles) with nodes.
  returned: with O(state=present)
  type: dict
  version_added: 0.5.0
  contains:
    per_hour:
      description: The sum of count times price of the roles with a known price, in US dollars.
      type: float
      sample: 2.63
    spot_per_hour:
      description: The part of RV(cost.per_hour) on spot nodes.
      type: float
      sample: 2.104
    nodes:
      description: The number of nodes.
      type: int
      sample: 6
    spot_nodes:
      description: How many of them are spot nodes.
      type: int
      sample: 4
    unpriced:
      description: The sizes without a known price, left out of RV(cost.per_hour).
      type: list
      elements: str
      sample: []
    summary:
      description: The cost line of the plan.
      type: str
      sample: "cost: $2.63/h for 6 nodes at list prices; spot: 4 of 6 nodes (80% of the price), billed at the lower spot price"
routed:
  description:
    - The refusals of the cloud that this run routed around (O(zones), O(roles[].size) as a list), in order, each with
      the role, the size and zone it was refused, the class of the refusal (RV(refusal)) and the cloud's message as
      tfdist explains it (C(why)). Also returned on failure, with those routed around before.
  returned: with O(state=present)
  type: list
  elements: dict
  sample:
    - role: worker
      size: g4dn.xlarge
      zone: us-east-1a
      refusal: capacity
      why: "worker: AWS refused g4dn.xlarge in us-east-1a: no capacity of this size there now
        (InsufficientInstanceCapacity); try another zone or size, or again later"
  version_added: 0.5.0
placed:
  description: Where the new nodes of each role with nodes created by this run went, its size and zone (the region when
    the cloud chose the zone). Empty in check mode.
  returned: with O(state=present)
  type: dict
  sample:
    chief: {size: m5.xlarge, zone: us-east-1b}
    worker: {size: g4dn.xlarge, zone: us-east-1b}
  version_added: 0.5.0
refusal:
  description:
    - When the cloud refused a call of the run, the class of its refusal, for a pipeline or a retry to branch on
      (the message, C(msg), names the role, size and zone and what to do), one of
      V(credentials) (keys wrong or expired), V(permission) (a permission the credentials lack), V(quota) (an
      account's limit, such as AWS's vCPUs of a family), V(capacity) (the zone has none of the size now),
      V(spot_capacity) (no spot or preemptible capacity, or a spot price above the request's), V(size_unavailable) (the
      zone does not offer the size), V(unknown) (another error of the cloud).
    - Where creating some nodes failed, the class of the first failure; what the run had created is destroyed.
  returned: on failure, when the cloud refused
  type: str
  sample: quota
  version_added: 0.5.0
'''

import functools
import itertools
import socket
import time
import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._cluster import (
    TAG_HOST_KEY,
    TAG_OWNER,
    TAG_SPOT,
    TASK_TYPES,
    ClusterError,
    cluster_order,
    node_name,
    node_tags,
    validate_cluster_name,
)
from ansible_collections.tfdist.cluster.plugins.module_utils._host_keys import new_host_key, pinned, record, secret_parts
from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import (
    HAS_LIBCLOUD,
    LIBCLOUD_IMPORT_ERROR,
    TfdistCloudError,
    choose_size,
    classify_error,
    connection_argument_spec,
    create_nodes,
    destroy_nodes,
    explain_error,
    find_by_id_or_name,
    get_driver,
    list_cluster_nodes,
    list_images,
    node_defaults,
    node_kwargs,
    node_to_dict,
    release_stopped,
    resource_tags,
    provider_of,
    spot_create_kwargs,
    tag_create_kwargs,
    user_data_kwargs,
)
from ansible_collections.tfdist.cluster.plugins.module_utils._owner import is_own
from ansible_collections.tfdist.cluster.plugins.module_utils._provider import Attempt
from ansible_collections.tfdist.cluster.plugins.module_utils._sizes import check_constraints, cluster_cost, has_constraints, role_price

WAIT_PERIOD = 3
# A node's SSH port is tried again after FIRST_PORT_POLL seconds, then twice as long each time up to PORT_POLL: a
# container's sshd answers within a tenth of a second of its start, a booting node's (systemd, cloud-init) after one
# to two seconds here and a VM's after a minute or so. A try is one TCP connect: a longer pause only answers later.
FIRST_PORT_POLL = 0.1
PORT_POLL = 0.5


STARTABLE_STATES = ('stopped', 'suspended', 'paused')


def validate_roles(roles):
    seen = set()
    for n, spec in enumerate(roles):
        if spec['count'] < 0:
            raise TfdistCloudError('roles[%d].count must be 0 or more, got %d' % (n, spec['count']))
        if spec['role'] in seen:
            raise TfdistCloudError('roles[%d].role: %s is listed more than once' % (n, spec['role']))
        seen.add(spec['role'])
        # One size or several in order of preference: the first is the role's size, the others where it goes on a
        # capacity refusal (ClusterNodes.create).
        spec['sizes'] = role_sizes(spec['size'])
        if not all(isinstance(size, str) and size for size in spec['sizes']):
            raise TfdistCloudError('roles[%d].size must be a size or a list of sizes, got %r' % (n, spec['size']))
        spec['size'] = spec['sizes'][0] if spec['sizes'] else None
        source = (spec['constraints'] or {}).get('source')
        spec['constraints'] = dict(check_constraints(spec['constraints'], source or 'roles[%d].constraints' % n),
                                   source=source)


def plan_role(pairs, count):
    """Indexes to create and (node, identity) pairs to remove so that `count` nodes with distinct indexes remain."""
    keep, remove = {}, []
    for pair in sorted(pairs, key=lambda p: (p[1].index is not None, p[1].index or 0, str(p[0].id))):
        if pair[1].index is None or pair[1].index in keep:
            remove.append(pair)  # a second node with the same index, left by an interrupted run
        else:
            keep[pair[1].index] = pair
    remove += [keep.pop(index) for index in sorted(keep, reverse=True)[:max(len(keep) - count, 0)]]
    free = (index for index in itertools.count() if index not in keep)
    return [next(free) for dummy in range(count - len(keep))], remove


def make_plan(current, roles, state):
    """{role: {'create': [indexes], 'remove': [(node, identity)]}} for each role concerned."""
    by_role = {}
    for pair in current:
        by_role.setdefault(pair[1].role, []).append(pair)
    if state == 'absent':
        return dict((role, {'create': [], 'remove': by_role[role]}) for role in TASK_TYPES if role in by_role)
    plan = {}
    for spec in roles:
        create, remove = plan_role(by_role.get(spec['role'], []), spec['count'])
        plan[spec['role']] = {'create': create, 'remove': remove}
    return plan


def image_arch(image):
    """x86_64, arm64 or None: the CPU architecture of an image, where the driver says (EC2 and GCE images)."""
    arch = str(((image.extra or {}).get('architecture') if image is not None else None) or '').lower()
    return {'x86_64': 'x86_64', 'amd64': 'x86_64', 'arm64': 'arm64', 'aarch64': 'arm64'}.get(arch)


def choose_sizes(driver, roles, sizes, images):
    """{role: {size, reason}} for the roles with nodes whose size comes from their constraints."""
    chosen = {}
    for n, spec in enumerate(roles):
        if spec['size'] or spec['count'] < 1 or not has_constraints(spec['constraints']):
            continue
        try:
            image = find_by_id_or_name(images, spec['image'], 'image') if spec['image'] else None
        except TfdistCloudError:
            image = None  # reported as the image's own error when nodes must be created
        field = spec['constraints'].get('source') or 'roles[%d].constraints (%s nodes)' % (n, spec['role'])
        size, reason = choose_size(driver, sizes, spec['constraints'], field, image_arch(image))
        chosen[spec['role']] = {'size': size, 'reason': reason}
    return chosen


def spot_roles(driver, roles):
    """{role: create_node kwargs of spot capacity} for the roles with nodes that want spot nodes; fails, naming the
    role's spot option, on a cloud whose libcloud driver cannot ask for it (before anything is looked up)."""
    return dict((spec['role'], spot_create_kwargs(driver, 'roles[%d].spot (%s nodes)' % (n, spec['role'])))
                for n, spec in enumerate(roles) if spec['spot'] and spec['count'] > 0)


def role_prices(roles, sizes, chosen):
    """{role: (price of one node an hour, where it comes from)} for the roles with nodes: the role's price_per_hour,
    else the listed size's ((None, None): neither knows)."""
    prices = {}
    for n, spec in enumerate(roles):
        if spec['count'] < 1:
            continue
        size = (chosen.get(spec['role']) or {}).get('size')
        if size is None and spec['size'] and sizes:
            try:
                size = find_by_id_or_name(sizes, spec['size'], 'size')
            except TfdistCloudError:
                size = None  # reported as the size's own error when nodes must be created
        prices[spec['role']] = role_price(size, spec['price_per_hour'],
                                          'roles[%d].price_per_hour (%s nodes)' % (n, spec['role']))
    return prices


# The refusals that another zone or size may not meet: the zone has none of the size now, or does not offer it. A quota,
# the credentials and a permission are the account's, the same in every zone; an unknown error is not known to be the
# zone's. Only these send a role's nodes elsewhere.
ROUTABLE_REFUSALS = ('capacity', 'spot_capacity', 'size_unavailable')


def role_sizes(size):
    """A role's sizes in order of preference: its size option is one size or a list of them ([] when unset)."""
    if size is None:
        return []
    return [size] if isinstance(size, str) else list(size)


def preference(spec, zones):
    """(zone, fallbacks) of a role's plan: the zone its nodes go to first (None: the region's choice), then the zones
    and sizes tried on a capacity refusal, in order (the next zones, then the next sizes)."""
    sizes = spec['sizes'] or [None]
    return (zones[0] if zones else spec['location']), list(zones[1:]) + list(sizes[1:])


def next_place(placement, role, zone_count, size_count, spread):
    """Where the nodes go once `role` was refused where it is: the new placement ({role: (size index, zone index)}), or
    None when the role has no zone or size left.

    Zones first, then sizes: the role keeps the size the user put first (chosen for the model's memory, speed and
    price) in the next zone, and takes its next size, from the first zone again, only once no zone has its size.
    Without `spread` the cluster's nodes share one zone (TensorFlow's traffic between zones is slower and billed), so
    every role goes where this one goes. Each step moves a role's (size, zone) forward: the search ends.
    """
    size, zone = placement[role]
    if zone + 1 < zone_count:
        target = (size, zone + 1)
    elif size + 1 < size_count:
        target = (size + 1, 0)
    else:
        return None
    moved = dict(placement, **{role: target})
    if not spread:
        moved = dict((other, (place[0], target[1])) for other, place in moved.items())
    return moved


def node_zone(node):
    """The zone a node runs in, where the driver says (EC2's availability zone, GCE's zone), else None."""
    extra = node.extra or {}
    zone = extra.get('availability') or extra.get('zone')
    return getattr(zone, 'name', zone)


def resolve_places(driver, roles, resolved, zones, sizes):
    """{role: ([size objects], [zone objects])} in order of preference, for each role with nodes to create: its sizes
    (the one chosen from its constraints, or those of its size option) and the zones option's locations, or [its
    location] (None: the region's choice). Looked up before anything is created, so a bad one fails early."""
    if zones and any(spec['location'] for spec in roles):
        raise TfdistCloudError('zones and roles[].location cannot both be set: zones give every role its zone')
    locations = driver.list_locations() if zones else []
    places = {}
    for n, spec in enumerate(roles):
        role = spec['role']
        if role not in resolved:
            continue
        objects = [resolved[role]['size']]
        if len(spec['sizes']) > 1:
            objects = [find_by_id_or_name(sizes, size, 'roles[%d].size[%d] (%s nodes)' % (n, k, role))
                       for k, size in enumerate(spec['sizes'])]
        places[role] = (objects, [find_by_id_or_name(locations, zone, 'zones[%d]' % k) for k, zone in enumerate(zones)]
                        or [resolved[role].get('location')])
    return places


def pin_zones(places, running, spread):
    """`places` with the zones of a role narrowed to the zone where its cluster's nodes already run (with `spread`,
    its own role's nodes): nodes that run stay, and without spread the cluster's nodes share one zone, so only its
    sizes are tried there. `running`: the cluster's (node, identity) pairs that stay."""
    for role, (sizes, zones) in places.items():
        held = set(node_zone(node) for node, identity in running if not spread or identity.role == role)
        zone = next((zone for zone in zones if zone is not None and zone.name in held), None)
        if zone is not None:
            places[role] = (sizes, [zone])
    return places


def resolve_create_args(driver, roles, plan, access=None, sizes=None, spot=None, user_data=None):
    """create_node kwargs (size, image, location objects and create_args) per role that needs new nodes, and
    the sizes chosen from constraints ({role: {size, reason}}, for every role with nodes, so the plan shows them).

    Looked up once per run, before anything is created, so a bad size or image, or constraints that no size
    meets, fail early. `sizes`: driver.list_sizes() when the caller has it; `spot`: spot_roles(); `user_data`: the
    module's option.
    """
    needed = [(n, spec) for n, spec in enumerate(roles) if plan[spec['role']]['create']]
    for n, spec in needed:
        if not spec['image']:
            raise TfdistCloudError('roles[%d].image is required to create %s nodes' % (n, spec['role']))
        if not spec['size'] and not has_constraints(spec['constraints']):
            raise TfdistCloudError('roles[%d].size (or roles[%d].constraints) is required to create %s nodes'
                                   % (n, n, spec['role']))
    constrained = [(n, spec) for n, spec in enumerate(roles)
                   if not spec['size'] and spec['count'] > 0 and has_constraints(spec['constraints'])]
    if not needed and not constrained:
        return {}, {}
    sizes = driver.list_sizes() if sizes is None else sizes
    images = list_images(driver, [spec['image'] for n, spec in needed + constrained if spec['image']])
    chosen = choose_sizes(driver, roles, sizes, images)
    locations = driver.list_locations() if any(spec['location'] for n, spec in needed) else []
    access_kwargs = dict(node_defaults(driver), **node_kwargs(driver, access))
    if user_data:
        access_kwargs.update(user_data_kwargs(driver, user_data, access_kwargs))
    resolved = {}
    for n, spec in needed:
        args = dict(spec['create_args'])
        if spec['role'] in chosen:
            args['size'] = chosen[spec['role']]['size']
        else:
            args['size'] = find_by_id_or_name(sizes, spec['size'], 'roles[%d].size (%s nodes)' % (n, spec['role']))
        args['image'] = find_by_id_or_name(images, spec['image'], 'roles[%d].image (%s nodes)' % (n, spec['role']))
        if spec['location']:
            args['location'] = find_by_id_or_name(locations, spec['location'], 'roles[%d].location (%s nodes)' % (n, spec['role']))
        # The cloud's defaults, key, firewall and user-data first: the user's create_args may still override them; the
        # arguments of spot capacity come last, as the cloud refuses spot nodes without them.
        resolved[spec['role']] = dict(access_kwargs, **args)
        resolved[spec['role']].update((spot or {}).get(spec['role']) or {})
    return resolved, chosen


def wait_for_port(host, port, deadline):
    """True once host accepts TCP connections on port, False if the deadline passes first."""
    pause = FIRST_PORT_POLL
    while True:
        try:
            with socket.create_connection((host, port), timeout=5):
                return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(pause, PORT_POLL))
            pause *= 2


class ClusterNodes:
    """Brings the nodes of one cluster to the wanted counts."""

    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.cluster = self.params['cluster']
        self.connect = functools.partial(get_driver, self.params['provider'], self.params['region'],
                                         self.params['credentials'], self.params['driver_options'])
        self.driver = self.connect()

    def to_dict(self, node):
        return node_to_dict(node, self.params['address'])

    def fail(self, msg, created=(), removed=(), **result):
        self.module.fail_json(msg=msg, created=[self.to_dict(n) for n in created],
                              removed=[self.to_dict(n) for n in removed], **result)

    def known_hosts(self):
        """The known_hosts file that pins the host keys of the nodes this run creates; None: no host keys."""
        return (self.params['user_data'] or {}).get('known_hosts')

    def new_host_key(self, name):
        """A host key pair for the nodes `name` names, whose private half is masked wherever it could show (no_log)."""
        host_key = new_host_key(name)
        self.module.no_log_values.update(secret_parts(host_key))
        return host_key

    def pin_found(self, nodes, check_mode=False):
        """Pin, from their TAG_HOST_KEY tags, the nodes that the known_hosts file has no line for (a cluster made by
        another controller); nothing without known_hosts. True when the file changed (would change, in check mode)."""
        if not self.known_hosts():
            return False
        have = pinned(self.known_hosts())
        found = dict((node.name, resource_tags(node).get(TAG_HOST_KEY)) for node in nodes if node.name not in have)
        found = dict((name, key) for name, key in found.items() if key)
        if check_mode:
            return bool(found)
        return record(self.known_hosts(), found)

    def create(self, resolved, plan, spot=None, places=None):
        """Create the planned nodes of every role at once, each role's of its first size in its first zone; a role the
        cloud refused there for capacity (ROUTABLE_REFUSALS) goes to its next zone or size (next_place), the nodes of
        the roles that move destroyed and those of the others kept. On any other failure, or with no zone or size
        left, destroy what this run created, then fail.

        `places`: resolve_places(). Returns the nodes created, the refusals routed around ({role, size, zone,
        refusal, why}) and where each role's new nodes went ({role: {size, zone}}).
        With user_data.known_hosts each node gets a host key of its own in its user-data, pinned in that file as soon
        as the nodes exist (before the wait, which may fail and leave them).
        """
        places = places or dict((role, ([args['size']], [args.get('location')])) for role, args in resolved.items())
        spread = self.params['spread_zones']
        placement = dict((role, (0, 0)) for role in resolved)
        made, routed, host_keys = {}, [], {}
        while True:
            todo = dict((role, dict(args, size=places[role][0][placement[role][0]]))
                        for role, args in resolved.items() if role not in made)
            for role, args in todo.items():
                zone = places[role][1][placement[role][1]]
                args.pop('location', None)
                if zone is not None:
                    args['location'] = zone
            by_role, failures = self.create_roles(todo, plan, spot, host_keys)
            failed = list(dict.fromkeys(role for role, index, error in failures))
            made.update((role, nodes) for role, nodes in by_role.items() if role not in failed)
            if not failures:
                break
            partial = [node for role in failed for node in by_role.get(role, [])]
            attempts = dict((role, self.attempt(role, args, spot)) for role, args in todo.items())
            errors = dict((role, error) for role, index, error in reversed(failures))
            kinds = dict((role, self.refusal_kind(error)) for role, error in errors.items())
            moved = placement
            if all(kind in ROUTABLE_REFUSALS for kind in kinds.values()):
                # Without spread the first refused role moves the whole cluster, the others with it.
                for role in failed if spread else failed[:1]:
                    moved = next_place(moved, role, len(places[role][1]), len(places[role][0]), spread)
                    if moved is None:
                        break
                    routed.append(dict(role=role, size=attempts[role].size, zone=attempts[role].zone,
                                       refusal=kinds[role],
                                       why=explain_error(self.params['provider'], errors[role], attempts[role])))
            if moved is placement or moved is None:
                self.rollback(failures, [node for nodes in made.values() for node in nodes] + partial, attempts,
                              routed)
            leaving = partial + [node for role, nodes in made.items() if moved[role] != placement[role]
                                 for node in nodes]
            made = dict((role, nodes) for role, nodes in made.items() if moved[role] == placement[role])
            self.destroy_moved(leaving, [node for nodes in made.values() for node in nodes], routed)
            placement = moved
        created = [node for nodes in made.values() for node in nodes]
        if self.known_hosts() and created:
            record(self.known_hosts(), dict((node.name, host_keys[node.name].public) for node in created))
        placed = dict((role, dict(size=str(places[role][0][size].id),
                                  zone=getattr(places[role][1][zone], 'name', None) or self.params['region']))
                      for role, (size, zone) in placement.items())
        return created, routed, placed

    def create_roles(self, resolved, plan, spot, host_keys):
        """Create the planned nodes of these roles at once: ({role: the nodes created}, [(role, index, error)] for
        each node that failed). `host_keys` gains the host key of each node made with one."""
        known_hosts = self.known_hosts()
        planned, requests = [], []
        for role, base_args in resolved.items():
            host_key = None
            if known_hosts and plan[role]['create']:
                host_key = self.new_host_key('%s-%s' % (self.cluster, role))
            for index in plan[role]['create']:
                name = node_name(self.cluster, role, index)
                tags = node_tags(self.cluster, role, index)
                if self.params['owner']:
                    tags[TAG_OWNER] = self.params['owner']
                if role in (spot or {}):
                    tags[TAG_SPOT] = 'true'
                if host_key and provider_of(self.driver.type).tags_hold_keys:
                    tags[TAG_HOST_KEY] = ' '.join(host_key.public.split()[:2])
                request = dict(base_args, name=name, **tag_create_kwargs(self.driver, tags, base_args))
                if host_key:
                    host_keys[name] = host_key
                    request.update(user_data_kwargs(self.driver, self.params['user_data'], request,
                                                    host_key=host_key))
                planned.append((role, index))
                requests.append(request)
        results = create_nodes(self.driver, self.connect, requests)
        by_role, failures = {}, []
        for (role, index), request, result in zip(planned, requests, results):
            if isinstance(result, Exception):
                failures.append((role, index, result))
                continue
            by_role.setdefault(role, []).append(result)
            if result.name != request['name']:
                # A node under another name could not be found again: every run would add one.
                failures.append((role, index, 'the driver named it %r, so later runs could not find it' % result.name))
        return by_role, failures

    def refusal_kind(self, error):
        """The class of a create's failure (REFUSALS), None for one that is not the cloud's (a node misnamed)."""
        return classify_error(self.params['provider'], error).kind if isinstance(error, Exception) else None

    def destroy_moved(self, nodes, kept, routed):
        """Destroy the nodes this run created where their role no longer goes (a refusal routed around); fails, with
        what stays and what could not be destroyed, when the cloud will not destroy them."""
        if not nodes:
            return
        errors = destroy_nodes(self.connect, nodes)
        left = ['%s (%s)' % (node.name, error) for node, error in zip(nodes, errors) if error is not None]
        if left:
            self.fail('Could not destroy %s, created before a refusal sent their role elsewhere: remove them by hand'
                      % ', '.join(left), created=kept, routed=routed)

    def attempt(self, role, args, spot):
        """The Attempt (_provider.py) of a role's create: its size, and the zone its location names, else the region."""
        size, location = args.get('size'), args.get('location')
        return Attempt(role, getattr(size, 'id', size), getattr(location, 'name', None) or self.params['region'],
                       role in (spot or {}))

    def rollback(self, failures, created, attempts, routed=()):
        """Destroy what this run created, then fail naming each failure: a cloud's refusal by its class (explain_error),
        once per role with the nodes it kept from being, and that class as the result's `refusal`."""
        lines, refusal = {}, None
        for role, index, error in failures:
            name = node_name(self.cluster, role, index)
            kind = self.refusal_kind(error)
            refusal = refusal or kind
            if kind not in (None, 'unknown'):
                lines.setdefault(explain_error(self.params['provider'], error, attempts[role]), []).append(name)
            else:
                # Some libcloud errors print as '': the type then says what went wrong.
                lines['Failed to create %s (role %s, index %d): %s'
                      % (name, role, index, error or type(error).__name__)] = []
        msg = '; '.join(line + (' (not created: %s)' % ', '.join(names) if names else '')
                        for line, names in lines.items())
        errors = destroy_nodes(self.connect, created)
        left = ['%s (%s)' % (node.name, error) for node, error in zip(created, errors) if error is not None]
        msg += '. Destroyed the %d node(s) this run had created' % (len(created) - len(left))
        if left:
            msg += '; could not destroy %s: remove them by hand' % ', '.join(left)
        self.fail(msg, routed=list(routed), **({'refusal': refusal} if refusal else {}))

    def release_stopped(self, nodes):
        """Where a destroy failed: the nodes of `nodes` that are powered off yet still billed (on Azure) released
        instead, as '; deallocated NAMES ...' for the message ('' when none)."""
        try:
            released = release_stopped(self.driver, nodes)
        except Exception as e:  # the failed destroy is the error to report; this one is said with it
            return '; could not deallocate them either: %s' % explain_error(self.params['provider'], e)
        if not released:
            return ''
        return ('; deallocated %s instead (powered off, still billed for compute until deallocated)'
                % ', '.join(node.name for node in released))

    def start(self, nodes, created):
        """Start the cluster's stopped nodes; returns them."""
        for node in nodes:
            try:
                self.driver.start_node(node)
            except Exception as e:
                self.fail('Could not start the stopped node %s: %s' % (node.name, e), created=created)
        return nodes

    def wait(self, nodes, created):
        """The nodes, refreshed once running with an address (and answering on wait_for_port)."""
        timeout = self.params['wait_timeout']
        deadline = time.monotonic() + timeout
        try:
            ready = [node for node, ips in self.driver.wait_until_running(
                nodes, wait_period=WAIT_PERIOD, timeout=timeout, ssh_interface=self.params['address'] + '_ips')]
        except Exception as e:
            self.fail('Nodes %s did not reach running with a %s address: %s'
                      % (', '.join(n.name for n in nodes), self.params['address'], e), created=created)
        port = self.params['wait_for_port']
        if port:
            silent = [n.name for n in ready if not wait_for_port(self.to_dict(n)['address'], port, deadline)]
            if silent:
                self.fail('Timed out after %d seconds waiting for port %d on %s' % (timeout, port, ', '.join(silent)),
                          created=created)
        return ready

    def run(self):
        params = self.params
        present = params['state'] == 'present'
        spot = spot_roles(self.driver, params['roles']) if present else {}
        current = self.current_nodes()
        plan = make_plan(current, params['roles'], params['state'])
        # Sizes are listed once when the cluster has nodes, for the sizes to create and for the plan's prices.
        sizes = self.driver.list_sizes() if present and any(spec['count'] > 0 for spec in params['roles']) else None
        resolved, chosen = (resolve_create_args(self.driver, params['roles'], plan, params['access'], sizes, spot,
                                                params['user_data'])
                            if present else ({}, {}))
        to_remove = [node for role in plan for node, identity in plan[role]['remove']]
        removed_ids = set(node.id for node in to_remove)
        # The zones and sizes each role's new nodes may go to, in order of preference.
        places = pin_zones(resolve_places(self.driver, params['roles'], resolved, params['zones'], sizes),
                           [pair for pair in current if pair[0].id not in removed_ids], params['spread_zones'])
        kept = [node for node, identity in current if node.id not in removed_ids]
        # Present means running: a stopped node of the cluster (a stopped VM or container) is started again.
        to_start = [node for node in kept if node.state in STARTABLE_STATES] if params['state'] == 'present' else []
        changed = bool(to_remove) or bool(to_start) or any(plan[role]['create'] for role in plan)

        # Pending nodes of the cluster, such as those of an interrupted run, are waited for too.
        pending_kept = [node for node in kept if node.state == 'pending']
        created, removed, started, routed, placed = [], [], [], [], {}
        if self.module.check_mode:
            kept = [node for node, identity in current]  # nothing is removed in check mode
            changed = self.pin_found(kept, check_mode=True) or changed
        else:
            if changed:
                created, routed, placed = self.create(resolved, plan, spot, places)
            started = self.start(to_start, created)
            # A cluster made by another controller: its nodes' host keys, pinned here from their tags.
            changed = self.pin_found(kept) or changed
            pending = created + started + pending_kept
            if params['wait'] and pending:
                fresh = dict((node.id, node) for node in self.wait(pending, created))
                created = [fresh.get(node.id, node) for node in created]
                kept = [fresh.get(node.id, node) for node in kept]
            removed = self.remove(to_remove, created, staying=kept + created)
        leftovers = [] if present else self.destroy_leftovers(removed)
        changed = changed or bool(leftovers)

        nodes = sorted((self.to_dict(node) for node in kept + created),
                       key=lambda n: (cluster_order(n['role'], n['index']), n['id']))
        result = dict(
            changed=changed,
            nothing_to_do=not changed and not pending_kept,
            created=[self.to_dict(node) for node in created],
            removed=[self.to_dict(node) for node in removed],
            removed_leftovers=leftovers,
            started=[self.to_dict(node) for node in (to_start if self.module.check_mode else started)],
            nodes=nodes,
            plan=self.plan_names(plan, chosen),
        )
        if present:
            cost = self.price_plan(result['plan'], spot, sizes, chosen, places)
            result.update(routed=routed, placed=placed, cost=cost)
        if self.module._diff:
            planned = set(node.name for node, identity in current if node.id not in removed_ids)
            planned.update(name for role in plan for name in result['plan'][role]['to_create'])
            result['diff'] = dict(before=dict(nodes=sorted(node.name for node, identity in current)),
                                  after=dict(nodes=sorted(planned)))
        self.module.exit_json(**result)

    def current_nodes(self):
        """[(node, identity)] of the cluster: its nodes that are not terminated (they linger in some clouds' listings,
        EC2's, but are gone for good) and are this controller's (another controller's nodes of a cluster of the same
        name are not this cluster's: _owner.py)."""
        return [pair for pair in list_cluster_nodes(self.driver, self.cluster) if pair[0].state != 'terminated'
                and is_own(resource_tags(pair[0]).get(TAG_OWNER), self.params['owner'], self.params['own_unmarked'])]

    def remove(self, nodes, created, staying):
        """Destroy these nodes; those destroyed, their host keys forgotten. Fails naming those that could not be
        destroyed (released instead where they are powered off yet billed)."""
        if not nodes:
            return []
        errors = destroy_nodes(self.connect, nodes)
        removed = [node for node, error in zip(nodes, errors) if error is None]
        failed = ['%s (%s)' % (node.name, error) for node, error in zip(nodes, errors) if error is not None]
        if failed:
            left = [node for node, error in zip(nodes, errors) if error is not None]
            self.fail('Failed to destroy %s%s' % (', '.join(failed), self.release_stopped(left)),
                      created=created, removed=removed)
        if self.known_hosts():
            # A removed duplicate may share its name with a node that stays (staying): that node's line stays too.
            names = set(node.name for node in staying)
            record(self.known_hosts(), {}, forget=[node.name for node in removed if node.name not in names])
        return removed

    def destroy_leftovers(self, removed):
        """What a cloud of tfdist's own driver (docker) held of the cluster besides its nodes, removed once they are
        gone (none elsewhere)."""
        if not hasattr(self.driver, 'ex_destroy_leftovers'):
            return []
        try:
            leftovers = self.driver.ex_destroy_leftovers(self.cluster, check_mode=self.module.check_mode)
        except TfdistCloudError as e:
            self.fail('Failed to remove what cluster %s left: %s' % (self.cluster, e), removed=removed)
        return leftovers

    def price_plan(self, plan_names, spot, sizes, chosen, places):
        """The cluster's cost (cluster_cost); adds each role's spot, price and zones to its entry of plan_names."""
        params = self.params
        prices = role_prices(params['roles'], sizes, chosen)
        for spec in params['roles']:
            price, source = prices.get(spec['role'], (None, None))
            plan_names[spec['role']].update(spot=spec['role'] in spot, price=price, price_source=source)
            # A role's zones as pin_zones left them: those of the cluster's running nodes, else the option's.
            zones = [zone.name for zone in places[spec['role']][1]] if spec['role'] in places and params['zones'] \
                else params['zones']
            zone, fallbacks = preference(spec, zones)
            if zone or fallbacks:
                plan_names[spec['role']].update(zone=zone, fallbacks=fallbacks)
        return cluster_cost([dict(role=spec['role'], count=spec['count'], spot=spec['role'] in spot,
                                  price=plan_names[spec['role']]['price'],
                                  price_source=plan_names[spec['role']]['price_source'],
                                  size=chosen[spec['role']]['size'].id if spec['role'] in chosen else spec['size'])
                             for spec in params['roles']])

    def plan_names(self, plan, chosen=None):
        names = dict((role, dict(to_create=[node_name(self.cluster, role, index) for index in item['create']],
                                 to_remove=[node.name for node, identity in item['remove']]))
                     for role, item in plan.items())
        for role, choice in (chosen or {}).items():
            names[role].update(size=str(choice['size'].id), size_reason=choice['reason'])
        return names


# The module's options.
ARGUMENT_SPEC = dict(
    connection_argument_spec(),
    cluster=dict(type='str', required=True),
    state=dict(type='str', default='present', choices=['present', 'absent']),
    roles=dict(type='list', elements='dict', default=[], options=dict(
        role=dict(type='str', required=True, choices=list(TASK_TYPES)),
        count=dict(type='int', required=True),
        size=dict(type='raw'),
        constraints=dict(type='dict', options=dict(
            cpus=dict(type='int'),
            memory=dict(type='str'),
            gpus=dict(type='int'),
            source=dict(type='str'),
        )),
        image=dict(type='str'),
        location=dict(type='str'),
        create_args=dict(type='dict', default={}),
        spot=dict(type='bool', default=False),
        price_per_hour=dict(type='float'),
    )),
    zones=dict(type='list', elements='str', default=[]),
    spread_zones=dict(type='bool', default=False),
    wait=dict(type='bool', default=True),
    wait_timeout=dict(type='int', default=600),
    wait_for_port=dict(type='int'),
    address=dict(type='str', default='public', choices=['public', 'private']),
    access=dict(type='dict', default={}),
    owner=dict(type='str'),
    own_unmarked=dict(type='bool', default=False),
    user_data=dict(type='dict', options=dict(
        user=dict(type='str', required=True),
        public_key=dict(type='str', required=True, no_log=False),
        known_hosts=dict(type='path'),
    )),
)


def run_module(module):
    """The module's work, on what it uses of AnsibleModule (params, check_mode, _diff, exit_json, fail_json): the
    module's process, or the controller's own where the action runs it (plugins/action/libcloud_node.py)."""
    try:
        validate_cluster_name(module.params['cluster'])
        validate_roles(module.params['roles'])
        ClusterNodes(module).run()
    except (TfdistCloudError, ClusterError) as e:
        module.fail_json(msg=str(e))
    except Exception as e:  # libcloud raises many types (auth, HTTP, network); report them all plainly
        module.fail_json(msg=explain_error(module.params['provider'], e), exception=traceback.format_exc(),
                         refusal=classify_error(module.params['provider'], e).kind)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    if not HAS_LIBCLOUD:
        module.fail_json(msg=missing_required_lib('apache-libcloud'), exception=LIBCLOUD_IMPORT_ERROR)
    run_module(module)


if __name__ == '__main__':
    main()
