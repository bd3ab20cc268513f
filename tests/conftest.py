"""Shared test set-up: the collection importable as ansible_collections.tfdist.cluster.

Ansible's collection loader is installed here, before any test module imports a plugin,
as the ansible CLIs do, so plugins load by FQCN with their doc fragments.

pytest_plugins gives every test folder the fixtures of the emulated clouds (tests/emulators/fixtures.py)
and of the Docker Engine (tests/docker_engine.py). Helpers are plain modules of tests/ (on sys.path here):
ansible_cli (the one way to run a playbook), processes, docker_engine, emulators.
"""

import os
import sys

TESTS = os.path.dirname(os.path.abspath(__file__))
if TESTS not in sys.path:  # pytest puts it there; ansible-test units imports conftests as collection packages
    sys.path.insert(0, TESTS)
REPO = os.path.dirname(TESTS)
COLLECTIONS = os.path.join(REPO, ".collections")  # ansible_collections/tfdist/cluster -> repo (make setup)
# `ansible-test units` installs its own collection loader first (and hides ansible.plugins from module tests).
if not any(type(finder).__name__ == "_AnsibleCollectionFinder" for finder in sys.meta_path):
    from ansible.plugins.loader import init_plugin_loader

    if COLLECTIONS not in sys.path:
        sys.path.insert(0, COLLECTIONS)
    init_plugin_loader([COLLECTIONS])

pytest_plugins = ["emulators.fixtures", "docker_engine"]
