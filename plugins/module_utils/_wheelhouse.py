# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""The controller's wheelhouse: the wheels a node needs, downloaded once for every node of the same kind.

A node's Python describes itself (roles/tensorflow/files/read_platform.py: its version, implementation, platform and
glibc); here that becomes the tags pip accepts there and the name of the wheelhouse's folder, keyed by the pinned
TensorFlow requirement and the node's best tag (tensorflow-cpu-2.21.0-cp311-manylinux_2_36_x86_64). `pip download`
fetches a requirement set for that platform into the folder once; the folder records the sets it holds, so a second
deploy downloads nothing and runs no pip. The nodes get the folder as one tar (wheels are compressed already): one
file to copy, not one module run per wheel.

Used by the tfdist.cluster.wheelhouse action, on the controller only (fcntl: a POSIX controller).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import tarfile

# The record of the requirement sets a folder holds; the nodes' archive is the folder's name plus this.
RECORD = ".tfdist-requirements.json"
ARCHIVE_SUFFIX = ".tar"
# How the record names a requirement downloaded without its dependencies.
NO_DEPS_MARK = "(no deps)"
# Oldest glibc minor a manylinux tag names for each machine (PEP 600; packaging.tags does the same), and the legacy
# tags that alias some of them (PEP 513, 571, 599) on the machines they were defined for.
OLDEST_GLIBC_MINOR = {"x86_64": 5, "i686": 5}
OLDEST_GLIBC_MINOR_ELSEWHERE = 17
LEGACY_TAGS = {17: ("manylinux2014", ("x86_64", "i686", "aarch64", "armv7l", "ppc64", "ppc64le", "s390x")),
               12: ("manylinux2010", ("x86_64", "i686")),
               5: ("manylinux1", ("x86_64", "i686"))}
# Lines of pip's output a failure shows.
PIP_TAIL_LINES = 20


class WheelhouseError(Exception):
    """A node the wheelhouse cannot serve, or a download that failed: the message says which and why."""


def platform_tags(platform, glibc):
    """The Linux tags a node's pip accepts, in pip's order: linux_<machine> (a wheel built there), then
    manylinux_2_<minor> from its glibc down to the oldest, each legacy alias after its glibc.
    platform is sysconfig.get_platform() there (linux-x86_64), glibc its version (2.36)."""
    system, machine = (platform.split("-", 1) + [""])[:2]
    if system != "linux" or not machine:
        raise WheelhouseError("a Linux node is needed (its Python says %s)" % platform)
    if not glibc:
        raise WheelhouseError("a node with glibc is needed: manylinux wheels do not run on its libc")
    major, minor = (int(part) for part in glibc.split(".")[:2])
    if major != 2:
        raise WheelhouseError("glibc %s: only glibc 2.x is known" % glibc)
    machine = machine.replace("-", "_").replace(".", "_")
    tags = ["linux_%s" % machine]
    for known in range(minor, OLDEST_GLIBC_MINOR.get(machine, OLDEST_GLIBC_MINOR_ELSEWHERE) - 1, -1):
        tags.append("manylinux_2_%d_%s" % (known, machine))
        legacy, machines = LEGACY_TAGS.get(known, (None, ()))
        if machine in machines:
            tags.append("%s_%s" % (legacy, machine))
    return tags


def abi(node):
    """cp311 for CPython 3.11: the only implementation TensorFlow publishes wheels for."""
    if node.get("implementation") != "cpython":
        raise WheelhouseError("a CPython node is needed (its Python is %s)" % node.get("implementation"))
    return "cp" + node["python_version"].replace(".", "")


def folder_name(requirement, node):
    """The wheelhouse's folder for a pinned requirement on a node: tensorflow-cpu-2.21.0-cp311-manylinux_2_36_x86_64."""
    name = re.sub(r"[^A-Za-z0-9.]+", "-", requirement).strip("-").lower()
    best = next(tag for tag in platform_tags(node["platform"], node.get("glibc")) if tag.startswith("manylinux"))
    return "%s-%s-%s" % (name, abi(node), best)


