# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

from __future__ import annotations


class ModuleDocFragment:

    # What the attributes mean; each module says how far it supports them (support, details).
    DOCUMENTATION = r'''
attributes:
  check_mode:
    description: Can run in check mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check mode), when in diff mode.
  idempotent:
    description: When run twice in a row with the same arguments, the second run reports no change.
'''

    # Modules carried out by an action plugin of the same name (tfdist.cluster.attributes.action).
    ACTION = r'''
attributes:
  action:
    description: Runs on the controller as an action plugin of the same name, which calls modules on the host.
    support: full
  platform:
    description: Target operating systems the module can manage.
    support: full
    platforms: posix
'''

    # Actions that run their module's code in the controller's own process there (plugin_utils/_controller.py,
    # InControllerAction): with tfdist.cluster.attributes.action.
    ACTION_HERE = r'''
attributes:
  action:
    details:
      - On the controller (connection local, with the controller's own Python and no environment of the task's own),
        the action runs the module's code in its own process, with no module run; elsewhere it runs the module.
'''
