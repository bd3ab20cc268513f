# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Check the execution environment's build context that `ansible-builder create` wrote (make ee-context).

Usage: check-ee-context.py CONTEXT   (run with the checks virtualenv's python: it needs ansible-builder)

The context must install the collection built from this checkout (the tarball its galaxy requirements name), and
what ansible-builder's own introspection reads from that collection (meta/execution-environment.yml) must be the
packages of requirements.txt and bindep.txt, with none of the development tools of requirements-dev.txt.
Prints the Python and system packages the image will get; exits 1 naming what is wrong.
"""

import os
import re
import subprocess
import sys
import tarfile
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def names(lines):
    """Normalized distribution names of requirement lines (comments, options and markers dropped)."""
    found = []
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", line)
        found.append(re.sub(r"[-_.]+", "-", match.group(0)).lower())
    return found


def fail(message):
    print("check-ee-context: " + message, file=sys.stderr)
    sys.exit(1)


def main(context):
    build = os.path.join(context, "_build")
    containerfile = os.path.join(context, "Containerfile")
    if not os.path.isfile(containerfile):
        fail("%s: no Containerfile (did ansible-builder create run?)" % context)
    with open(os.path.join(build, "requirements.yml")) as handle:
        galaxy = yaml.safe_load(handle)
    files = [c["name"] for c in galaxy.get("collections", []) if c.get("type") == "file"]
    if len(files) != 1:
        fail("_build/requirements.yml: one collection tarball expected, found %s" % files)
    tarball = os.path.join(build, files[0])
    if not os.path.isfile(tarball):
        fail("%s: the collection tarball named in _build/requirements.yml is not in the context" % tarball)

    with tempfile.TemporaryDirectory() as tmp:
        dest = os.path.join(tmp, "ansible_collections", "tfdist", "cluster")
        with tarfile.open(tarball) as archive:
            archive.extractall(dest, filter="data")
        out = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-builder"), "introspect", tmp],
                             capture_output=True, text=True, check=False)
        if out.returncode != 0:
            fail("ansible-builder introspect failed:\n" + out.stdout + out.stderr)
    data = yaml.safe_load(out.stdout.split("\n", 1)[1] if out.stdout.startswith("#") else out.stdout)
    python = names(line.split("#", 1)[0] for line in data.get("python") or [])
    system = [line.split("#", 1)[0].strip() for line in data.get("system") or []]

    with open(os.path.join(ROOT, "requirements.txt")) as handle:
        wanted = names(handle)
    with open(os.path.join(ROOT, "bindep.txt")) as handle:
        wanted_system = [line.split("#", 1)[0].strip() for line in handle if line.split("#", 1)[0].strip()]
    if sorted(python) != sorted(wanted):
        fail("the image would install %s, requirements.txt lists %s" % (sorted(python), sorted(wanted)))
    if sorted(system) != sorted(wanted_system):
        fail("the image would install system packages %s, bindep.txt lists %s" % (system, wanted_system))
    # Never in an execution environment: what requirements-dev.txt adds (the local cloud's TensorFlow, the tests',
    # lint's and bench's tools); ansible-core comes from execution-environment.yml.
    with open(os.path.join(ROOT, "requirements-dev.txt")) as handle:
        dev_only = set(names(handle)) - {"ansible-core"}
    if not {"tensorflow-cpu", "moto", "molecule", "pytest"} <= dev_only:
        fail("requirements-dev.txt: the development packages were not read: %s" % sorted(dev_only))
    dev = sorted(set(python) & dev_only)
    if dev:
        fail("development packages would go into the image: %s (they belong in requirements-dev.txt)" % dev)
    with open(containerfile) as handle:
        text = handle.read()
    for needed in ("ARG EE_BASE_IMAGE=", "ansible-core==", "ansible-runner==", "ansible-galaxy collection install"):
        if needed not in text:
            fail("Containerfile: no %r" % needed)
    print("ee-context: %s installs tfdist.cluster from %s" % (context, files[0]))
    print("ee-context: python: " + ", ".join(line.split("#", 1)[0].strip() for line in data.get("python") or []))
    print("ee-context: system: " + ", ".join(system))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
