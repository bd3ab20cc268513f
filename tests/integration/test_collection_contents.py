"""The built collection tarball holds what a user of the installed collection needs, and all of it.

galaxy.yml's build_ignore decides what `ansible-galaxy collection build` leaves out. These tests build the tarball
as a release does and check it three ways:

- every file is one a user needs: an allow-list of paths (a new top-level file or folder must be added here, or to
  build_ignore, on purpose);
- nothing a user needs is missing: every file git tracks under plugins/, roles/ (Molecule scenarios aside),
  playbooks/, meta/, the cloud profiles, the RADL and script examples; what the roles and playbooks name literally
  (task files, templates, files, roles, tasks_from) resolves inside the tarball; what meta/execution-environment.yml
  names is there; the tests/ helpers the shipped unit tests import are there;
- `ansible-playbook --syntax-check` of each shipped playbook, by FQCN, from the installed tarball, with no
  configuration of ours.
"""

import ast
import fnmatch
import glob
import os
import posixpath
import subprocess
import tarfile

import pytest
import yaml

from ansible_cli import REPO, run, tail

# Each path in the tarball must match one of these (fnmatch; `*` also matches `/`).
ALLOWED = (
    "MANIFEST.json", "FILES.json", "README.md", "LICENSE", "CHANGELOG.rst",
    # The dependency files ansible-builder reads through meta/execution-environment.yml.
    "requirements.txt", "bindep.txt",
    "meta", "meta/*.yml",
    "plugins", "plugins/*",
    "roles", "roles/*",
    "playbooks", "playbooks/*",
    # The cloud profiles the provision role loads (provision_profiles_dir), and the note of the clusters folder.
    "inventories", "inventories/*/cloud.yml", "inventories/*", "inventories/clusters/README.md",
    "radl", "radl/*.radl", "radl/README.md",
    "examples", "examples/*.py",
    "changelogs", "changelogs/*",
    # The collection docs (extra-docs.yml and its guides), rendered by antsibull-docs beside the plugin docs.
    "docs", "docs/docsite", "docs/docsite/*",
    # The JSON Schemas of what the playbooks write (plan, status, audit, summary, outcome), which pipelines validate.
    "docs/schemas", "docs/schemas/*.schema.json",
    # What `ansible-test sanity` and `ansible-test units` run on an installed collection, and the helpers
    # that tests/conftest.py puts on sys.path for them.
    "tests", "tests/sanity", "tests/sanity/ignore-*.txt", "tests/unit", "tests/unit/*",
    "tests/conftest.py", "tests/ansible_cli.py", "tests/processes.py", "tests/docker_engine.py",
    "tests/emulators", "tests/emulators/*.py",
)
# Never shipped, even below an allowed folder.
FORBIDDEN = ("*/molecule", "*/molecule/*", "*__pycache__*", "*.pyc", "inventories/clusters/*.yml", "tests/output*")
# Files git tracks that a user needs (all of them are shipped), Molecule scenarios aside.
NEEDED = ("plugins/*", "roles/*", "playbooks/*", "meta/*", "inventories/*/cloud.yml", "radl/*", "examples/*",
          "docs/*", "requirements.txt", "bindep.txt", "README.md", "LICENSE", "tests/sanity/*", "tests/unit/*")
# Where a role's task keyword finds a literal file.
ROLE_DIRS = {"template": "templates", "copy": "files", "script": "files", "include_tasks": "tasks",
             "import_tasks": "tasks", "include_vars": "vars"}


@pytest.fixture(scope="module")
def tarball(tmp_path_factory):
    out = tmp_path_factory.mktemp("build")
    built = run("ansible-galaxy", "collection", "build", "--output-path", out, REPO, config=None, cwd=out)
    assert built.returncode == 0, tail(built)
    path = glob.glob(str(out / "tfdist-cluster-*.tar.gz"))[0]
    with tarfile.open(path) as archive:
        names = {name.rstrip("/") for name in archive.getnames()}
    return path, names


def matches(path, patterns):
    return any(fnmatch.fnmatchcase(path, pattern) for pattern in patterns)


def tracked_files():
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True)
    return [path for path in listed.stdout.split("\0") if path and os.path.isfile(os.path.join(REPO, path))]


def test_every_file_is_one_a_user_needs(tarball):
    path, names = tarball
    unexpected = sorted(name for name in names if not matches(name, ALLOWED) or matches(name, FORBIDDEN))
    assert unexpected == [], "files in the tarball that no user needs (build_ignore them or allow them here):\n" + \
        "\n".join(unexpected)
    # The development side really is left out (these exist in the checkout).
    for dev in ("Makefile", "ansible.cfg", "bench", "scripts", "requirements-dev.txt", "execution-environment.yml",
                "tests/e2e", "tests/molecule", "roles/training/molecule"):
        assert os.path.exists(os.path.join(REPO, dev)) and dev not in names, dev
    assert os.path.getsize(path) < 1_000_000, "tarball of %d bytes" % os.path.getsize(path)


def test_every_file_a_user_needs_is_shipped(tarball):
    names = tarball[1]
    needed = [path for path in tracked_files() if matches(path, NEEDED) and not matches(path, FORBIDDEN)]
    assert len(needed) > 150, needed  # the listing found the collection's files
    assert sorted(set(needed) - names) == []


def test_meta_execution_environment_names_files_that_are_shipped(tarball):
    path, names = tarball
    with tarfile.open(path) as archive:
        meta = yaml.safe_load(archive.extractfile("meta/execution-environment.yml"))
    assert meta["dependencies"] == {"python": "requirements.txt", "system": "bindep.txt"}
    assert set(meta["dependencies"].values()) <= names


