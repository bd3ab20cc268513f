"""Shared test set-up: the collection importable as ansible_collections.tfdist.cluster.

Ansible's collection loader is installed here, before any test module imports a plugin,
as the ansible CLIs do, so plugins load by FQCN with their doc fragments.

pytest_plugins gives every test folder the fixtures of the emulated clouds (tests/emulators/fixtures.py)
and of the Docker Engine (tests/docker_engine.py). Helpers are plain modules of tests/ (on sys.path here):
ansible_cli (the one way to run a playbook), processes, docker_engine, emulators.
"""

import json
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

# Where the suite's time goes: every run ends with its slowest test files and each xdist worker's busy time, and
# writes this run's seconds per file (setup, calls and teardown summed; a module fixture's set-up counts in its file) to
# .cache/test-durations.json.
MEASURED = os.path.join(REPO, ".cache", "test-durations.json")
_file_seconds = {}
_worker_seconds = {}


def _file_of(nodeid):
    return nodeid.split("::", 1)[0]


def pytest_runtest_logreport(report):
    name = _file_of(report.nodeid)
    _file_seconds[name] = _file_seconds.get(name, 0.0) + report.duration
    gateway = getattr(getattr(report, "node", None), "gateway", None)  # the xdist worker that ran it
    worker = getattr(gateway, "id", "main")
    _worker_seconds[worker] = _worker_seconds.get(worker, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter, config):
    if hasattr(config, "workerinput") or not _file_seconds:
        return  # an xdist worker: the controller sums every worker's reports
    slowest = sorted(_file_seconds.items(), key=lambda entry: -entry[1])
    terminalreporter.write_sep("=", "slowest test files")
    for name, seconds in slowest[:12]:
        terminalreporter.write_line("%8.1fs %s" % (seconds, name))
    terminalreporter.write_line("busy: " + ", ".join(
        "%s %.0fs" % (worker, seconds) for worker, seconds in sorted(_worker_seconds.items())))
    os.makedirs(os.path.dirname(MEASURED), exist_ok=True)
    with open(MEASURED, "w") as handle:
        json.dump({name: round(seconds, 1) for name, seconds in slowest}, handle, indent=1)
        handle.write("\n")