def pip_download_args(node, dest, requirements, ca_bundle="", no_deps=False):
    """pip's arguments (after `pip`) that download the wheels of requirements for node into dest.

    Binary wheels only (a source distribution would be built for the controller, not the node). pip takes the node's
    Python version and tags from these arguments, but evaluates the dependencies' environment markers (python_version
    among them) with the controller's own Python: a dependency only a node of another Python version needs is not
    downloaded, and that node's install (pip --no-index, with its own Python) fails naming it. no_deps: the
    requirements' wheels alone."""
    args = ["download", "--dest", dest, "--only-binary=:all:", "--progress-bar", "off",
            "--implementation", "cp", "--python-version", node["python_version"], "--abi", abi(node)]
    for tag in platform_tags(node["platform"], node.get("glibc")):
        args += ["--platform", tag]
    if ca_bundle:
        args += ["--cert", ca_bundle]
    if no_deps:
        args.append("--no-deps")
    return args + list(requirements)


def read_record(folder):
    """The requirement sets the folder holds (each a sorted list); none when it has no record."""
    try:
        with open(os.path.join(folder, RECORD), encoding="utf-8") as handle:
            return json.load(handle)["requirement_sets"]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def write_record(folder, sets):
    path = os.path.join(folder, RECORD)
    with open(path + ".new", "w", encoding="utf-8") as handle:
        json.dump({"requirement_sets": sets}, handle, indent=1)
    os.replace(path + ".new", path)


def wheels(folder):
    try:
        return sorted(name for name in os.listdir(folder) if name.endswith(".whl"))
    except FileNotFoundError:
        return []


def write_archive(folder, archive):
    """Every wheel of the folder in one uncompressed tar, written beside and renamed (a reader never sees half)."""
    with tarfile.open(archive + ".new", "w", format=tarfile.PAX_FORMAT) as tar:
        for name in wheels(folder):
            tar.add(os.path.join(folder, name), arcname=name, recursive=False)
    os.replace(archive + ".new", archive)


def run_pip(pip, args):
    """Run pip with args; its failure as a WheelhouseError with the end of its output."""
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")
    try:
        # pylint: disable-next=ansible-bad-function  # no AnsibleModule here: no run_command
        done = subprocess.run(list(pip) + args, capture_output=True, text=True, errors="replace", env=env,
                              check=False)
    except OSError as error:
        raise WheelhouseError("cannot run %s: %s" % (pip[0], error.strerror)) from None
    if done.returncode != 0:
        lines = (done.stdout + done.stderr).strip().splitlines()
        if any("No module named pip" in line for line in lines):
            raise WheelhouseError("the controller's Python (%s) has no pip" % pip[0])
        raise WheelhouseError("pip download failed (exit %d):\n%s"
                              % (done.returncode, "\n".join(lines[-PIP_TAIL_LINES:])))


def ensure(root, requirements, node, pip, ca_bundle="", check_mode=False, no_deps=()):
    """The wheelhouse folder of requirements for node under root, downloaded unless it holds them already.

    no_deps: more requirements downloaded without their dependencies (tf-keras, whose one dependency, `tensorflow`,
    is the pinned TensorFlow under another name: tensorflow-cpu).

    Returns {changed, path, archive, wheels, downloaded}. One download per controller: concurrent callers (every
    node of a deploy, two deploys) wait on the folder's lock and then find the record of the first one's download."""
    if ca_bundle and not os.path.isfile(ca_bundle):
        raise WheelhouseError("ca_bundle: no such file on the controller: %s" % ca_bundle)
    folder = os.path.join(root, folder_name(requirements[0], node))
    archive = folder + ARCHIVE_SUFFIX
    wanted = sorted(list(requirements) + ["%s %s" % (spec, NO_DEPS_MARK) for spec in no_deps])
    os.makedirs(root, exist_ok=True)
    with open(folder + ".lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        sets = read_record(folder)
        held = wheels(folder)
        missing = wanted not in sets
        result = {"changed": missing or not os.path.isfile(archive), "path": folder, "archive": archive,
                  "wheels": held, "downloaded": []}
        if check_mode or not result["changed"]:
            return result
        if missing:
            os.makedirs(folder, exist_ok=True)
            run_pip(pip, pip_download_args(node, folder, requirements, ca_bundle))
            if no_deps:
                run_pip(pip, pip_download_args(node, folder, no_deps, ca_bundle, no_deps=True))
            write_record(folder, sets + [wanted])
        result["wheels"] = wheels(folder)
        result["downloaded"] = sorted(set(result["wheels"]) - set(held))
        write_archive(folder, archive)
        return result
