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
  - The package is the collection's folder C(plugins/module_utils/tfdist/), every file of it - the training program
    (C(tfdist/train/)), the modules it imports (the cluster model C(_cluster.py), the storage policy C(_storage.py),
    the supervisor C(_supervisor.py), ...), its C(__init__.py), and C(SHA256SUMS), the checksums of every file; a
    change of the program changes C(SHA256SUMS), so a task that watches it
    (O(tfdist.cluster.training_task#module:watch_files)) is relaunched.
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

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _idle_guard
from ansible_collections.tfdist.cluster.plugins.module_utils._package import CHECKSUMS, lay_down


def main():
    module = AnsibleModule(
        argument_spec=dict(dest=dict(type="path", required=True)),
        supports_check_mode=True,
    )
    _idle_guard.heartbeat()  # the controller is heard from (see the idle_guard module)
    try:
        root, files, written, removed = lay_down(module.params["dest"], module.check_mode)
    except OSError as e:
        module.fail_json(msg="dest: cannot write the package under %s: %s" % (module.params["dest"], e))
    module.exit_json(changed=bool(written or removed), package_dir=root, files=sorted(files), written=written,
                     removed=removed, digest=hashlib.sha256(files[CHECKSUMS]).hexdigest())


if __name__ == "__main__":
    main()
