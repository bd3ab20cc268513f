# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""The looks before a module run: whether the module has anything to do, answered by the node's copy of tfdist.

On a re-run the node usually holds what a module would make. Before running it, an action of the collection
(idle_guard, training_files, training_task) asks the node with one raw command (command()): the node's python3
runs the look from the node's own copy of the package tfdist (this file among them), with no module payload to
build, send and import. The look prints its answer as JSON and exits 0; it exits 1 when the module must run,
as it does when the copy is missing or another version's. Each look tells the idle guard that the controller was
heard from, as the modules do. On this machine (cloud=local) the actions call the same functions in-process.

One of them does more than look: on a node the idle guard reached first (a fresh node of a deploy), the
"lay-down" does the training_files module's work itself (_host_files) with the guard's copy of the package, when
that copy is this version's: one raw command instead of a module run (its payload built, sent and imported: about
0.15 s of a node's CPU on each host, before the first step). And on a node with no copy at all, the "start-guard"
does the idle_guard module's work from the package sent on stdin as a zip (with_package), which it lays down as the
guard's copy: the first contact of a deploy costs no module run either.

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import json
import shlex
import sys

from ._files import holds, holds_checksums, package_root, read_copy, unzip_package
from ._idle_guard import HOME_FOLDER, LIB, ensure_started, guard_dir, heartbeat, node_options, quick_look
from ._task_folder import SupervisorError

# python3 -c ENTRY LIB LOOK ARGS...: the package tfdist is imported from the folder LIB.
ENTRY = "import sys; sys.path.insert(0, sys.argv[1]); from tfdist._look import main; main(sys.argv[1:])"
# python3 -c FROM_STDIN: the look and its arguments come on stdin as a JSON list on the first line (package_stdin()),
# then the zip of the package tfdist (_files.zip_package), on a node that holds no copy yet; the look gets the zip's
# path as its LIB. Nothing of them goes on the command line, which a process started by the look (the guard's
# supervisor) keeps. The zip is removed when the look ends.
FROM_STDIN = """import json, os, sys, tempfile
words = json.loads(sys.stdin.buffer.readline())
fd, path = tempfile.mkstemp(suffix=".zip")
try:
    with os.fdopen(fd, "wb") as handle:
        handle.write(sys.stdin.buffer.read())
    sys.path.insert(0, path)
    from tfdist._look import main
    main([path] + words)
finally:
    os.remove(path)
"""


def command(lib, look, *args):
    """The shell command of a look (a key of LOOKS), with the package's copy in the folder lib."""
    return "exec python3 -c %s" % " ".join(shlex.quote(word) for word in (ENTRY, lib, look) + args)


def in_guard_folder(look, *args):
    """The command of a look at the idle guard's copy of the package (its folder's lib, in the user's home); a node
    without that folder answers as a look that finds nothing. No cd: the environment stays the one a module run
    gets (PWD and OLDPWD too), as the warm starts of the lay-down must be claimed by the launch."""
    lib = "~/%s/%s" % (HOME_FOLDER, LIB)  # plain characters, unquoted: the shell expands the ~
    return "exec python3 -c %s %s %s" % (shlex.quote(ENTRY), lib, " ".join(shlex.quote(word) for word in (look,) + args))


def with_package():
    """The command of a look run from the package sent on its stdin, which package_stdin() makes."""
    return "exec python3 -c %s" % shlex.quote(FROM_STDIN)


def package_stdin(package, look, *args):
    """with_package()'s stdin: the look (a key of LOOKS) and its arguments, then the package's zip (bytes)."""
    return (json.dumps([look] + list(args)) + "\n").encode() + package


def files_hold(parts):
    """Whether each (root, digests, folders, only) of parts holds as training_files would leave it."""
    heartbeat()
    return all(holds(**part) for part in parts)


def task_plans(params):
    """training_task's plan for each task's params, as its module would plan them."""
    from ._task_plan import plan  # pylint: disable=import-outside-toplevel  # only this look pays for its imports
    heartbeat()
    return [plan(p)[0] for p in params]


def _lay_down(lib, checksums):
    # The package comes from this copy, so it must be this version's; the module's params come on stdin (env and
    # the dataset may be secret or large).
    copy = package_root(lib)
    if not holds_checksums(copy, checksums):
        return None
    from ._host_files import HostFilesError, lay_down_host  # pylint: disable=import-outside-toplevel  # only this one pays
    params = json.load(sys.stdin)
    heartbeat()
    try:
        return lay_down_host(params, lambda: read_copy(copy))
    except (HostFilesError, OSError, ValueError):
        return None  # the module's turn: it names what is wrong


def _guard(lib, options, checksums):
    return quick_look(json.loads(options), checksums)


def _start_guard(package, options, folder=None):
    # The idle_guard module's work (ensure_started) with the package of the zip on stdin, which it lays down as the
    # guard's copy; the module's turn on any error (it names it). folder: the guard's, for tests.
    try:
        return ensure_started(node_options(json.loads(options)), folder or guard_dir(), False,
                              lambda: unzip_package(package))
    except (OSError, ValueError, KeyError, SupervisorError):
        return None


def _files(lib, parts):
    return files_hold(json.loads(parts)) or None


def _plans(lib, checksums):
    # The copy answers for this version only; the options come on stdin (env may hold secrets).
    return task_plans(json.load(sys.stdin)) if holds_checksums(package_root(lib), checksums) else None


# Each look's arguments on the command line, after the package's folder.
LOOKS = {
    "guard": _guard,  # the idle_guard module's options as JSON, and SHA256SUMS of this version's package
    "files": _files,  # the look_parts of the training_files action, as JSON
    "plans": _plans,  # SHA256SUMS of this version's package; training_task's task params on stdin
    # Not only a look: the training_files module's work itself (_host_files), its validated params on stdin.
    "lay-down": _lay_down,  # SHA256SUMS of this version's package
    # The idle_guard module's state=started (_idle_guard.ensure_started), from the package on stdin (with_package()).
    "start-guard": _start_guard,  # the idle_guard module's options as JSON
}


def main(argv):
    lib, look, args = argv[0], argv[1], argv[2:]
    answer = LOOKS[look](lib, *args)
    if answer is None:
        raise SystemExit(1)
    sys.stdout.write(json.dumps(answer) + "\n")