def _tasks(entries):
    """Every task of a task list, blocks (block, rescue, always) unfolded."""
    for entry in entries or []:
        if not isinstance(entry, dict):
            continue
        if "block" in entry:
            for part in ("block", "rescue", "always"):
                yield from _tasks(entry.get(part))
        else:
            yield entry


def _literal(value):
    return isinstance(value, str) and value and "{{" not in value and not value.startswith("/")


def references(path):
    """(what, path in the collection) of every file or role that a role's or playbook's YAML file names literally."""
    rel = os.path.relpath(path, REPO)
    parts = rel.split(os.sep)
    role_dir = posixpath.join(*parts[:2]) if parts[0] == "roles" else None
    here = posixpath.dirname(rel.replace(os.sep, "/"))
    with open(path) as handle:
        data = yaml.safe_load(handle)
    if not isinstance(data, list):
        return
    plays = [entry for entry in data if isinstance(entry, dict) and ("hosts" in entry or "import_playbook" in entry)]
    tasks = []
    for play in plays:
        for role in play.get("roles", []):
            name = role.get("role", role.get("name")) if isinstance(role, dict) else role
            yield "role", name
        for section in ("pre_tasks", "tasks", "post_tasks", "handlers"):
            tasks.extend(_tasks(play.get(section)))
    if not plays:
        tasks = list(_tasks(data))
    for task in tasks:
        for key, value in task.items():
            action = key.rsplit(".", 1)[-1]
            if action in ("include_role", "import_role") and isinstance(value, dict):
                yield "role", value.get("name")
                if _literal(value.get("tasks_from")):
                    yield "tasks_from", (value.get("name"), value["tasks_from"])
            elif action in ROLE_DIRS:
                target = value.get("file", value.get("src", value.get("cmd"))) if isinstance(value, dict) else value
                if action == "script" and isinstance(target, str):
                    target = target.split()[0] if target.strip() else target
                if not _literal(target):
                    continue
                if role_dir and action in ("include_tasks", "import_tasks"):
                    yield action, posixpath.normpath(posixpath.join(here, target))
                elif role_dir:
                    yield action, posixpath.join(role_dir, ROLE_DIRS[action], target)
                else:
                    yield action, posixpath.normpath(posixpath.join(here, target))


def test_what_roles_and_playbooks_name_is_shipped(tarball):
    names = tarball[1]
    files = sorted(glob.glob(os.path.join(REPO, "playbooks", "**", "*.yml"), recursive=True)
                   + glob.glob(os.path.join(REPO, "roles", "*", "tasks", "*.yml"))
                   + glob.glob(os.path.join(REPO, "roles", "*", "handlers", "*.yml")))
    found, missing = 0, []
    for path in files:
        for what, target in references(path):
            found += 1
            if what == "role":
                role = target.split(".")[-1] if target.startswith("tfdist.cluster.") else target
                ok = posixpath.join("roles", role, "tasks", "main.yml") in names
            elif what == "tasks_from":
                role, tasks_from = target
                name = tasks_from if tasks_from.endswith(".yml") else tasks_from + ".yml"
                ok = posixpath.join("roles", role.split(".")[-1], "tasks", name) in names
            else:
                ok = target in names
            if not ok:
                missing.append("%s: %s %s" % (os.path.relpath(path, REPO), what, target))
    assert found > 30, found  # the walk found the roles' and playbooks' references
    assert missing == []
    # The provision role loads inventories/<cloud>/cloud.yml next to playbooks/ (provision_profiles_dir).
    profiles = {name.split("/")[1] for name in names if fnmatch.fnmatchcase(name, "inventories/*/cloud.yml")}
    assert profiles == {"aws", "azure", "docker", "docker-vm", "gce", "local", "openstack"}


def test_the_shipped_unit_tests_find_their_helpers(tarball):
    """What tests/conftest.py loads (pytest_plugins) and the shipped tests import from tests/ is in the tarball."""
    names = tarball[1]
    helpers = {os.path.splitext(name)[0] for name in os.listdir(os.path.join(REPO, "tests"))
               if name.endswith(".py") or os.path.isfile(os.path.join(REPO, "tests", name, "__init__.py"))}
    wanted = set()
    for name in sorted(names):
        if not (name.startswith("tests/") and name.endswith(".py")):
            continue
        with open(os.path.join(REPO, name)) as handle:
            tree = ast.parse(handle.read())
        for node in ast.walk(tree):
            modules = []
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            elif isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytest_plugins" for t in node.targets):
                modules = [element.value for element in node.value.elts]
            wanted.update(module.split(".")[0] for module in modules if module.split(".")[0] in helpers)
    assert {"processes", "emulators", "docker_engine"} <= wanted  # the scan found the helpers they use
    missing = sorted(module for module in wanted
                     if "tests/%s.py" % module not in names and "tests/%s/__init__.py" % module not in names)
    assert missing == []


def test_installed_playbooks_pass_syntax_check(tarball, tmp_path):
    installed = run("ansible-galaxy", "collection", "install", "--force", tarball[0], "-p", tmp_path / "collections",
                    config=None, cwd=tmp_path)
    assert installed.returncode == 0, tail(installed)
    playbooks = sorted(os.path.splitext(os.path.basename(name))[0] for name in tarball[1]
                       if fnmatch.fnmatchcase(name, "playbooks/*.yml") and name.count("/") == 1)
    assert {"deploy", "check", "destroy", "provision", "audit"} <= set(playbooks)
    env = {"ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections")}
    for playbook in playbooks:
        checked = run("ansible-playbook", "--syntax-check", "-i", "localhost,", "tfdist.cluster." + playbook,
                      env=env, config=None, cwd=tmp_path)
        assert checked.returncode == 0, playbook + "\n" + tail(checked)
