# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Bake or remove an image; on the controller, in the controller's own process.

playbooks/image.yml calls the module on the controller twice (a check before the node is made, then the save): each a
module run of about half a second there. Where the task runs on the controller with the controller's own Python and no
environment of its own, this action runs the module's code here instead (plugin_utils/_controller.py,
InControllerAction).
"""

from __future__ import annotations

from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import HAS_LIBCLOUD
from ansible_collections.tfdist.cluster.plugins.modules import libcloud_image
from ansible_collections.tfdist.cluster.plugins.plugin_utils._controller import InControllerAction


class ActionModule(InControllerAction):

    MODULE = "tfdist.cluster.libcloud_image"
    MODULE_CODE = libcloud_image
    LIBRARIES_HERE = HAS_LIBCLOUD
