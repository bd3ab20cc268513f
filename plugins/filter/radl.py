# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r'''
name: to_radl
author: tfdist maintainers (@tfdist)
short_description: RADL text for a cluster shape
description:
  - Writes a cluster shape, as the P(tfdist.cluster.radl#lookup) lookup returns it, as RADL (the language of the
    Infrastructure Manager). The text reads back through the lookup to the same counts, nodes, cloud, region and ports.
  - A public network with the O(_input.ports) as C(outports), a private network, one C(system) per role with nodes
    (C(instance_type), C(disk.0.image.url) in the IM form, C(gpu.count) when above 0, the chief on both networks
    and the others on the private one only) and a C(deploy) line per role.
  - The cloud, region and endpoint are written only inside image URLs, so a shape without images keeps none of them.
options:
  _input:
    description: The cluster shape.
    type: dict
    required: true
    suboptions:
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
'''

EXAMPLES = r'''
- name: Keep the shape of the cluster, edited, as RADL
  ansible.builtin.copy:
    content: >-
      {{ lookup('tfdist.cluster.radl', 'radl/ps1-workers2.radl') | combine({'workers': 4})
         | tfdist.cluster.to_radl }}
    dest: radl/ps1-workers4.radl
    mode: "0644"

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

from ansible.errors import AnsibleFilterError

from ansible_collections.tfdist.cluster.plugins.module_utils._radl import TfdistRadlError, dump_cluster


def to_radl(cluster):
    try:
        return dump_cluster(cluster)
    except TfdistRadlError as e:
        raise AnsibleFilterError(str(e)) from None


class FilterModule:
    def filters(self):
        return {'to_radl': to_radl}
