# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""What the wheels of this node's Python must fit, as one line of JSON, for the controller's wheelhouse.

Run by the interpreter that makes the virtualenv (python -c, one SSH round trip; no virtualenv and no pip needed yet):
  {"python_version": "3.11", "implementation": "cpython", "platform": "linux-x86_64", "glibc": "2.36"}
glibc is null where the C library is another (musl). What this means for pip (the tags it accepts, the wheelhouse's
folder) is decided on the controller: plugins/module_utils/_wheelhouse.py.
"""

import json
import os
import sys
import sysconfig


def glibc_version():
    """2.36 on glibc 2.36, else None."""
    try:
        name_version = os.confstr("CS_GNU_LIBC_VERSION").split()
    except (AttributeError, OSError, ValueError):  # not a name this libc knows
        return None
    return name_version[1] if name_version[:1] == ["glibc"] and len(name_version) == 2 else None


print(json.dumps({"python_version": "%d.%d" % sys.version_info[:2], "implementation": sys.implementation.name,
                  "platform": sysconfig.get_platform(), "glibc": glibc_version()}))
