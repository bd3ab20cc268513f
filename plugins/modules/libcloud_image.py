#!/usr/bin/python
# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r'''
module: libcloud_image
short_description: Save a configured node as a baked image of its cloud, or remove a baked image
version_added: 0.5.0
description:
  - Saves a node of a tfdist cluster (configured and cleaned beforehand, as C(playbooks/image.yml) does) as an image
    through libcloud, tagged C(tfdist_image={name}) and with O(tags) (the versions baked in), and waits until the image
    can boot nodes. Or removes such an image.
  - V(ec2) an AMI of the account (one C(CreateImage) that tags the image and its snapshots; AWS reboots the instance
    for a consistent disk); removing it deregisters it and deletes its snapshots.
  - V(gce) an image of the project made from the node's boot disk once the node is stopped, labelled (label values
    take lowercase letters, digits, C(_) and C(-) only, so a version V(2.21.0) is written V(2-21-0)).
  - V(docker) a local image C({name}:latest), the node's container committed once stopped; it carries the tags as
    labels and none of the node's own labels.
  - Other clouds (V(azure_arm), V(openstack)) fail, naming O(provider) - libcloud's drivers for them give tfdist no way
    to save a node and to know its images again.
  - An image tfdist did not bake (no C(tfdist_image) tag) is never replaced or removed - the task fails, naming O(name).
author: tfdist maintainers (@tfdist)
extends_documentation_fragment:
  - tfdist.cluster.attributes
  - tfdist.cluster.attributes.action
  - tfdist.cluster.attributes.action_here
  - tfdist.cluster.libcloud
attributes:
  check_mode:
    support: full
    details:
      - Checks the name, that the cloud can bake images and whether the image exists, and changes nothing. With
        O(state=present) it needs no O(node) - a playbook checks this before it creates the node.
  diff_mode:
    support: none
  idempotent:
    support: full
    details: An image of that name that tfdist baked is kept as it is; the node is not saved again.
options:
  name:
    description:
      - The image's name - 3 to 63 lowercase letters, digits and dashes, a letter first and no dash last, which every
        cloud takes.
    type: str
    required: true
  state:
    description:
      - V(present) saves O(node) as the image, unless a baked image of that name exists.
      - V(absent) removes the baked image of that name, if any.
    type: str
    choices: [present, absent]
    default: present
  node:
    description:
      - The name of the tfdist node to save (C({cluster}-{role}-{index})). Required with O(state=present) when the image
        does not exist yet.
    type: str
  tags:
    description:
      - More tags of the image, for example C(tfdist_tensorflow) and C(tfdist_cuda), the versions baked in.
    type: dict
    default: {}
  wait_timeout:
    description: How many seconds to wait for a new image to become ready to boot nodes.
    type: int
    default: 1800
notes:
  - Clean the node before saving it (its login user's C(authorized_keys), cloud-init's instance state, its machine id,
    host keys and logs); this module saves it as it is.
'''

EXAMPLES = r'''
- name: Save the configured node as an AMI
  tfdist.cluster.libcloud_image:
    provider: ec2
    region: us-east-1
    name: tfdist-aws-20261128-120000
    node: image-aws-chief-0
    tags:
      tfdist_tensorflow: "2.21.0"
      tfdist_cuda: none
  register: baked

- name: Remove a baked image
  tfdist.cluster.libcloud_image:
    provider: ec2
    region: us-east-1
    name: tfdist-aws-20261128-120000
    state: absent
'''

RETURN = r'''
image:
  description: The baked image (with O(state=absent), the one removed); empty when there is none.
  returned: always
  type: dict
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
      description: The TensorFlow baked in (its C(tfdist_tensorflow) tag).
      type: str
      sample: 2.21.0
    cuda:
      description: The CUDA toolkit baked in (its C(tfdist_cuda) tag), V(none) without one.
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
'''

import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.tfdist.cluster.plugins.module_utils._images import TAG_IMAGE, describe, is_baked, name_error, to_dict
from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import (
    HAS_LIBCLOUD,
    LIBCLOUD_IMPORT_ERROR,
    TfdistCloudError,
    cloud_images,
    connection_argument_spec,
    explain_error,
    get_driver,
    list_cluster_nodes,
)

ARGUMENT_SPEC = dict(
    connection_argument_spec(),
    name=dict(type='str', required=True),
    state=dict(type='str', default='present', choices=['present', 'absent']),
    node=dict(type='str'),
    tags=dict(type='dict', default={}),
    wait_timeout=dict(type='int', default=1800),
)


def baked_named(images, name):
    """The baked images called `name`; fails, naming the name, when the cloud holds an image of it tfdist did not bake."""
    same = images.named(name)
    foreign = [image for image in same if not is_baked(image)]
    if foreign:
        raise TfdistCloudError('name: the cloud holds %s, which tfdist did not bake (it has no %s tag): tfdist neither '
                               'replaces nor removes it; choose another name' % (describe(foreign[0]), TAG_IMAGE))
    return same


def find_node(driver, name):
    for node, identity in list_cluster_nodes(driver):
        if node.name == name:
            return node
    raise TfdistCloudError('node: no node of a tfdist cluster is named %r on the cloud' % name)


def run_module(module):
    """The module's work, on what it uses of AnsibleModule (params, check_mode, exit_json, fail_json): the module's
    process, or the controller's own where the action runs it (plugins/action/libcloud_image.py)."""
    params = module.params
    try:
        error = name_error(params['name'])
        if error:
            raise TfdistCloudError(error)
        driver = get_driver(params['provider'], params['region'], params['credentials'], params['driver_options'])
        images = cloud_images(driver, wait_timeout=params['wait_timeout'])
        found = baked_named(images, params['name'])
        if params['state'] == 'absent':
            if found and not module.check_mode:
                for image in found:
                    images.delete(image)
            module.exit_json(changed=bool(found), image=to_dict(found[0], images.reference(found[0])) if found else {})
        if found:
            module.exit_json(changed=False, image=to_dict(found[0], images.reference(found[0])))
        if module.check_mode:
            module.exit_json(changed=True, image={})
        if not params['node']:
            raise TfdistCloudError('node: give the node to save as image %s' % params['name'])
        tags = dict((str(key), str(value)) for key, value in params['tags'].items())
        tags[TAG_IMAGE] = params['name']
        image = images.create(find_node(driver, params['node']), params['name'], tags)
    except TfdistCloudError as e:
        module.fail_json(msg=str(e))
    except Exception as e:  # libcloud raises many types (auth, HTTP, network); report them all plainly
        module.fail_json(msg=explain_error(params['provider'], e), exception=traceback.format_exc())
    module.exit_json(changed=True, image=to_dict(image, images.reference(image)))


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    if not HAS_LIBCLOUD:
        module.fail_json(msg=missing_required_lib('apache-libcloud'), exception=LIBCLOUD_IMPORT_ERROR)
    run_module(module)


if __name__ == '__main__':
    main()
