# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Find what tfdist left on a cloud; on the controller, in the controller's own process.

Every destroy audits its cloud after removing a cluster (and `make audit` lists what is left): a module run of
about half a second on the controller. Where the task runs on the controller with the controller's own Python and
no environment of its own, this action runs the module's code here instead (plugin_utils/_controller.py,
InControllerAction).
"""

from __future__ import annotations

from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import HAS_LIBCLOUD
from ansible_collections.tfdist.cluster.plugins.modules import libcloud_audit
from ansible_collections.tfdist.cluster.plugins.plugin_utils._controller import InControllerAction


class ActionModule(InControllerAction):

    MODULE = "tfdist.cluster.libcloud_audit"
    MODULE_CODE = libcloud_audit
    LIBRARIES_HERE = HAS_LIBCLOUD
