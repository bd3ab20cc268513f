#!/usr/bin/python
# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Read a supervised task's log on the managed host: its last lines, or what it wrote since an offset."""

from __future__ import annotations

DOCUMENTATION = r"""
module: training_log
short_description: Read a TF task's log on its host
description:
  - Reads, and never changes, the C(task.log) that the tfdist supervisor writes in a task's folder (see
    M(tfdist.cluster.training_task)), with the task's output and the supervisor's own lines.
  - Prints the last O(lines) lines of the log and, with O(follow), what the task writes next, as it comes, until the
    task has ended (as C(tail -f) would, but ending with the task).
  - The printing is done by the action plugin of the same name on the controller, which calls this module on the
    host (a module alone could not print while it runs). Each call reads the last lines, or what the log got since
    O(offset), waiting up to O(wait) seconds for more while the task runs; O(offset), O(wait) and O(max_bytes) are
    the action's own, to set only when calling the module otherwise.
version_added: 0.5.0
author: tfdist maintainers (@tfdist)
options:
  dir:
    description: The task's folder, as given to M(tfdist.cluster.training_task).
    type: path
    required: true
  lines:
    description: Lines from the end of the log to return when no O(offset) is given.
    type: int
    default: 50
  follow:
    description: Go on printing what the task writes until it has ended (the action).
    type: bool
    default: false
  poll_interval:
    description: With O(follow), the most seconds each call waits on the host for the log to grow (the action).
    type: float
    default: 5
  offset:
    description: Return what the log holds from this byte on (the RV(offset) of the last read). A log shorter than
      that (a new log) is read from its start.
    type: int
  wait:
    description: With O(offset), seconds to wait for the log to grow while the task runs; V(0) looks once.
    type: float
    default: 0
  max_bytes:
    description: The most bytes returned by one read with O(offset); the next read goes on from RV(offset).
    type: int
    default: 1048576
extends_documentation_fragment:
  - tfdist.cluster.attributes
attributes:
  check_mode:
    support: full
    details: Only reads; check mode reads the same.
  diff_mode:
    support: none
  idempotent:
    support: full
    details: It only reads.
"""

EXAMPLES = r"""
- name: The last 50 lines of worker-1's log
  tfdist.cluster.training_log:
    dir: /var/lib/tfdist/demo/tasks/worker-1
    lines: 50
  register: log

- name: Follow worker-1's log until the task ends
  tfdist.cluster.training_log:
    dir: /var/lib/tfdist/demo/tasks/worker-1
    follow: true
"""

RETURN = r"""
text:
  description: The lines read first (the last O(lines), or everything from O(offset) on), as one string.
  returned: always
  type: str
offset:
  description: The byte of the log where the last read ended (the next read with O(offset) starts there).
  returned: always
  type: int
exists:
  description: The task's folder has a log (false for a task never started there).
  returned: always
  type: bool
running:
  description: The task (or its supervisor) ran at the last read, as M(tfdist.cluster.training_status) says.
  returned: always
  type: bool
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._task_folder import (
    LOG_NAME, read_log_end, tail_bytes, task_status)

POLL_INTERVAL = 0.5


def log_size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def last_lines(task_dir, lines):
    """(text, end): the last `lines` lines of the task's log and the byte they end at."""
    text, end = read_log_end(task_dir, tail_bytes(lines))
    return ("".join(text.splitlines(True)[-lines:]) if lines > 0 else ""), end


def read_from(path, offset, max_bytes):
    """(text, end): what the file holds from offset on (from its start when it is shorter), ending at a whole line
    unless a line is longer than max_bytes."""
    with open(path, "rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        start = offset if offset <= size else 0
        handle.seek(start)
        data = handle.read(min(size - start, max_bytes))
    if len(data) == max_bytes and b"\n" in data:
        data = data[:data.rindex(b"\n") + 1]
    return data.decode(errors="replace"), start + len(data)


def read_log(task_dir, lines=50, offset=None, wait=0.0, max_bytes=1 << 20):
    path = os.path.join(task_dir, LOG_NAME)
    deadline = time.monotonic() + wait
    while offset is not None and wait > 0 and log_size(path) in (None, offset) and time.monotonic() < deadline:
        if not task_status(task_dir)["running"]:
            break
        time.sleep(POLL_INTERVAL)
    # Whether it runs is read before the log: a task found ended has written all of its log by then.
    running = task_status(task_dir)["running"]
    if log_size(path) is None:
        return {"text": "", "offset": 0, "exists": False, "running": running}
    text, end = last_lines(task_dir, lines) if offset is None else read_from(path, offset, max_bytes)
    return {"text": text, "offset": end, "exists": True, "running": running}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dir=dict(type="path", required=True),
            lines=dict(type="int", default=50),
            follow=dict(type="bool", default=False),  # the action's: it calls this module again
            poll_interval=dict(type="float", default=5.0),
            offset=dict(type="int"),
            wait=dict(type="float", default=0.0),
            max_bytes=dict(type="int", default=1 << 20),
        ),
        supports_check_mode=True,
    )
    params = module.params
    module.exit_json(changed=False, **read_log(params["dir"], params["lines"], params["offset"], params["wait"],
                                               params["max_bytes"]))


if __name__ == "__main__":
    main()
