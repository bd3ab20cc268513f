# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r'''
name: radl
author: tfdist maintainers (@tfdist)
short_description: The cluster shape that a RADL file describes
version_added: 0.2.0
description:
  - Reads a RADL file (the language of the Infrastructure Manager) and returns the shape of the TensorFlow cluster
    it describes, one dict per file, ready for the deploy playbooks or for the P(tfdist.cluster.to_radl#filter) filter.
  - Each C(system) is one TF role, by its name (C(chief), C(worker), C(ps), C(evaluator)) or, for a system named
    otherwise, by its C(tfdist.role) feature. Its C(instance_type) is the node size, or a list of sizes in order of
    preference (C(instance_type = ['g4dn.xlarge', 'g5.xlarge'])), C(disk.0.image.url) the image, the lower bound of
    C(gpu.count) the GPUs per node.
  - C(availability_zone), one zone or a list in order of preference (C(availability_zone = ['us-east-1a',
    'us-east-1b'])), gives the cluster's zones, as the cloud profile's C(libcloud_zones) does. tfdist keeps a cluster
    in one zone, so the systems that name zones must name the same ones in the same order; systems that name none
    follow them.
  - C(deploy SYSTEM N) lines give the counts, N 1 or more. A system without one is not deployed, except the chief,
    which is always one. A cluster needs at least one worker, and one chief or none. Without a chief system
    (C(chief) is 0) worker 0 leads the cluster, as in the classic clusters of the TF1 era. Each system has at most
    one deploy line.
  - Image URLs are in the IM form, C(aws://REGION/AMI), C(gce://ZONE/IMAGE), C(azr://PUBLISHER/OFFER/SKU/VERSION),
    C(ost://SERVER[:PORT]/IMAGE_ID) or C(docker://IMAGE[:TAG]); they set the cloud, and the region or OpenStack server,
    which all systems must share. A system without an image URL gets the cloud profile's default image.
  - Features the shape has no room for (C(cpu.count), C(memory.size), the OS), C(configure) and C(contextualize)
    sections and the cloud id of a deploy line are read by the radl package's checks and otherwise ignored.
  - An error names the file and the line, and the system or deploy line at fault.
options:
  _terms:
    description:
      - Paths of RADL files. A relative path is looked for in the C(files) search path of the play or role, then
        in the current directory.
    type: list
    elements: path
    required: true
notes:
  - Needs the C(radl) Python package on the controller.
seealso:
  - plugin: tfdist.cluster.to_radl
    plugin_type: filter
'''

EXAMPLES = r'''
- name: Read the cluster shape
  ansible.builtin.set_fact:
    cluster: "{{ lookup('tfdist.cluster.radl', playbook_dir ~ '/../radl/ps1-workers2.radl') }}"

- name: The classic cluster without a chief (1 ps, 2 workers; worker 0 leads)
  ansible.builtin.debug:
    msg: "chief={{ classic.chief }} workers={{ classic.workers }} ps={{ classic.ps }}"
  vars:
    classic: "{{ lookup('tfdist.cluster.radl', 'radl/classic.radl') }}"

- name: Say what the file describes
  ansible.builtin.debug:
    msg: >-
      {{ cluster.workers }} workers of size {{ cluster.nodes.worker.size }}
      on {{ cluster.cloud | default('the profile cloud', true) }}

- name: Several files at once give a list, one shape per file
  ansible.builtin.debug:
    msg: "{{ query('tfdist.cluster.radl', *files) | map(attribute='cloud') }}"
  vars:
    files: [radl/aws-gpu-workers.radl, radl/docker-small.radl]
'''

RETURN = r'''
_raw:
  description: One cluster shape per file.
  type: list
  elements: dict
  contains:
    source:
      description: Absolute path of the file.
      type: str
    chief:
      version_added: 0.5.0
      description: Number of chiefs, 1, or 0 when the file has no chief system (then worker 0 leads).
      type: int
    workers:
      description: Number of workers, 1 or more.
      type: int
    ps:
      description: Number of parameter servers.
      type: int
    evaluators:
      description: Number of evaluators.
      type: int
    nodes:
      description:
        - Role (C(chief), C(worker), C(ps), C(evaluator)) to its nodes' C(size) (the instance type, a list of them
          in order of preference, or null),
          C(image) (the cloud's image id, or null for the profile's default) and C(gpus) (an int).
        - Only the roles with nodes.
      type: dict
      sample: {chief: {size: t3.large, image: ami-0abc, gpus: 0}, worker: {size: g5.xlarge, image: ami-0abc, gpus: 1}}
    cloud:
      description: C(aws), C(gce), C(azure), C(openstack) or C(docker), from the image URLs; null without any.
      type: str
    region:
      description: The AWS region or GCE zone of the image URLs; null otherwise.
      type: str
    endpoint:
      description: The OpenStack server (C(SERVER[:PORT])) of C(ost://) image URLs; null otherwise.
      type: str
    zones:
      version_added: 0.5.0
      description:
        - The availability zones of the systems' C(availability_zone), in order of preference; empty when no system
          names one. On a capacity refusal in one zone the cluster's nodes go to the next (see the provision role's
          C(provision_zones)).
      type: list
      elements: str
      sample: [us-east-1a, us-east-1b]
    ports:
      description:
        - Inbound ports named in the networks' C(outports), in file order. A plain TCP port is an int (C(22));
          anything else keeps the IM notation as a string, C(8000:8010/tcp) (a range), C(53/udp),
          C(8080-80/tcp) (public port 8080 to the node's 80), C(10.0.0.0/8-22/tcp) (from those addresses only).
      type: list
      elements: raw
      sample: [22, 6006, '8000:8010/tcp']
'''

import os

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.tfdist.cluster.plugins.module_utils._radl import TfdistRadlError, load_cluster


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        shapes = []
        for term in terms:
            path = str(term)
            if not os.path.isabs(path):
                found = self.find_file_in_search_path(variables or {}, 'files', path, ignore_missing=True)
                path = found or os.path.abspath(path)
            try:
                shapes.append(load_cluster(path))
            except TfdistRadlError as e:
                raise AnsibleLookupError(str(e)) from None
        return shapes
