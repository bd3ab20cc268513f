"""The architecture guide (docs/docsite/rst/guide_architecture.rst) is true file by file.

A newcomer finds every file by its name there: every file of plugins/, every role, every playbook, every test folder
and helper, bench and script is named by its path (a filter's YAML documentation by the filter's name). And every
path, module_utils file and plugin name the page writes exists, so a file renamed or removed takes its row with it.
"""

import glob
import os
import re

from ansible_cli import REPO

PAGE = os.path.join(REPO, "docs", "docsite", "rst", "guide_architecture.rst")
# The folders whose paths the page writes out; a path it names under them must exist.
TOPS = ("plugins", "roles", "playbooks", "tests", "bench", "scripts", "inventories", "radl", "docs", "changelogs")
# Kinds of plugin a `tfdist.cluster.NAME` on the page may be (and roles/NAME).
PLUGIN_KINDS = ("modules", "action", "lookup", "inventory", "callback")


def page_names(text):
    """Every ``literal`` of an rst text."""
    return set(re.findall(r"``([^`]+)``", text))


def files_under(top, pattern="**/*"):
    """Paths relative to the repository of the files under a top folder, without caches."""
    paths = glob.glob(os.path.join(REPO, top, pattern), recursive=True)
    return sorted(os.path.relpath(path, REPO) for path in paths
                  if os.path.isfile(path) and "__pycache__" not in path.split(os.sep))


def folders_in(top):
    """'top/name/' for each folder directly in a top folder, without caches."""
    return sorted("%s/%s/" % (top, name) for name in os.listdir(os.path.join(REPO, top))
                  if os.path.isdir(os.path.join(REPO, top, name)) and name != "__pycache__")


def filter_names():
    """The name of every filter: from its documentation file plugins/filter/<name>.yml, or the `name:` of the
    DOCUMENTATION in its Python file."""
    documented = [os.path.basename(path)[:-len(".yml")] for path in files_under("plugins/filter", "*.yml")]
    inline = []
    for path in files_under("plugins/filter", "*.py"):
        with open(os.path.join(REPO, path)) as handle:
            inline += re.findall(r"^DOCUMENTATION = .*\n\s*name: (\w+)", handle.read(), re.MULTILINE)
    return sorted(documented + inline)


def expected_names():
    """Every name a newcomer must find on the page."""
    plugin_files = [path for path in files_under("plugins")
                    if os.path.basename(path) != "__init__.py" and not re.match(r"plugins/filter/.*\.yml$", path)]
    return (plugin_files + filter_names() + folders_in("roles") + folders_in("inventories")
            + files_under("playbooks", "**/*.yml")
            + folders_in("tests") + files_under("tests", "*.py")
            + files_under("bench", "**/*.py") + files_under("bench", "*.yml") + files_under("scripts"))


def missing_rows(names):
    """The files, filters, roles and folders the page does not name."""
    return [name for name in expected_names() if name not in names and "tfdist.cluster." + name not in names]


def is_found(name):
    """Whether a name the page writes exists: a path (with <placeholders> as wildcards), a private Python file of the
    collection or a test file by its own name, or a plugin, role or playbook tfdist.cluster.NAME."""
    if name.startswith(tuple(top + "/" for top in TOPS)):
        if " " in name:
            return True  # a command line, not a path
        return bool(glob.glob(os.path.join(REPO, re.sub(r"<[^>]+>", "*", name))))
    if re.fullmatch(r"(_|test_)\w+\.py", name):
        return bool(glob.glob(os.path.join(REPO, "plugins", "**", name), recursive=True)
                    or glob.glob(os.path.join(REPO, "tests", "**", name), recursive=True))
    if name.startswith("tfdist.cluster."):
        short = name[len("tfdist.cluster."):]
        return (short in filter_names() or os.path.isdir(os.path.join(REPO, "roles", short))
                or os.path.isfile(os.path.join(REPO, "playbooks", short + ".yml"))
                or any(os.path.isfile(os.path.join(REPO, "plugins", kind, short + ".py")) for kind in PLUGIN_KINDS))
    return True  # a variable, a command, a value


def test_every_file_has_its_row():
    with open(PAGE) as handle:
        names = page_names(handle.read())
    assert len(expected_names()) > 150, "the collection's files were not found under %s" % REPO
    missing = missing_rows(names)
    assert not missing, "%s names no row for these (add one, by its path):\n%s" % (
        os.path.relpath(PAGE, REPO), "\n".join(missing))


def test_every_name_on_the_page_exists():
    with open(PAGE) as handle:
        names = page_names(handle.read())
    gone = sorted(name for name in names if not is_found(name))
    assert not gone, "%s names what does not exist (renamed or removed? fix its row):\n%s" % (
        os.path.relpath(PAGE, REPO), "\n".join(gone))


def test_a_file_without_a_row_is_named_and_a_row_without_its_file_too():
    with open(PAGE) as handle:
        text = handle.read()
    without_supervisor = text.replace("``plugins/module_utils/tfdist/_supervisor.py``", "the supervisor's file")
    newly_missing = set(missing_rows(page_names(without_supervisor))) - set(missing_rows(page_names(text)))
    assert newly_missing == {"plugins/module_utils/tfdist/_supervisor.py"}
    assert not is_found("plugins/module_utils/_supervise.py")
    assert not is_found("_supervise.py")
    assert not is_found("tfdist.cluster.training_launch")
    assert is_found("plugins/module_utils/_cloud_<provider>.py")
