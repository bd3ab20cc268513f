# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Reading the files that tfdist-supervise and the training job leave in a job folder."""

from __future__ import annotations

import json
import os


def read_json(path):
    """The parsed file, or None when it is missing or half-written."""
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def log_tail(task_dir, lines=30):
    """The last lines of a task's task.log, reading only the end of a long log."""
    try:
        with open(os.path.join(task_dir, "task.log"), "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 256 * max(lines, 1) - 4096))
            return "\n".join(handle.read().decode(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
