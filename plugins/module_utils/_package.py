# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""The node-side package tfdist: what it holds and how it is laid down (node_package, training_files)."""

from __future__ import annotations

import functools
import pkgutil

from ansible_collections.tfdist.cluster.plugins.module_utils import tfdist
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import (
    _cluster, _files, _host_files, _idle_guard, _json_files, _netns, _netns_holder, _node_run, _storage, _supervisor,
    _task_folder, _task_plan, _warm_child, _warm_start, train)
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._files import checksums
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist.train import (
    checkpoints, cli, data, evaluator, job, model, progress, results, strategies)

# The folder the package is, as the nodes get it (its name there: PACKAGE_NAME).
SOURCE_PACKAGE = tfdist.__name__
PACKAGE_NAME = _files.PACKAGE_NAME
# Every module of that folder. Imported by name so that a module's payload carries them; a test checks that the list
# is the folder's files, so a file is shipped by living there.
SHIPPED = (tfdist, _cluster, _files, _host_files, _idle_guard, _json_files, _netns, _netns_holder, _node_run, _storage,
           _supervisor, _task_folder, _task_plan, _warm_child, _warm_start, train, checkpoints, cli, data, evaluator,
           job, model, progress, results, strategies)
CHECKSUMS = _files.CHECKSUMS_FILE


def relative_path(module):
    """A module's file inside the package, e.g. train/cli.py, train/__init__.py."""
    parts = [part for part in module.__name__[len(SOURCE_PACKAGE) + 1:].split(".") if part]
    if hasattr(module, "__path__"):
        parts.append("__init__")
    return "/".join(parts) + ".py"


def package_files():
    """{relative path: content} of the whole package, SHA256SUMS included."""
    files = {}
    for module in SHIPPED:
        path = relative_path(module)
        content = pkgutil.get_data(SOURCE_PACKAGE, path)
        if content is None and hasattr(module.__loader__, "get_source"):
            # A loader without get_data (Mitogen's, which imports from the controller): the module's own source.
            content = module.__loader__.get_source(module.__name__)
            content = content.encode("utf-8") if isinstance(content, str) else content
        if content is None:
            raise RuntimeError("%s is not in this module's payload" % path)
        files[path] = content
    files[CHECKSUMS] = checksums(files).encode()
    return files


def lay_down(dest, check_mode=False):
    """Write the package into dest/tfdist; returns (its folder, every file, files written, entries removed).

    Raises OSError (the file that could not be written) when the folder cannot be written.
    """
    root = _files.package_root(dest)
    files = package_files()
    written, removed = _files.lay_down(root, files, check_mode)
    return root, files, written, removed


@functools.lru_cache(maxsize=None)
def package_zip():
    """The whole package as a zip (bytes) that a node's python3 imports it from (_node_run.COMMAND)."""
    return _files.zip_package(package_files())
