"""patch_module_args on every ansible-core that meta/runtime.yml claims.

ansible-core 2.19 has ansible.module_utils.testing.patch_module_args; older releases read the module's
arguments from ansible.module_utils.basic._ANSIBLE_ARGS, which is what this stand-in sets. Only
ansible.module_utils is imported: ansible-test runs the module tests with nothing else of ansible.
"""

from __future__ import annotations

import contextlib
import json
from unittest import mock

from ansible.module_utils import basic

try:
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # ansible-core < 2.19

    @contextlib.contextmanager
    def patch_module_args(args=None):
        """Expose the given module args to AnsibleModule instances created within this context."""
        if not isinstance(args, (dict, type(None))):
            raise TypeError("The `args` arg must be a dict or None.")
        encoded = json.dumps({"ANSIBLE_MODULE_ARGS": args or {}}).encode()
        with mock.patch.object(basic, "_ANSIBLE_ARGS", encoded):
            yield

__all__ = ["patch_module_args"]
