# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r'''
name: to_radl
author: tfdist maintainers (@tfdist)
short_description: RADL text for a cluster shape
version_added: 0.2.0
description:
  - Writes a cluster shape, as the P(tfdist.cluster.radl#lookup) lookup returns it, as RADL (the language of the
    Infrastructure Manager). The text reads back through the lookup to the same counts, nodes, cloud, region and ports.
  - A public network with the O(_input.ports) as C(outports), a private network, one C(system) per role with nodes
    (C(instance_type), C(disk.0.image.url) in the IM form, C(gpu.count) when above 0, the chief on both networks
    and the others on the private one only; without a chief the workers take its place) and a C(deploy) line per
    role.
  - What the IM needs to make the VMs a TF cluster itself. Every system asks for the application
    C(ansible.collections.tfdist.cluster) with the O(collection_version), which the IM installs with
    C(ansible-galaxy) on its master. C(configure) recipes (lists of plays without C(hosts:), which the IM adds) run
    the roles P(tfdist.cluster.tensorflow#role) on every system, P(tfdist.cluster.hdfs#role) on the chief and
    workers when O(_input.hdfs) is true, and P(tfdist.cluster.training#role) on every system, in C(contextualize)
    steps 1, 2 and 3. The IM names its inventory groups after the systems (C(chief), C(worker), C(ps),
    C(evaluator)), where the roles look for the cluster's layout.
  - The cloud, region and endpoint are written only inside image URLs, so a shape without images keeps none of them.
  - A node C(size) that lists sizes in order of preference is written as its first; the lookup's C(zones) are not
    written.
options:
  _input:
    description: The cluster shape.
    type: dict
    required: true
    suboptions:
      chief:
        version_added: 0.5.0
        description: Number of chiefs, 1 or 0 (then worker 0 leads the cluster and the RADL has no chief system).
        type: int
        default: 1
        choices: [0, 1]
      workers:
        description: Number of workers.
        type: int
        required: true
      ps:
        description: Number of parameter servers.
        type: int
        default: 0
      evaluators:
        description: Number of evaluators.
        type: int
        default: 0
      nodes:
        description:
          - Role to C(size), C(image) and C(gpus) of its nodes; each may be missing, as may whole roles.
          - Entries of roles with no nodes are left out.
        type: dict
        default: {}
      cloud:
        description: Needed when a node has an image, to write its URL.
        type: str
        choices: [aws, gce, azure, openstack, docker]
      region:
        description: The AWS region or GCE zone; needed for C(aws) and C(gce) images.
        type: str
      endpoint:
        description: The OpenStack server, C(SERVER[:PORT]); needed for C(openstack) images.
        type: str
      ports:
        description: Inbound ports, ints or IM outports strings such as C(8000:8010/tcp) or C(53/udp).
        type: list
        elements: raw
        default: [22]
      source:
        description: Where the shape came from; written in the header comment.
        type: str
      hdfs:
        version_added: 0.5.0
        description: Whether the cluster runs HDFS; adds the C(hdfs) configure step. The lookup does not read it back.
        type: bool
        default: false
  collection_version:
    version_added: 0.5.0
    description:
      - The version of C(tfdist.cluster) that the IM installs on the systems, dotted numbers such as V(1.2.0).
      - Defaults to the version of the collection this filter comes from (its C(MANIFEST.json), or C(galaxy.yml) in
        a source checkout); none found, the application names no version.
    type: str
'''

EXAMPLES = r'''
- name: Keep the shape of the cluster, edited, as RADL
  ansible.builtin.copy:
    content: >-
      {{ lookup('tfdist.cluster.radl', 'radl/ps1-workers2.radl') | combine({'workers': 4})
         | tfdist.cluster.to_radl }}
    dest: radl/ps1-workers4.radl
    mode: "0644"

- name: The classic cluster, 1 ps and 2 workers without a chief, with HDFS, for a given release of tfdist
  ansible.builtin.debug:
    msg: "{{ {'chief': 0, 'workers': 2, 'ps': 1, 'hdfs': true} | tfdist.cluster.to_radl(collection_version='1.0.0') }}"

- name: RADL from scratch, for the Infrastructure Manager
  ansible.builtin.debug:
    msg: >-
      {{ {'workers': 2, 'cloud': 'aws', 'region': 'us-east-1',
          'nodes': {'worker': {'size': 'g5.xlarge', 'image': 'ami-0abc', 'gpus': 1}}} | tfdist.cluster.to_radl }}
'''

RETURN = r'''
_value:
  description: RADL text, ending with a newline.
  type: str
'''

import json
import os

from ansible.errors import AnsibleFilterError

from ansible_collections.tfdist.cluster.plugins.module_utils._radl import TfdistRadlError, dump_cluster

# The collection's root: plugins/filter/radl.py -> ../..
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def own_version(root=ROOT):
    """The version of the collection at `root`: MANIFEST.json when installed, galaxy.yml in a checkout; else None."""
    try:
        with open(os.path.join(root, 'MANIFEST.json'), encoding='utf-8') as f:
            return str(json.load(f)['collection_info']['version'])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        with open(os.path.join(root, 'galaxy.yml'), encoding='utf-8') as f:
            for line in f:
                if line.startswith('version:'):
                    return line.split(':', 1)[1].split('#')[0].strip().strip('"\'') or None
    except OSError:
        pass
    return None


def to_radl(cluster, collection_version=None):
    if collection_version is None:
        collection_version = own_version()
    try:
        return dump_cluster(cluster, collection_version=collection_version)
    except TfdistRadlError as e:
        raise AnsibleFilterError(str(e)) from None


class FilterModule:
    def filters(self):
        return {'to_radl': to_radl}
