# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""What a failed task's log says went wrong: the exception it ends with and the frame that raised it.

The last lines of a log are not enough: an exception whose message prints a tensor fills them with numbers, and
the traceback's `ValueError` is far above them. error_in() reads the end of the log for the last Python traceback;
failure_line() is the one way a failed task is named (the watch's message, the restart policy's "the same way").

Standard library only: the training_status module runs it on the node.
"""

from __future__ import annotations

import re

TRACEBACK = "Traceback (most recent call last):"
FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+)$')
# Longest exception line kept: the message of a tensor's ValueError may be megabytes.
MAX_ERROR_CHARS = 300


def shorten(text, limit=MAX_ERROR_CHARS):
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3].rstrip() + "..."


def error_in(log_text):
    """The last traceback of log_text: {error, where, line} (where: FILE:LINE in FUNCTION, line: its source line),
    or {error: the last line the task wrote, where: '', line: ''} without one; every value '' for an empty log.

    error is the exception's first line, shortened (ValueError: Shapes (64, 10) and ...). Lines of the tfdist
    supervisor and Python's chained-exception notes are not the task's words and are skipped.
    """
    lines = log_text.splitlines()
    start = max((i for i, line in enumerate(lines) if line.strip() == TRACEBACK), default=None)
    if start is None:
        own = [line for line in lines if line.strip() and not line.startswith("[tfdist-supervise]")]
        return {"error": shorten(own[-1]) if own else "", "where": "", "line": ""}
    where = source = ""
    for index in range(start + 1, len(lines)):
        line = lines[index]
        frame = FRAME.match(line)
        if frame:
            where = "%s:%s in %s" % (frame.group("file"), frame.group("line"), frame.group("function").strip())
            following = lines[index + 1] if index + 1 < len(lines) else ""
            source = following.strip() if following.startswith("    ") and not FRAME.match(following) else ""
            continue
        if line and not line[0].isspace():  # the first unindented line after the frames: the exception
            return {"error": shorten(line), "where": where, "line": shorten(source, 120)}
    return {"error": "", "where": where, "line": shorten(source, 120)}


def failure_line(error):
    """One line naming an error_in() result: `ValueError: ... (raised at train.py:12 in main: raise ValueError(x))`."""
    if not error or not error.get("error"):
        return ""
    line = error["error"]
    if error.get("where"):
        line += " (raised at %s%s)" % (error["where"], ": " + error["line"] if error.get("line") else "")
    return line
