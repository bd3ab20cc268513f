"""What the unit tests' fake clouds share: libcloud's own driver code run over a fake connection (test__access.py,
test__cloud_gce_images.py)."""

import functools
import json
from types import SimpleNamespace


def run_real(obj, cls, *names):
    """Let these methods of an autospecced driver or connection run libcloud's own code (on the fake)."""
    for name in names:
        getattr(obj, name).side_effect = functools.partial(getattr(cls, name), obj)


def response(obj=None, status=200):
    """A connection's answer as libcloud's code reads it."""
    return SimpleNamespace(object=obj, status=status)


def sent(data):
    """What the connection would put on the wire: JSON, so anything not JSON-safe fails here."""
    return json.loads(json.dumps(data))
