#!/usr/bin/python
# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r'''
module: libcloud_audit
short_description: List what of tfdist's clusters a cloud still holds (the leak audit)
version_added: 0.5.0
description:
  - Lists, through libcloud, every resource on the cloud that carries a tfdist cluster's tag (C(tfdist_cluster)) or,
    where the cloud keeps no tags on that kind of resource, a tfdist name (C(tfdist-{cluster})). Read-only, but for
    one thing on V(azure_arm) (below).
  - Nodes, those of the cluster (tagged C(tfdist_cluster) and C(tfdist_role), or named
    C({cluster}-{role}-{index}) on drivers without tags) and any other node tagged with a cluster, such as a
    helper machine tagged by hand. Terminated nodes are left out.
  - Volumes tagged with a cluster, or named after a node of one (C({cluster}-{role}-{index}), as the boot disks of
    V(gce) and V(azure_arm) are), on drivers that list volumes. V(gce) nodes and disks are looked for in every zone.
    On V(ec2) a volume that its node deletes on termination is the node's, not listed apart.
  - V(ec2) key pairs and security groups tagged C(tfdist_cluster) or named C(tfdist-{cluster}), and network interfaces
    tagged C(tfdist_cluster) that would outlive their node (tfdist tags a node's volumes and interfaces at creation
    with the node's tags). Credentials without the permission C(ec2:DescribeNetworkInterfaces) leave the interfaces
    out, and RV(unchecked) says so; the rest of the audit goes on.
  - V(openstack) key pairs and security groups named C(tfdist-{cluster}) (OpenStack tags neither), the ports (network
    interfaces) in such a group, and the floating IPs on those ports.
  - V(gce) firewall rules C(tfdist-{cluster}-ssh) and C(tfdist-{cluster}-internal) (firewalls carry no labels).
  - V(azure_arm) network security groups tagged or named C(tfdist-{cluster}) in the resource group C(resource_group) of O(options),
    subnets C(tfdist-{cluster}) of its virtual network C(network), and network interfaces on such a subnet or named
    C({cluster}-{role}-{index}-nic) (libcloud makes one before each VM; a VM that was never made leaves it).
  - V(docker) containers (the nodes) and the cluster networks C(tfdist-{cluster}), labelled C(tfdist.managed=true).
  - V(azure_arm) nodes powered off from inside (tfdist's idle guard does it when a job is over) but still allocated,
    which Azure bills as if they ran, are named in RV(report); those of this controller's clusters (O(known_clusters),
    or O(clusters) without it) are deallocated (RV(deallocated)), the one change the audit makes. Their disks stay,
    and are billed until destroy.
  - With O(owner), each resource is this controller's or another's by its owner's mark (its C(tfdist_owner) tag, or
    the last part of its name, C(tfdist-{cluster}-{owner})). Another controller's clusters are listed as such
    (RV(resources[].standing)), never as orphans. A resource without a mark (made before version 0.5.0) is this
    controller's only where its cluster is in O(known_clusters) or in O(own_unmarked).
  - With O(known_clusters), a cluster of this controller that is not in it is an orphan (RV(orphans)), for example
    what an interrupted run left. Remove orphans with C(playbooks/audit.yml -e remove_orphans=true), which
    removes them as C(playbooks/destroy.yml) does.
  - Without O(clusters), also the images tfdist baked (M(tfdist.cluster.libcloud_image), tagged C(tfdist_image)) on
    V(ec2), V(gce) and V(docker), as RV(images). They belong to no cluster - they are the user's, kept, never among
    RV(resources) and never removed (version 0.5.0).
author: tfdist maintainers (@tfdist)
extends_documentation_fragment:
  - tfdist.cluster.attributes
  - tfdist.cluster.attributes.action
  - tfdist.cluster.attributes.action_here
  - tfdist.cluster.libcloud
attributes:
  check_mode:
    support: full
    details: The module only reads, but for the deallocation of powered-off V(azure_arm) nodes, which check mode
      reports without making.
  diff_mode:
    support: none
  idempotent:
    support: full
