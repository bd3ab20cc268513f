# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""What training_task decides for a task it keeps started: the hash of its configuration, and whether the task is
kept, restarted or launched.

One home for that rule and for the module's options: the training_task module runs it on the node, and the
training_task action in check mode asks the node's own copy of the package tfdist the same question with one raw
command (a deploy's look whether its job must run), where that copy is this version's.

Standard library only, imports relative to its package: it is shipped to the nodes with the package tfdist.
Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import hashlib
import json
import os

from ._files import digest
from ._supervisor import ANNOUNCE_FOR, GONE_GRACE, NEVER_SEEN_TIMEOUT, parse_host_port
from ._task_folder import NOT_STARTED, extra_environment, task_status

HASH_FILE = "config.sha256"
# The state of a task whose folder does not exist yet.
NEVER_STARTED = {"running": False, "pid": None, "returncode": None, "reason": NOT_STARTED,
                 "started_at": None, "finished_at": None}

# The module's options; with `tasks`, each entry sets the options of one task and the rest is shared.
TASK_SPEC = dict(
    name=dict(type="str", required=True),
    dir=dict(type="path", required=True),
    command=dict(type="list", elements="str"),
    env_file=dict(type="path"),
    env_from_files=dict(type="dict", default={}),
    watch_files=dict(type="list", elements="path", default=[]),
    stop_when_gone=dict(type="str"),
    announce_end=dict(type="int"),
    end_grace=dict(type="int"),
)
ARGUMENT_SPEC = dict(
    name=dict(type="str"),
    dir=dict(type="path"),
    tasks=dict(type="list", elements="dict", options=TASK_SPEC),
    state=dict(type="str", default="started", choices=["started", "stopped", "absent"]),
    command=dict(type="list", elements="str"),
    env=dict(type="raw", default={}, no_log=True),  # a mapping or its JSON (_task_folder.extra_environment)
    env_file=dict(type="path"),
    env_from_files=dict(type="dict", default={}),
    watch_files=dict(type="list", elements="path", default=[]),
    chdir=dict(type="path"),
    stop_when_gone=dict(type="str"),
    gone_grace=dict(type="int", default=int(GONE_GRACE)),
    never_seen_timeout=dict(type="int", default=int(NEVER_SEEN_TIMEOUT)),
    announce_end=dict(type="int"),
    end_grace=dict(type="int"),
    announce_for=dict(type="int", default=int(ANNOUNCE_FOR)),
    config_hash=dict(type="str"),
    restart=dict(type="bool", default=False),
    rerun_finished=dict(type="bool", default=True),
    wait=dict(type="int", default=0),
    stop_timeout=dict(type="int", default=15),
)
ARGUMENT_RULES = dict(
    required_one_of=[("name", "tasks")],
    required_together=[("name", "dir")],
    mutually_exclusive=[(option, "tasks") for option in TASK_SPEC] + [("config_hash", "tasks")],
)
# The options whose values are paths on the node.
PATH_OPTIONS = ("dir", "env_file", "watch_files", "chdir")


def task_params(params):
    """Each task's options (the module's validated params): its own, over what the tasks of one call share.

    ValueError where env is not a mapping (or its JSON)."""
    shared = dict((key, value) for key, value in params.items() if key != "tasks")
    each = params["tasks"] if params["tasks"] is not None else [{}]
    tasks = [dict(shared, **task) for task in each]
    for p in tasks:
        p["dir"] = os.path.abspath(p["dir"])
        p["env_from_files"] = dict((str(k), str(v)) for k, v in p["env_from_files"].items())
        p["env"] = extra_environment(p["env"])
    return tasks


def check_params(p):
    """The rules of one task's options that the argument spec cannot say; returns an error message or None."""
    if p["state"] == "started" and p["command"] is None:
        return "command is required with state=started (task %s)" % p["name"]
    if p["state"] == "started" and not p["command"]:
        return "command must not be empty (task %s)" % p["name"]
    if p["stop_when_gone"]:
        try:
            parse_host_port(p["stop_when_gone"])
        except ValueError:
            return "stop_when_gone must be HOST:PORT, got %r (task %s)" % (p["stop_when_gone"], p["name"])
    return None


def file_digest(path):
    try:
        with open(path, "rb") as f:
            return digest(f.read())
    except OSError:
        return None  # a missing file is part of the configuration too


def compute_hash(p):
    material = {
        "command": p["command"],
        "env": p["env"],
        "chdir": p["chdir"],
        "stop_when_gone": p["stop_when_gone"],
        "gone_grace": p["gone_grace"],
        "never_seen_timeout": p["never_seen_timeout"],
        "env_file": [p["env_file"], file_digest(p["env_file"])] if p["env_file"] else None,
        "env_from_files": {k: [v, file_digest(v)] for k, v in p["env_from_files"].items()},
        "watch_files": [[f, file_digest(f)] for f in p["watch_files"]],
    }
    if p["end_grace"] is not None:  # only then: the hash of a task without one is what it was before the option
        material["end_grace"] = p["end_grace"]
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def read_text(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def status_of(task_dir):
    if not os.path.isdir(task_dir):
        return dict(NEVER_STARTED)
    return task_status(task_dir)


def plan_started(params, status, old_hash, new_hash):
    """'keep', 'restart' or 'launch' for state=started."""
    if status["running"]:
        if params["restart"] or old_hash != new_hash:
            return "restart"
        return "keep"
    finished_ok = status.get("returncode") == 0 and status.get("reason") != NOT_STARTED
    if finished_ok and not params["rerun_finished"] and old_hash == new_hash:
        return "keep"
    return "launch"


def plan(p, status=None):
    """(the task's result as the module reports it before acting, and 'keep', 'restart' or 'launch') for
    state=started: what check mode reports, and what the module then does."""
    status = status_of(p["dir"]) if status is None else status
    result = dict(name=p["name"], changed=False, started=False, stopped=False,
                  pid=status.get("pid") if status["running"] else None, status=status)
    new_hash = p["config_hash"] or compute_hash(p)
    action = plan_started(p, status, read_text(os.path.join(p["dir"], HASH_FILE)), new_hash)
    result["config_hash"] = new_hash
    if action != "keep":
        result.update(changed=True, started=True, stopped=action == "restart")
    return result, action
