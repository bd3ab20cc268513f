# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

"""Baked images: a node that TensorFlow (and CUDA) was installed on, cleaned and saved as an image of its cloud
(playbooks/image.yml), so that later nodes boot with everything in place.

A baked image is tagged as tfdist's (TAG_IMAGE, its name) and with the versions baked in; it is the user's to keep:
destroy never touches one and the leak audit lists them apart, as kept, never as left behind. What differs per cloud
(how a node is saved, how tfdist's images are found and removed, what a tag may hold) is the CloudImages subclass of
the cloud's file (_cloud_<name>.py, CloudProvider's `images`); the name rule, the tags and the defaults are here.

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import re
import time

from ansible_collections.tfdist.cluster.plugins.module_utils._provider import TfdistCloudError

# Tags (EC2 tags, docker and GCE labels, OpenStack image properties) of a baked image. The first marks it as tfdist's.
TAG_IMAGE = 'tfdist_image'
TAG_TENSORFLOW = 'tfdist_tensorflow'
TAG_CUDA = 'tfdist_cuda'
VERSION_TAGS = (TAG_TENSORFLOW, TAG_CUDA)
# What every cloud takes as an image name, GCE's rule being the strictest: lowercase letters, digits and dashes, a
# letter first and no dash last, 3 to 63 characters (EC2 wants 3 at least).
NAME_RE = re.compile(r'^[a-z][a-z0-9-]{1,61}[a-z0-9]$')
# How often a cloud is asked whether a new image is ready, and for how long by default.
WAIT_PERIOD = 5
WAIT_TIMEOUT = 1800


def name_error(name, field='name'):
    """'' for a valid image name, else the message, starting with `field`."""
    if isinstance(name, str) and NAME_RE.match(name):
        return ''
    return ('%s: %r is not a valid image name: use 3 to 63 lowercase letters, digits and dashes, a letter first and '
            'no dash last (a name every cloud takes)' % (field, name))


def image_tags(image):
    """The tags of a libcloud NodeImage that carry TAG_IMAGE (EC2 tags, docker and GCE labels, OpenStack metadata);
    {} for an image tfdist did not bake."""
    extra = image.extra or {}
    for key in ('tags', 'labels', 'metadata'):
        value = extra.get(key)
        if isinstance(value, dict) and TAG_IMAGE in value:
            return value
    return {}


def is_baked(image):
    return bool(image_tags(image))


def describe(image):
    """'image tfdist-aws-20261128-120000 (ami-0123)': the name and, when it differs, the id."""
    name, ident = str(image.name or image.id), str(image.id)
    return 'image %s%s' % (name, '' if ident == name else ' (%s)' % ident)


def to_dict(image, reference=None):
    """A baked image as the modules return it: id, name, the reference a profile's role image takes (the id unless
    the cloud says otherwise), the versions baked in, every tag, a description."""
    tags = image_tags(image)
    return {'id': str(image.id), 'name': image.name, 'reference': reference or str(image.id),
            'tensorflow': tags.get(TAG_TENSORFLOW), 'cuda': tags.get(TAG_CUDA), 'tags': dict(tags),
            'description': describe(image)}


def wait_until(ready, what, timeout=WAIT_TIMEOUT, period=WAIT_PERIOD):
    """ready() until it returns a true value, which is returned; TfdistCloudError naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = ready()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TfdistCloudError('%s: not ready after %d s' % (what, timeout))
        time.sleep(period)


class CloudImages:
    """How tfdist saves a node of one cloud as an image, and finds and removes its own images, through libcloud's
    create_image, list_images and delete_image. A cloud's file subclasses it where its driver needs more (tags kept
    apart, a wait until the image can boot nodes, a node stopped first)."""

    def __init__(self, driver, wait_timeout=WAIT_TIMEOUT):
        self.driver = driver
        self.wait_timeout = wait_timeout

    def create(self, node, name, tags):
        """Save `node` as the image `name` carrying `tags`; returns its NodeImage once it can boot nodes."""
        raise NotImplementedError

    def reference(self, image):
        """What a profile's role image (libcloud_node's roles[].image) names this image by."""
        return str(image.id)

    def named(self, name):
        """The images of the cloud called `name`, tfdist's or not (a name is one image's on most clouds)."""
        return [image for image in self.driver.list_images() if image.name == name]

    def found(self):
        """tfdist's baked images on the cloud."""
        return [image for image in self.driver.list_images() if is_baked(image)]

    def delete(self, image):
        """Remove a baked image (and what only it used, such as EC2's snapshots)."""
        if not self.driver.delete_image(image):
            raise TfdistCloudError('the cloud refused to delete %s' % describe(image))
