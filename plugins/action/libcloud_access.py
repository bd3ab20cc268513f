# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Make or remove a cluster's key pair and firewall on its cloud; on the controller, in the controller's own process.

A deploy on a cloud with access control (aws, gce, azure, openstack) calls the module before its nodes and a
destroy after them: each a module run of about half a second on the controller. Where the task runs on the
controller with the controller's own Python and no environment of its own, this action runs the module's code here
instead (plugin_utils/_controller.py, InControllerAction).
"""

from __future__ import annotations

from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import HAS_LIBCLOUD
from ansible_collections.tfdist.cluster.plugins.modules import libcloud_access
from ansible_collections.tfdist.cluster.plugins.plugin_utils._controller import InControllerAction


class ActionModule(InControllerAction):

    MODULE = "tfdist.cluster.libcloud_access"
    MODULE_CODE = libcloud_access
    LIBRARIES_HERE = HAS_LIBCLOUD
