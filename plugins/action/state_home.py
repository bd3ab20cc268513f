# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Move what an earlier tfdist kept in the old place (the installed collection's folder) to the state home.

Before 0.5.0 the state of every cluster lived in the playbooks' parent folder, which for the collection's own
playbooks is the installed collection: an upgrade (`ansible-galaxy collection install --force`) deleted it. The first
run with a state home elsewhere moves it there, so that no live cluster is left without its key and inventory source.
"""

from __future__ import annotations

import glob
import os
import shutil

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._files import DIR_MODE, FILE_MODE, make_folder, write_file

ARGUMENT_SPEC = {
    "home": {"type": "path", "required": True},
    "old_home": {"type": "path", "required": True},
}

# What a state home holds that a later run must find again, as patterns under it. Artifacts are the user's results,
# not state: they stay where they are, named.
STATE = (".cache/controller-id", ".cache/keys/*", "inventories/clusters/*.yml", "inventories/clusters/.*.regions.yml",
         "images/*.yml")
ID_FILE = ".cache/controller-id"
INVENTORY_SOURCES = "inventories/clusters/"


def state_files(home):
    """The state files under `home`, as paths relative to it."""
    found = []
    for pattern in STATE:
        found += sorted(os.path.relpath(path, home) for path in glob.glob(os.path.join(home, pattern))
                        if os.path.isfile(path))
    return found


def read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def move(name, old_home, home, moved):
    """Move one file; in an inventory source, the paths of the files moved (its key, known_hosts) now point to their
    new place. Nothing else of it changes: a cloud=local cluster's job folder stays where its TF tasks run."""
    old, new = os.path.join(old_home, name), os.path.join(home, name)
    make_folder(os.path.dirname(new), DIR_MODE)
    if name.startswith(INVENTORY_SOURCES):
        content = read(old)
        for other in moved:
            content = content.replace(os.path.join(old_home, other), os.path.join(home, other))
        write_file(new, content.encode(), FILE_MODE)
        os.unlink(old)
    else:
        shutil.move(old, new)


def why_not(files, old_home, home):
    """Why the files cannot move ('' when they can): nothing of the new home is overwritten or mixed."""
    taken = [name for name in files if os.path.exists(os.path.join(home, name))]
    if ID_FILE in taken:
        return "the state home %s has another controller id (the owner's mark of what it makes)" % home
    if taken:
        return "the state home %s has files of the same names (%s)" % (home, ", ".join(taken))
    return ""


def move_state(home, old_home, check_mode=False):
    """Move the state files of old_home to home where nothing there stands in the way; the result as the task's."""
    home, old_home = os.path.realpath(home), os.path.realpath(old_home)
    result = {"changed": False, "moved": [], "home": home}
    if home == old_home or not os.path.isdir(old_home):
        return result
    files = state_files(old_home)
    if ID_FILE in files and os.path.isfile(os.path.join(home, ID_FILE)) and \
            read(os.path.join(old_home, ID_FILE)) == read(os.path.join(home, ID_FILE)):
        files.remove(ID_FILE)  # the same controller: its id is there already
    if not files:
        return result
    clusters = ", ".join(sorted({os.path.basename(name).split(".")[0] for name in files
                                 if name.startswith(INVENTORY_SOURCES) and not os.path.basename(name).startswith(".")}))
    blocked = why_not(files, old_home, home)
    if blocked:
        result["warnings"] = [
            "%s holds the state of clusters %s, kept there by an earlier tfdist; %s, so it stays. Run with "
            "TFDIST_HOME=%s to manage them (destroy them), or move %s to %s yourself."
            % (old_home, clusters or "(none: keys only)", blocked, old_home, ", ".join(files), home)]
        return result
    result.update(changed=True, moved=files)
    if not check_mode:
        try:
            for name in files:
                move(name, old_home, home, files)
        except OSError as error:
            raise AnsibleActionFail("cannot move the state of %s to %s: %s" % (old_home, home, error)) from None
    result["warnings"] = ["moved the state of clusters %s (%d files) from %s, where an earlier tfdist kept it, to the "
                          "state home %s" % (clusters or "(none)", len(files), old_home, home)]
    return result


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = False  # the controller's own files

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(ARGUMENT_SPEC)[1]
        result.update(move_state(args["home"], args["old_home"], self._task.check_mode))
        return result
