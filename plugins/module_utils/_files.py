# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Files the modules lay down on a node: rewritten only when they differ, replaced atomically."""

from __future__ import annotations

import os
import tempfile

FILE_MODE = 0o644
DIR_MODE = 0o755


def needs_write(path, content, mode=FILE_MODE):
    """True when the file is missing, or its content (bytes) or mode differ."""
    try:
        if (os.stat(path).st_mode & 0o7777) != mode:
            return True
        with open(path, "rb") as handle:
            return handle.read() != content
    except OSError:
        return True


def write_file(path, content, mode=FILE_MODE):
    """Write then rename, its folder made if missing: a process that reads it meanwhile never sees half a file."""
    os.makedirs(os.path.dirname(path), mode=DIR_MODE, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".%s." % os.path.basename(path))
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(content)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
