# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Create, find or remove a cluster's nodes; on the controller, in the controller's own process.

The provision role calls the module on the controller, twice on a first deploy (the plan in check mode, then the
nodes) and once on a re-run: each a module run of about half a second there, more than the cloud's answer. Where
the task runs on the controller with the controller's own Python and no environment of its own, this action runs
the module's code here instead (plugin_utils/_controller.py, InControllerAction).
"""

from __future__ import annotations

from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import HAS_LIBCLOUD
from ansible_collections.tfdist.cluster.plugins.modules import libcloud_node
from ansible_collections.tfdist.cluster.plugins.plugin_utils._controller import InControllerAction


class ActionModule(InControllerAction):

    MODULE = "tfdist.cluster.libcloud_node"
    MODULE_CODE = libcloud_node
    LIBRARIES_HERE = HAS_LIBCLOUD
