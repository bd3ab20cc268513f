"""What a node's Python says its wheels must fit (roles/tensorflow/files/read_platform.py), run as the role runs it:
the file given to the interpreter with `python -c`. Here the interpreter is this test's own, whose platform is known."""

import json
import os
import subprocess
import sys
import sysconfig

from ansible_collections.tfdist.cluster.plugins.module_utils import _wheelhouse

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "roles", "tensorflow", "files", "read_platform.py")


def read_platform(python=sys.executable):
    with open(SCRIPT) as handle:
        run = subprocess.run([python, "-c", handle.read()], capture_output=True, text=True, check=True)
    return json.loads(run.stdout.splitlines()[-1])


def test_it_names_this_pythons_version_platform_and_glibc():
    said = read_platform()
    glibc = os.confstr("CS_GNU_LIBC_VERSION").split()[1]  # these machines are Debian: glibc
    assert said == {"python_version": "%d.%d" % sys.version_info[:2], "implementation": "cpython",
                    "platform": sysconfig.get_platform(), "glibc": glibc}


def test_the_controller_names_this_machines_wheelhouse_from_it():
    folder = _wheelhouse.folder_name("tensorflow-cpu==2.21.0", read_platform())
    major, minor = os.confstr("CS_GNU_LIBC_VERSION").split()[1].split(".")[:2]
    assert folder == "tensorflow-cpu-2.21.0-cp%d%d-manylinux_%s_%s_%s" % (
        sys.version_info[0], sys.version_info[1], major, minor, sysconfig.get_platform().split("-", 1)[1])
