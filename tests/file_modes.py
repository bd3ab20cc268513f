"""What a test asserts of the files tfdist keeps for a job: its user's alone (module_utils/tfdist/_files.py)."""

import os
import stat


def loose_modes(root):
    """What under root (root included) others may read or enter: a folder not 0700, a file not 0600, with its mode."""
    assert os.path.isdir(root), root
    loose = []
    for folder, dummy, names in os.walk(root):
        for path, private in [(folder, 0o700)] + [(os.path.join(folder, name), 0o600) for name in names]:
            mode = stat.S_IMODE(os.stat(path).st_mode)
            if mode != private:
                loose.append("%s %o" % (os.path.relpath(path, root), mode))
    return loose
