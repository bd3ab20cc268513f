# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""What a training job looks like on one host: its tasks' records, the leader's files, the other hosts' ports.

The one home of a snapshot of a job, used by the training_status module on the host, and by the training_watch action
in its own process when the host is the controller's machine (no module run while the job trains there).
"""

from __future__ import annotations

import os
import time

from ._failures import error_in
from .tfdist._json_files import read_json
from .tfdist._supervisor import parse_host_port, tcp_answers
from .tfdist._task_folder import LOG_NAME, failed, log_end, log_tail, process_states, task_status

# What a snapshot reports of each task (the supervisor's status has more).
TASK_KEYS = ("running", "supervisor_running", "pid", "returncode", "reason", "started_at", "finished_at")
# How much of the end of a failed task's log is searched for its traceback: a tensor printed in an exception's
# message can fill the last lines, and the traceback is above them.
ERROR_SEARCH_BYTES = 256 * 1024


def task_state(name, task_dir, tail_lines):
    """The task's state as the supervisor recorded it. While it runs: its log's size (a script that writes no
    status.json makes progress by writing). Once it is not running: the end of its log, and the error that log ends
    with. (Whether the kernel holds its processes is the answer's: see note_processes().)"""
    status = task_status(task_dir)
    state = dict(name=name, **{key: status[key] for key in TASK_KEYS})
    if state["running"]:
        try:
            state["log_size"] = os.path.getsize(os.path.join(task_dir, LOG_NAME))
        except OSError:
            state["log_size"] = None
        state["process"] = None  # note_processes()
    else:
        state["log_tail"] = log_tail(task_dir, tail_lines)
        state["error"] = error_in(log_end(task_dir, ERROR_SEARCH_BYTES))
    return state


def note_processes(seen):
    """Whether the kernel holds the processes of each running task of a snapshot (`process`: running, stopped,
    uninterruptible), in one pass over /proc: once per answer, not at every snapshot of a wait."""
    running = [task for task in seen["tasks"] if task["running"] and task["pid"]]  # none left: None
    states = process_states([task["pid"] for task in running])
    for task in running:
        task["process"] = states[task["pid"]]
    return seen


def answers(address, timeout):
    try:
        host, port = parse_host_port(address)
    except ValueError:
        return False  # no address, no answer
    return tcp_answers(host, port, timeout)


def snapshot(tasks, work_dir=None, tail_lines=20, probe=(), probe_timeout=2.0):
    """The job as this host sees it now: this host's tasks ({name, dir}), the leader's files in work_dir, the other hosts' ports."""
    # The ports first: a server stops because the leader has ended, so the leader's records read after its port show
    # that end whenever the port's silence comes from it, even when a probe of a lost host took seconds.
    unreachable = [a for a in probe if not answers(a, probe_timeout)]
    states = [task_state(t["name"], t["dir"], tail_lines) for t in tasks]
    status = result = age = None
    if work_dir:
        status_path = os.path.join(work_dir, "status.json")
        status = read_json(status_path)
        if status is not None:
            try:
                age = round(time.time() - os.path.getmtime(status_path), 1)
            except OSError:
                pass
        result = read_json(os.path.join(work_dir, "result.json"))
    return dict(
        tasks=states,
        status=status,
        status_age=age,
        result=result,
        unreachable=unreachable,
        failed_tasks=[t["name"] for t in states if failed(t)],
    )


def moment(seen):
    """What a watch acts on in a snapshot (not the step, which moves all the time): a change of it ends the wait."""
    status = seen["status"] or {}
    return (
        [(t["name"], t["running"], t["supervisor_running"], t["pid"], t["returncode"]) for t in seen["tasks"]],
        seen["unreachable"],
        seen["result"] is not None,
        status.get("state"),
        status.get("started_at"),
        status.get("first_step_at") is not None,
    )


def watch(tasks, work_dir=None, tail_lines=20, probe=(), probe_timeout=2.0, wait=0.0, wait_interval=1.0):
    """A snapshot, then more every wait_interval seconds for up to wait seconds while every task runs and nothing changes;
    the last snapshot, with `waited` (seconds)."""
    started = time.monotonic()
    seen = snapshot(tasks, work_dir, tail_lines, probe, probe_timeout)
    # Only a job whose tasks all run is waited on: an ended or failed task is news to answer with at once.
    while all(t["running"] for t in seen["tasks"]) and time.monotonic() - started + wait_interval <= wait:
        time.sleep(wait_interval)
        latest = snapshot(tasks, work_dir, tail_lines, probe, probe_timeout)
        news, seen = moment(latest) != moment(seen), latest
        if news:
            break
    return dict(note_processes(seen), waited=round(time.monotonic() - started, 1))
