# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Write a file of the controller from the controller's own process.

The inventory sources and the RADL record a deploy writes live on the controller; a copy or template task
runs two modules for each (a stat, then the write), about half a second apiece before the first step.
Here the file is compared and written in place, with the same rule as the node modules (module_utils.tfdist._files): the
file is its user's alone by default (0600), and so is every folder it makes (0700).
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._files import FILE_MODE, needs_write, write_file

ARGUMENT_SPEC = {
    "path": {"type": "path", "required": True},
    "content": {"type": "str", "required": True},
    "mode": {"type": "raw", "default": "%04o" % FILE_MODE},
}


def file_mode(mode):
    """An octal string such as 0600 (or an int, as YAML reads 0600 unquoted) -> the mode bits."""
    if isinstance(mode, int):
        return mode
    try:
        return int(str(mode), 8)
    except ValueError:
        raise AnsibleActionFail("mode: must be octal, such as '0600', got %r" % (mode,)) from None


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = False  # it never touches the host: the file is the controller's

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(ARGUMENT_SPEC)[1]
        path, content, mode = args["path"], args["content"].encode(), file_mode(args["mode"])
        if not os.path.isabs(path):
            raise AnsibleActionFail("path: must be absolute on the controller, got %s" % path)
        changed = needs_write(path, content, mode)
        result.update(changed=changed, path=path)
        if changed and self._task.diff:
            result["diff"] = {"before_header": path, "after_header": path, "before": self._before(path),
                              "after": args["content"]}
        if changed and not self._task.check_mode:
            try:
                write_file(path, content, mode)  # its folder made if missing
            except OSError as error:
                raise AnsibleActionFail("path: cannot write %s: %s" % (path, error.strerror)) from None
        return result

    @staticmethod
    def _before(path):
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                return handle.read()
        except OSError:
            return ""
