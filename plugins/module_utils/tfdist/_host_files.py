# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""What the training_files module leaves on a host: each task's files, the package tfdist, the warm starts.

One home for that work, run two ways: by the module (its AnsiballZ payload carries the package), and by the node's own
copy of the package (the "training_files" run of _node_run, which takes the package from the idle guard's copy): the
training_files action tries that first, one raw command without a module payload to build, send and import.

Standard library only, imports relative to its package: it runs on the nodes as part of the package tfdist.
Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import os

from . import _cluster
from ._files import lay_down, make_folder, needs_write, package_root, write_file
from ._supervisor import warm
from ._task_folder import SupervisorError, extra_environment
from ._warm_start import warm_host


class HostFilesError(Exception):
    """A message that names the option at fault."""


def lay_down_host(p, package_files, check_mode=False):
    """The training_files module's result for its validated params p; package_files: {path: content} of the package
    (read only when p names a package_dest). Raises HostFilesError."""
    try:
        p = dict(p, env=extra_environment(p.get("env") or {}))
    except ValueError as error:
        raise HostFilesError(str(error)) from None
    for task in p["tasks"]:
        missing = [key for key in ("name", "type", "index") if key not in task]
        if missing:
            raise HostFilesError("tasks: a task without %s: %r" % (", ".join(missing), task))
    try:
        files = _cluster.host_files(p)
    except _cluster.ClusterError as error:
        raise HostFilesError(str(error)) from error
    made = [f for f in _cluster.host_folders(p) if not os.path.isdir(os.path.join(p["work_dir"], f))]
    written = [path for path in sorted(files) if needs_write(os.path.join(p["work_dir"], path), files[path])]
    if not check_mode:
        try:
            for folder in made:
                make_folder(os.path.join(p["work_dir"], folder))
            for path in written:
                write_file(os.path.join(p["work_dir"], path), files[path])
        except OSError as error:
            raise HostFilesError("work_dir: cannot write %s: %s" % (error.filename or p["work_dir"], error.strerror)) from error
    new_tasks = [t["name"] for t in p["tasks"] if _cluster.task_path(t["name"]) in made]
    result = dict(changed=bool(made or written), written=written, new_tasks=new_tasks)
    if p["package_dest"]:
        try:
            package_written, package_removed = lay_down(package_root(p["package_dest"]), package_files(),
                                                        check_mode)
        except OSError as error:
            raise HostFilesError("package_dest: cannot write the package under %s: %s" % (p["package_dest"], error)) from error
        result.update(package_written=package_written, package_removed=package_removed,
                      changed=result["changed"] or bool(package_written or package_removed))
    result["warm"] = [] if check_mode or not p["warm_python"] else warm_starts(p, written, result)
    return result


def warm_starts(p, written, result):
    """Start the Python of each task whose files changed (or all, when the program changed); their names.

    Tasks whose environments differ only in their own variables (_cluster.OWN_VARIABLES) share one import: a warm host forks
    their Pythons. A task with a GPU of its own imports alone.
    """
    program_changed = bool(result.get("package_written") or result.get("package_removed"))
    folders, shared = {}, {}
    for task in p["tasks"]:
        folder = _cluster.task_folder(p["work_dir"], task["name"])
        if program_changed or any(os.path.join(p["work_dir"], path).startswith(folder + "/") for path in written):
            folders[task["name"]] = folder
            variables = _cluster.task_variables(task, p)
            common = tuple(sorted((key, value) for key, value in variables.items()
                                  if not key.startswith(_cluster.OWN_VARIABLES)))
            shared.setdefault(common, []).append(task["name"])
    hosts = {}
    for number, (common, names) in enumerate(sorted(shared.items())):
        if len(names) < 2:
            continue
        socket_path = os.path.join(p["work_dir"], "warm-host-%d.sock" % number)
        try:
            warm_host(socket_path, p["warm_python"], len(names), p["warm_modules"], env=dict(p["env"], **dict(common)))
        except SupervisorError:
            continue  # each task imports on its own
        hosts.update((name, socket_path) for name in names)
    started = []
    for name, folder in folders.items():
        try:
            warm(folder, p["warm_python"], p["warm_modules"], env=p["env"],
                 env_file=os.path.join(folder, _cluster.TASK_ENV), host=hosts.get(name))
        except SupervisorError:
            continue  # no warm start: the launch starts the task cold, as it would anyway
        started.append(name)
    return started
