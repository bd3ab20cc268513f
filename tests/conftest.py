"""Shared test set-up: the collection importable as ansible_collections.tfdist.cluster.

Ansible's collection loader is installed here, before any test module imports a plugin,
as the ansible CLIs do, so plugins load by FQCN with their doc fragments.
"""

import os
import sys

from ansible.plugins.loader import init_plugin_loader

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(REPO, ".collections")  # ansible_collections/tfdist/cluster -> repo (make setup)
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)
init_plugin_loader([COLLECTIONS])

from emulators.fixtures import ec2_emulator  # noqa: E402,F401 - the EC2 emulator for tests/integration and tests/e2e
