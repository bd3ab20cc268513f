#!/usr/bin/python
# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: node_package
short_description: Lay down the node-side Python package of tfdist (the training program and what it imports)
description:
  - Writes the Python package C(tfdist) into O(dest) on the managed host, so that O(dest) on C(sys.path) (or in
    E(PYTHONPATH)) makes C(tfdist.train) importable, for example C(python -m tfdist.train.job --help).
  - The package holds the collection's training program (C(tfdist/train/)), the modules it imports (the cluster
    model C(_cluster.py), the storage policy C(_storage.py), the supervisor C(_supervisor.py)), an C(__init__.py) and
    C(SHA256SUMS), the checksums of every file; a change of the program changes C(SHA256SUMS), so a task that
    watches it (O(tfdist.cluster.training_task#module:watch_files)) is relaunched.
  - The files come from the module's own payload, so the package on the host is always the one of the collection
    version that runs the play; nothing is downloaded.
  - Files are rewritten only when their content or mode differs, and files that are no longer part of the package
    are removed (C(__pycache__) folders are left to Python).
version_added: 0.4.0
author: tfdist maintainers (@tfdist)
options:
  dest:
    description:
      - The folder that gets the package folder C(tfdist) (created when missing), for example V(/var/lib/tfdist/lib).
    type: path
    required: true
extends_documentation_fragment:
  - tfdist.cluster.attributes
attributes:
  check_mode:
    support: full
    details: Reports the files that would be written and removed, and changes nothing.
  diff_mode:
    support: none
  idempotent:
    support: full
notes:
  - The package needs Python 3.7 or later on the host. The training program itself needs numpy, TensorFlow and
    Keras (and fsspec, s3fs for storage URLs) in the interpreter that runs it, not in the one that runs this module.
"""

EXAMPLES = r"""
- name: Lay down the training program
  tfdist.cluster.node_package:
    dest: /var/lib/tfdist/lib

- name: Run one task of a training job by hand with it
  ansible.builtin.command:
    argv: [/opt/tfdist/venv/bin/python, -m, tfdist.train.job, --help]
  environment:
    PYTHONPATH: /var/lib/tfdist/lib
  changed_when: false
"""

RETURN = r"""
package_dir:
  description: The package folder, O(dest)/tfdist.
  returned: always
  type: str
  sample: /var/lib/tfdist/lib/tfdist
files:
  description: Every file of the package, relative to RV(package_dir).
  returned: always
  type: list
  elements: str
  sample: [SHA256SUMS, __init__.py, _cluster.py, _storage.py, _supervisor.py, train/__init__.py, train/cli.py]
written:
  description: The files this call created or rewrote (or would have, in check mode).
  returned: always
  type: list
  elements: str
  sample: [train/cli.py]
removed:
  description: Files and folders under RV(package_dir) that are not part of the package and were removed (or would have been).
  returned: always
  type: list
  elements: str
  sample: [train/old_module.py]
digest:
  description: SHA-256 of C(SHA256SUMS), one value for the whole package.
  returned: always
  type: str
  sample: 6c1f...
"""

import hashlib
import os
import pkgutil
import shutil

from ansible.module_utils.basic import AnsibleModule
# Imported so that AnsiballZ ships their sources with this module; each one is a file of the package.
from ansible_collections.tfdist.cluster.plugins.module_utils import _cluster, _storage, _supervisor, train
from ansible_collections.tfdist.cluster.plugins.module_utils._files import needs_write, write_file
from ansible_collections.tfdist.cluster.plugins.module_utils.train import (
    checkpoints, cli, data, evaluator, job, model, progress, results, strategies)

SOURCE_PACKAGE = "ansible_collections.tfdist.cluster.plugins.module_utils"
PACKAGE_NAME = "tfdist"
SHIPPED = (_cluster, _storage, _supervisor, train, checkpoints, cli, data, evaluator, job, model, progress,
           results, strategies)
CHECKSUMS = "SHA256SUMS"
PACKAGE_INIT = b'''"""tfdist: the node-side programs of the Ansible collection tfdist.cluster (laid down by tfdist.cluster.node_package).

tfdist.train is the training program (python -m tfdist.train.job --help); _cluster, _storage and _supervisor are
copies of the collection's module_utils of the same names. Do not edit: the next deploy rewrites these files.
"""
'''


def relative_path(module):
    """A module's file inside the package, e.g. train/cli.py, train/__init__.py."""
    parts = module.__name__[len(SOURCE_PACKAGE) + 1:].split(".")
    if hasattr(module, "__path__"):
        parts.append("__init__")
    return "/".join(parts) + ".py"


def package_files():
    """{relative path: content} of the whole package, SHA256SUMS included."""
    files = {"__init__.py": PACKAGE_INIT}
    for module in SHIPPED:
        path = relative_path(module)
        content = pkgutil.get_data(SOURCE_PACKAGE, path)
        if content is None:
            raise RuntimeError("%s is not in this module's payload" % path)
        files[path] = content
    sums = "".join("%s  %s\n" % (hashlib.sha256(files[path]).hexdigest(), path) for path in sorted(files))
    files[CHECKSUMS] = sums.encode()
    return files


def stale_entries(root, files):
    """Paths under root (relative) that are not part of the package: whole folders where nothing of it lives."""
    wanted_dirs = {os.path.dirname(path) for path in files}
    wanted_dirs |= {os.path.dirname(d) for d in list(wanted_dirs)}
    stale = []
    for folder, dirs, names in os.walk(root):
        relative = os.path.relpath(folder, root).replace(os.sep, "/")
        relative = "" if relative == "." else relative
        for name in sorted(dirs):
            path = "%s/%s" % (relative, name) if relative else name
            if name == "__pycache__":
                dirs.remove(name)  # Python's own: left alone
            elif not any(w == path or w.startswith(path + "/") for w in wanted_dirs):
                stale.append(path)
                dirs.remove(name)
        for name in sorted(names):
            path = "%s/%s" % (relative, name) if relative else name
            if path not in files:
                stale.append(path)
    return sorted(stale)


def main():
    module = AnsibleModule(
        argument_spec=dict(dest=dict(type="path", required=True)),
        supports_check_mode=True,
    )
    root = os.path.join(module.params["dest"], PACKAGE_NAME)
    files = package_files()
    written = [path for path in sorted(files) if needs_write(os.path.join(root, path), files[path])]
    removed = stale_entries(root, files) if os.path.isdir(root) else []
    if not module.check_mode:
        try:
            for path in written:
                write_file(os.path.join(root, path), files[path])
            for path in removed:
                target = os.path.join(root, path)
                if os.path.isdir(target) and not os.path.islink(target):
                    shutil.rmtree(target)
                else:
                    os.remove(target)
        except OSError as e:
            module.fail_json(msg="dest: cannot write the package under %s: %s" % (root, e), written=written)
    module.exit_json(changed=bool(written or removed), package_dir=root, files=sorted(files), written=written,
                     removed=removed, digest=hashlib.sha256(files[CHECKSUMS]).hexdigest())


if __name__ == "__main__":
    main()
