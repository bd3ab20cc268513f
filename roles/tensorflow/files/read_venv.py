# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""What a virtualenv holds against the requirements the tensorflow role pins, as one line of JSON.

Run by the virtualenv's own Python (python -c, one SSH round trip, no module payload), with the
requirements as arguments, the TensorFlow one first:
  {"version": <the version of the first requirement's package, or null>, "unmet": [<requirements not satisfied>]}
"""

import json
import os
import re
import sys
import sysconfig

# NAME[extras]==VERSION, the role's own pins: met when pip's record of that exact version is there.
EXACT_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==([A-Za-z0-9.+!_-]+)$")


def pinned_and_installed(spec):
    """The version of an exact pin whose dist-info folder is in site-packages, else None (then the full check decides).

    The common case of every re-run, without importing importlib.metadata and packaging (two thirds of this run).
    """
    pin = EXACT_PIN.match(spec)
    if not pin:
        return None
    name, version = re.sub(r"[-_.]+", "_", pin.group(1)).lower(), pin.group(3)
    site = sysconfig.get_paths()["purelib"]
    return version if os.path.isdir(os.path.join(site, "%s-%s.dist-info" % (name, version))) else None


def full_check():
    """importlib.metadata and packaging's Requirement, imported only when a pin needs more than its folder."""
    from importlib import metadata  # pylint: disable=import-outside-toplevel
    try:  # TensorFlow brings packaging; a bare virtualenv has pip's own copy
        from packaging.requirements import Requirement  # pylint: disable=import-outside-toplevel
    except ImportError:
        from pip._vendor.packaging.requirements import Requirement  # pylint: disable=import-outside-toplevel
    return metadata, Requirement


def met(spec):
    """Whether the installed package satisfies spec; a URL, a path or anything else unparsed is pip's to decide."""
    metadata, Requirement = full_check()
    try:
        wanted = Requirement(spec)
        return wanted.specifier.contains(metadata.version(wanted.name), prereleases=True)
    except Exception:  # pylint: disable=broad-exception-caught
        return False


def installed_version(spec):
    """The installed version of spec's package, or None."""
    metadata, Requirement = full_check()
    try:
        return metadata.version(Requirement(spec).name)
    except Exception:  # pylint: disable=broad-exception-caught
        return None  # not installed, or not a requirement at all


def main(specs):
    found = [pinned_and_installed(spec) for spec in specs]
    version = found[0] if specs and found[0] else (installed_version(specs[0]) if specs else None)
    unmet = [spec for spec, pinned in zip(specs, found) if not pinned and not met(spec)]
    print(json.dumps({"version": version, "unmet": unmet}))


if __name__ == "__main__":
    main(sys.argv[1:])
