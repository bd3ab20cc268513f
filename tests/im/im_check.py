"""Read a RADL file as the Infrastructure Manager (the `im` package) does; print what it makes of it as JSON.

Runs in the IM's own virtualenv (tests/im/requirements.txt, `make im-venv`), not the collection's:

    .cache/im-venv/bin/python tests/im/im_check.py CLUSTER.radl OUT_DIR

In-process and offline: the IM's RADL parser and checks; InfrastructureManager.EstimateResouces with a Dummy cloud
in the credentials (the server's dry run: RADL, credential, image and system-matching checks, no VM created); the
collections the IM would install with ansible-galaxy (ConfManager.get_ansible_roles_and_collections); and, for each
`configure`, the playbook the IM builds from it, with the IM's own header (ConfManager.add_ansible_header), recipe
merge (IM.ansible_utils.merge_recipes) and "all" wrapper (ConfManager.create_all_recipe), written to OUT_DIR as the
IM writes them (CONFIGURE_SYSTEM_task.yml, CONFIGURE_SYSTEM_task_all.yml). Contextualization itself is not run: the
IM's master set-up downloads from outside the package registries.
"""

import json
import logging
import os
import sys

import yaml
from IM.auth import Authentication
from IM.ConfManager import ConfManager
from IM.InfrastructureManager import InfrastructureManager
from IM.ansible_utils import merge_recipes
from radl import radl_parse

AUTH = [{'type': 'InfrastructureManager', 'username': 'tfdist', 'password': 'tfdist-test'},
        {'id': 'dummy', 'type': 'Dummy'}]


class _Log:
    """What ConfManager's methods need of `self` when called without an infrastructure."""

    def __init__(self):
        self.warnings = []

    def log_warn(self, message):
        self.warnings.append(message)


def main(path, out_dir):
    logging.basicConfig(level=logging.ERROR)
    with open(path, encoding='utf-8') as f:
        text = f.read()
    doc = radl_parse.parse_radl(text)
    doc.check()

    estimate = InfrastructureManager.EstimateResouces(text, Authentication(AUTH))
    computes = [vm for cloud in estimate.values() for vm in cloud['compute']]

    log = _Log()
    roles, collections = ConfManager.get_ansible_roles_and_collections(log, doc)

    os.makedirs(out_dir, exist_ok=True)
    playbooks = []
    steps = []
    for item in sorted(doc.contextualize.items.values(), key=lambda i: i.num):
        system = doc.get_system_by_name(item.system)
        configure = doc.get_configure_by_name(item.configure)
        # ConfManager.generate_playbook, for a VM of this system (its OS, no vault password).
        os_name = (system.getValue('disk.0.os.name') or 'linux').lower()
        content = merge_recipes(ConfManager.add_ansible_header(os_name), configure.recipes or '')
        name = '%s_%s_task' % (item.configure, item.system)
        with open(os.path.join(out_dir, name + '.yml'), 'w', encoding='utf-8') as f:
            f.write(content)
        wrapper = ConfManager.create_all_recipe(out_dir, name)
        playbooks.append({'system': item.system, 'configure': item.configure, 'step': item.num,
                          'playbook': os.path.join(out_dir, name + '.yml'),
                          'all': os.path.join(out_dir, wrapper),
                          'plays': yaml.safe_load(content) or []})
        steps.append([item.system, item.configure, item.num])

    json.dump({
        'systems': [s.name for s in doc.systems],
        'deploys': {d.id: d.vm_number for d in doc.deploys},
        'estimate': estimate,
        'estimated_vms': len(computes),
        'public_vms': sum(1 for vm in computes if vm.get('publicIP')),
        'gpu_vms': sum(1 for vm in computes if vm.get('GPU')),
        'ansible_roles': sorted(roles),
        'ansible_collections': sorted(collections),
        'warnings': log.warnings,
        'configures': [c.name for c in doc.configures],
        'steps': steps,
        'playbooks': playbooks,
    }, sys.stdout, indent=1, default=str)
    sys.stdout.write('\n')


if __name__ == '__main__':
    if len(sys.argv) != 3:
        sys.exit('usage: im_check.py CLUSTER.radl OUT_DIR')
    main(sys.argv[1], sys.argv[2])
