# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""A node module's own work, run by the node's python3 from the node's copy of the package tfdist: one raw command.

A module run builds, sends and imports a payload on each host (about 0.15 s of a node's CPU, compiling Ansible's
module_utils.basic), which on a re-run often only finds that there is nothing to do. The actions of training_files,
idle_guard and training_task (through plugin_utils/_controller.py's run_on_node) send instead one raw command,
COMMAND, that runs a function of RUNS: the module's own function for its work (or its check mode), never a copy of it.
Its request (request()) comes on stdin as a JSON line: the run's name, the module's validated params (secrets and
datasets never go on a command line), and where the package comes from:

- a copy on the node (lib: the idle guard's, GUARD_LIB, or training_files' package_dest), checked file by file
  against this version's SHA256SUMS where the request carries them (checksums): another version's copy answers
  nothing;
- or the package's zip, sent after the JSON line (lib None: a node that holds no copy yet), which the run lays down
  where the module would (the idle guard's copy); the zip is removed when the run ends.

The run prints the module's result as JSON and exits 0; it exits non-zero (the module's turn, which names what is
wrong) when it has no answer: no python3, no copy, another version's, an error. Each run tells the idle guard that
the controller was heard from, as the modules do. Where the node is the controller's machine itself, a READ_ONLY run
is run_here(): the same function in the action's own process.

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import json
import shlex
import sys

from ._files import in_place, is_copy_of, package_root, read_copy, unzip_package
from ._idle_guard import HOME_FOLDER, LIB, ensure_started, guard_dir, heartbeat, node_options
from ._task_folder import SupervisorError

# The idle guard's copy of the package, in the home of the user the command runs as (expanded there).
GUARD_LIB = "~/%s/%s" % (HOME_FOLDER, LIB)
# python3 -c ENTRY: the request on stdin's first line, then the package's zip where it names no lib. Nothing goes
# on the command line, which a process started by the run (the guard's supervisor) keeps.
ENTRY = """import json, os, sys, tempfile
request = json.loads(sys.stdin.buffer.readline())
zipped = None
if request["lib"] is None:
    fd, zipped = tempfile.mkstemp(suffix=".zip")
    with os.fdopen(fd, "wb") as handle:
        handle.write(sys.stdin.buffer.read())
try:
    lib = zipped or os.path.expanduser(request["lib"])
    sys.path.insert(0, lib)
    from tfdist._node_run import main
    main(lib, request, zipped)
finally:
    if zipped:
        os.remove(zipped)
"""
# No cd: the environment stays the one a module run gets (PWD and OLDPWD too): the warm starts that training_files
# leaves must be claimed by the launch.
COMMAND = "exec python3 -c %s" % shlex.quote(ENTRY)


def request(run, params, lib=None, checksums=None, folder=None):
    """COMMAND's stdin for the run (a key of RUNS) with the module's params: the package from the copy in lib, checked
    against checksums (SHA256SUMS' text) when given; without lib, the package's zip must follow. folder: the idle
    guard's, for tests."""
    return (json.dumps({"run": run, "params": params, "lib": lib, "checksums": checksums, "folder": folder})
            + "\n").encode()


def _training_files(params, package, folder):
    from ._host_files import HostFilesError, lay_down_host  # pylint: disable=import-outside-toplevel  # its run pays
    try:
        return lay_down_host(params, package)
    except (HostFilesError, OSError, ValueError):
        return None  # the module's turn: it names what is wrong


def _idle_guard(params, package, folder):
    try:
        return ensure_started(node_options(params), folder or guard_dir(), False, package)
    except (OSError, ValueError, KeyError, SupervisorError):
        return None


def _task_plans(params, package, folder):
    from ._task_plan import plan  # pylint: disable=import-outside-toplevel  # only this run pays for its imports
    return [plan(p)[0] for p in params]


def _files_in_place(params, package, folder):
    return all(in_place(**part) for part in params) or None


# Each run: a function of (the module's params, a callable that gives the package's files, the guard's folder or None).
RUNS = {
    # The training_files module's work (_host_files.lay_down_host): its validated params.
    "training_files": _training_files,
    # The idle_guard module's state=started (_idle_guard.ensure_started): its options, tasks_dir as given.
    "idle_guard": _idle_guard,
    # The training_task module's check mode for state=started (_task_plan.plan): each task's params.
    "task_plans": _task_plans,
    # Whether training_files would change nothing: _files.in_place for each (root, digests, folders, only) of params
    # (the training_files action's files_in_place: the files named by their SHA256, not sent).
    "files_in_place": _files_in_place,
}

# The runs that only read the node: where the node is this machine, the action's own process answers them (no python3
# to start). The others write and start processes (the guard, warm starts), which stay out of the controller's.
READ_ONLY = frozenset(("task_plans", "files_in_place"))


def run_here(run, params, package, folder=None):
    """The answer of the run in this process (the node is this machine); None: the module's turn."""
    heartbeat()
    return RUNS[run](params, package, folder)


def main(lib, request_, zipped):
    """COMMAND's work on the node, from the package in lib (a copy's folder, or the zip's path: zipped)."""
    if request_["checksums"] is not None and not is_copy_of(package_root(lib), request_["checksums"]):
        raise SystemExit(1)  # another version's copy, or none
    answer = run_here(request_["run"], request_["params"],
                      (lambda: unzip_package(zipped)) if zipped else (lambda: read_copy(package_root(lib))),
                      request_["folder"])
    if answer is None:
        raise SystemExit(1)
    sys.stdout.write(json.dumps(answer) + "\n")
