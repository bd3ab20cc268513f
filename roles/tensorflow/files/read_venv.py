# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""What a virtualenv holds against the requirements the tensorflow role pins, as one line of JSON.

Run by the virtualenv's own Python (python -c, one SSH round trip, no module payload), with the
requirements as arguments, the TensorFlow one first:
  {"version": <the version of the first requirement's package, or null>, "unmet": [<requirements not satisfied>]}
"""

import json
import sys
from importlib import metadata

try:  # TensorFlow brings packaging; a bare virtualenv has pip's own copy
    from packaging.requirements import Requirement
except ImportError:
    from pip._vendor.packaging.requirements import Requirement


def met(spec):
    """Whether the installed package satisfies spec; a URL, a path or anything else unparsed is pip's to decide."""
    try:
        wanted = Requirement(spec)
        return wanted.specifier.contains(metadata.version(wanted.name), prereleases=True)
    except Exception:  # pylint: disable=broad-exception-caught
        return False


def main(specs):
    try:
        version = metadata.version(Requirement(specs[0]).name)
    except (metadata.PackageNotFoundError, ValueError):
        version = None
    print(json.dumps({"version": version, "unmet": [spec for spec in specs if not met(spec)]}))


if __name__ == "__main__":
    main(sys.argv[1:])
