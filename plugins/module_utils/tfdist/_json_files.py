# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Small files written whole and read whole: the JSON records of the tasks and of the training program.

A task's folder (_task_folder), the training program's status.json and result.json, the idle guard's settings: each
is written with _files.write_file (written beside, then renamed), so a reader never sees half a file, and read back
as None while it is missing. The times they note are seconds since the epoch (UTC), to the millisecond (now()).

Standard library only, imports relative to its package: it is shipped to the nodes with the package tfdist.
Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import json
import os
import time

from ._files import write_file


def now():
    """The time a record notes: seconds since the epoch, rounded to the millisecond."""
    return round(time.time(), 3)


def read_json(path):
    """The parsed file, or None when it is missing or half-written."""
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def write_json(path, data, indent=None):
    """data as JSON (sorted keys, a final newline), replacing the file whole."""
    write_text(path, json.dumps(data, indent=indent, sort_keys=True) + "\n")


def write_text(path, text):
    """text (a str) as the file's content, replacing the file whole."""
    write_file(path, text.encode())


def remove(path):
    """The file is gone, whether it was there or not."""
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
