#!/usr/bin/python
# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
# The work is done by the action plugin of the same name, in the controller's own process; this file documents it.

from __future__ import annotations

DOCUMENTATION = r"""
module: wheelhouse
short_description: Download the wheels a node needs into the controller's wheelhouse, once
description:
  - Downloads the wheels of O(requirements) and of their dependencies for the platform of O(node) (its Python version,
    machine and glibc) into a folder under O(path) on the controller, with the controller's pip
    (C(pip download --only-binary=:all:) with C(--platform), C(--python-version) and C(--abi)), and packs them into
    one uncompressed tar beside it for the nodes (C(<folder>.tar)).
  - The folder is named after the first requirement (the pinned TensorFlow) and the node's best platform tag, for
    example C(tensorflow-cpu-2.21.0-cp311-manylinux_2_36_x86_64); it records the requirement sets it holds, so a later
    call with the same set (another node, the next deploy) downloads nothing and runs no pip. Other sets for the same
    folder (another node's extra packages) are added to it.
  - Hosts that call it at once share one download; the others wait on the folder's lock, then find it recorded.
  - pip evaluates the dependencies' environment markers with the controller's Python; a dependency that only a
    node of another Python version needs is missing from the folder, and the node's C(pip install --no-index) names it.
  - Runs in the controller's own process (an action plugin), whatever the host of the task; the controller's Python
    needs pip.
version_added: 0.5.0
author: tfdist maintainers (@tfdist)
extends_documentation_fragment:
  - tfdist.cluster.attributes
options:
  path:
    description: The wheelhouse on the controller, the folder that holds one folder per pinned release and platform.
    type: path
    required: true
  requirements:
    description: pip requirement specifiers, the pinned TensorFlow first (it names the folder).
    type: list
    elements: str
    required: true
  no_deps:
    description:
      - More requirement specifiers whose wheels are downloaded without their dependencies (C(pip download --no-deps)),
        such as V(tf-keras==2.21.*), whose one dependency C(tensorflow) a C(tensorflow-cpu) node has under that name.
    type: list
    elements: str
    default: []
  node:
    description:
      - What the node's Python says of itself, as C(roles/tensorflow/files/read_platform.py) prints it.
      - C(python_version) (V(3.11)), C(implementation) (V(cpython), the only one served), C(platform)
        (C(sysconfig.get_platform()), V(linux-x86_64)) and C(glibc) (V(2.36); a node without glibc is refused).
    type: dict
    required: true
  ca_bundle:
    description:
      - A PEM bundle on the controller that pip trusts for the download (C(--cert)), for a proxy that re-signs HTTPS.
      - Empty means the controller's pip settings.
    type: str
    default: ""
attributes:
  check_mode:
    support: full
    details: Says whether the wheelhouse would be downloaded or packed, and does neither.
  diff_mode:
    support: none
  idempotent:
    support: full
"""

EXAMPLES = r"""
- name: Download TensorFlow's wheels for this node into the controller's wheelhouse
  tfdist.cluster.wheelhouse:
    path: ~/.cache/tfdist/wheelhouse
    requirements: [tensorflow-cpu==2.21.0]
    node: {python_version: "3.11", implementation: cpython, platform: linux-x86_64, glibc: "2.36"}
  register: wheels

- name: Unpack them on the node
  ansible.builtin.unarchive:
    src: "{{ wheels.archive }}"
    dest: /var/cache/tfdist/wheelhouse
"""

RETURN = r"""
path:
  description: The folder of wheels on the controller.
  returned: always
  type: str
  sample: /home/me/.cache/tfdist/wheelhouse/tensorflow-cpu-2.21.0-cp311-manylinux_2_36_x86_64
archive:
  description: The tar of every wheel of the folder, for the nodes.
  returned: always
  type: str
  sample: /home/me/.cache/tfdist/wheelhouse/tensorflow-cpu-2.21.0-cp311-manylinux_2_36_x86_64.tar
wheels:
  description: The wheel files of the folder.
  returned: always
  type: list
  elements: str
  sample: [tensorflow_cpu-2.21.0-cp311-cp311-manylinux_2_27_x86_64.whl, numpy-2.3.4-cp311-cp311-manylinux_2_27_x86_64.whl]
downloaded:
  description: The wheel files this call downloaded (none when the folder held the requirements already).
  returned: always
  type: list
  elements: str
  sample: []
"""