options:
  clusters:
    description: Only the resources of these clusters. All tfdist clusters when empty.
    type: list
    elements: str
    default: []
  known_clusters:
    description:
      - The clusters that have an inventory source on this controller. Any other cluster found is an orphan.
      - When not set, no cluster is called an orphan (RV(orphans) is empty, RV(resources[].orphan) null).
    type: list
    elements: str
  owner:
    description:
      - The id of this controller (the P(tfdist.cluster.controller_id#lookup) lookup).
      - Unset, every resource found counts as this controller's (as before version 0.5.0).
    type: str
    version_added: 0.5.0
  own_unmarked:
    description:
      - Clusters whose resources without an owner's mark are this controller's even without an inventory source here
        (the user names them as theirs).
    type: list
    elements: str
    default: []
    version_added: 0.5.0
  cloud:
    description: The cloud's name in RV(untouched) (the cloud profile, for example V(aws)); default O(provider).
    type: str
    version_added: 0.5.0
  options:
    description:
      - Cloud-specific placement, as for M(tfdist.cluster.libcloud_access). V(ec2) C(vpc_id) (only security groups
        of that VPC). V(azure_arm) C(resource_group) and C(network), both required.
    type: dict
    default: {}
notes:
  - One C(list_nodes) call (two on V(azure_arm)), one volume listing, and the cloud's key pair and firewall listings
    (two calls on EC2); without O(clusters), one image listing.
  - Credentials that may list but not describe some kind of resource leave that kind out; RV(unchecked) says which.
'''

EXAMPLES = r'''
- name: Every tfdist resource on EC2, orphans marked
  tfdist.cluster.libcloud_audit:
    provider: ec2
    region: eu-west-1
    known_clusters: [demo]
  register: audit

- name: What is left of cluster demo
  tfdist.cluster.libcloud_audit:
    provider: ec2
    region: eu-west-1
    clusters: [demo]
  register: left

- name: Stop when something of it is left
  ansible.builtin.fail:
    msg: "left on the cloud: {{ left.resources | map(attribute='description') | join(', ') }}"
  when: left.resources | length > 0
'''

RETURN = r'''
resources:
  description: What was found, by cluster, then kind (nodes first), then name.
  returned: always
  type: list
  elements: dict
  contains:
    kind:
      description:
        - V(node), V(volume), V(network interface), V(floating IP), V(network), V(key pair), V(security group), V(firewall rule),
          V(network security group) or V(subnet).
      type: str
      sample: security group
    id:
      description: The cloud's id (a key pair's name on clouds without key pair ids).
      type: str
      sample: sg-0123456789abcdef0
    name:
      description: The resource's name.
      type: str
      sample: tfdist-demo
    cluster:
      description: The cluster it belongs to.
      type: str
      sample: demo
    description:
      description: Kind, name and id in one phrase.
      type: str
      sample: security group tfdist-demo (sg-0123456789abcdef0)
    orphan:
      description: Whether it is this controller's and its cluster has no inventory source here; null without O(known_clusters).
      type: bool
      sample: true
    owner:
      description: Its owner's mark (a controller's id, or the part of one in its name); null without one.
      type: str
      sample: 1f3a2b
      version_added: 0.5.0
    standing:
      description:
        - Whose it is. V(mine) (this controller's, with an inventory source here or without O(known_clusters)),
          V(orphan) (this controller's, no inventory source here), V(unmarked) (no owner's mark and no inventory
          source here, whose is unknown) or V(another owner).
      type: str
      sample: another owner
      version_added: 0.5.0
clusters:
  description: The clusters found, sorted.
  returned: always
  type: list
  elements: str
  sample: [demo, old]
orphans:
  description: The clusters with resources of this controller that are not in O(known_clusters), sorted.
  returned: always
  type: list
  elements: str
  sample: [old]
untouched:
  description:
    - What destroy and C(remove_orphans) leave alone, one line per cluster and owner - another controller's
      clusters, and resources without an owner's mark that are not this controller's.
  returned: always
  type: list
  elements: str
  sample: ["cluster demo on aws belongs to another controller (owner 1f3a2b...): not touched"]
  version_added: 0.5.0
images:
  description: The images tfdist baked, kept as the user's; listed only without O(clusters), sorted by name.
  returned: always
  type: list
  elements: dict
  version_added: 0.5.0
  contains:
    id:
      description: The cloud's id of the image.
      type: str
      sample: ami-0123456789abcdef0
    name:
      description: The image's name.
      type: str
      sample: tfdist-aws-20261128-120000
    reference:
      description: What a cloud profile's role image names it by (the id; the name on V(gce)).
      type: str
      sample: ami-0123456789abcdef0
    tensorflow:
      description: The TensorFlow baked in.
      type: str
      sample: 2.21.0
    cuda:
      description: The CUDA toolkit baked in, V(none) without one.
      type: str
      sample: none
    tags:
      description: Every tag of the image.
      type: dict
      sample: {"tfdist_image": "tfdist-aws-20261128-120000", "tfdist_tensorflow": "2.21.0", "tfdist_cuda": "none"}
    description:
      description: The image in one phrase.
      type: str
      sample: image tfdist-aws-20261128-120000 (ami-0123456789abcdef0)
report:
  description:
    - One line per cluster (and per owner of a name several controllers use) naming its resources (orphans and other
      owners' clusters say so), then one line naming the baked images kept.
  returned: always
  type: list
  elements: str
  sample: ["old (ORPHAN: no inventory source on this controller): node old-worker-0 (i-0123), key pair tfdist-old"]
deallocated:
  description:
    - The names of the nodes of this controller's clusters that were powered off but still allocated (V(azure_arm)),
      deallocated by this run (in check mode, those it would deallocate).
  returned: always
  type: list
  elements: str
  sample: [demo-worker-0]
  version_added: 0.5.0
unchecked:
  description:
    - What could not be listed on this cloud, and why, one line each. Where the credentials may not list a kind of
      resource, the line names the permission missing.
  returned: always
  type: list
  elements: str
  sample: ["network interfaces: the credentials may not list them (permission ec2:DescribeNetworkInterfaces missing):
    UnauthorizedOperation: You are not authorized to perform this operation."]
'''

import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.tfdist.cluster.plugins.module_utils._audit import (
    MINE,
    baked_images,
    find,
    images_report,
    orphans,
    report,
    standing,
    to_dict,
    untouched,
)
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._cluster import ClusterError, validate_cluster_name
from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import (
    HAS_LIBCLOUD,
    LIBCLOUD_IMPORT_ERROR,
    TfdistCloudError,
    connection_argument_spec,
    explain_error,
    get_driver,
    release_own_stopped,
)


ARGUMENT_SPEC = dict(
    connection_argument_spec(),
    clusters=dict(type='list', elements='str', default=[]),
    known_clusters=dict(type='list', elements='str'),
    owner=dict(type='str'),
    own_unmarked=dict(type='list', elements='str', default=[]),
    cloud=dict(type='str'),
    options=dict(type='dict', default={}),
)


def stopped_report(billed, released, check_mode):
    """A line per node powered off yet billed: deallocated (or, in check mode, to be), or someone else's."""
    done = 'would be deallocated (check mode)' if check_mode else 'deallocated'
    return ['node %s was powered off but still allocated, billed as if it ran: %s'
            % (node.name, done if node in released else "not this controller's cluster, left as it is")
            for node in billed]


def run_module(module):
    """The module's work, on what it uses of AnsibleModule (params, exit_json, fail_json): the module's process, or
    the controller's own where the action runs it (plugins/action/libcloud_audit.py)."""
    params = module.params
    try:
        for n, cluster in enumerate(params['clusters']):
            validate_cluster_name(cluster, 'clusters[%d]' % n)
        driver = get_driver(params['provider'], params['region'], params['credentials'], params['driver_options'])
        found, unchecked = find(driver, params['clusters'], params['options'])
        # Images belong to no cluster: only an audit of every cluster looks for them.
        images, images_unchecked = baked_images(driver) if not params['clusters'] else ([], [])
        # Azure bills a VM powered off from inside until it is deallocated: the audit releases this controller's own.
        own = set(r.id for r in found if r.kind == 'node' and standing(
            r, params['owner'], params['known_clusters'] if params['known_clusters'] is not None else params['clusters'],
            params['own_unmarked']) == MINE)
        billed, released = release_own_stopped(driver, params['clusters'], own, module.check_mode)
    except (TfdistCloudError, ClusterError) as e:
        module.fail_json(msg=str(e))
    except Exception as e:  # libcloud raises many types (auth, HTTP, network); report them all plainly
        module.fail_json(msg=explain_error(params['provider'], e), exception=traceback.format_exc())
    known, owner, named = params['known_clusters'], params['owner'], params['own_unmarked']
    module.exit_json(
        changed=bool(released),
        resources=[to_dict(r, known, owner, named) for r in found],
        clusters=sorted(set(r.cluster for r in found)),
        orphans=orphans(found, known, owner, named) if known is not None else [],
        untouched=untouched(found, params['cloud'] or params['provider'], owner, known, named),
        images=images,
        report=report(found, known, owner, named) + images_report(images) + stopped_report(billed, released, module.check_mode),
        deallocated=[node.name for node in released],
        unchecked=unchecked + images_unchecked,
    )


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    if not HAS_LIBCLOUD:
        module.fail_json(msg=missing_required_lib('apache-libcloud'), exception=LIBCLOUD_IMPORT_ERROR)
    run_module(module)


if __name__ == '__main__':
    main()
