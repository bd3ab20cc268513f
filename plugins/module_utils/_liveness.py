# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""What ends a job that has not died: a deadline set by the user, a stall, a peer silent for longer than a blip.

A running process is not a live job: a task stopped by the kernel (SIGSTOP, a stuck NFS read) keeps its port open,
and a deadlocked leader keeps running without a step. The watch (training_watch) looks every few seconds; these
rules turn its looks into a verdict, on the controller's clock (no node's clock is compared with another's).
Running long is never a reason: only tf_deadline, which the user sets, caps a run.

One home for reading a duration (tf_deadline=2h30m) too: the command line's check and the watch read it here.
"""

from __future__ import annotations

import re
import time

# 90, 90s, 15m, 2h, 1d, 1h30m, 1.5h: a whole or decimal number per unit, biggest unit first.
DURATION = re.compile(r"^(?:(?P<d>\d+(?:\.\d+)?)d)?(?:(?P<h>\d+(?:\.\d+)?)h)?(?:(?P<m>\d+(?:\.\d+)?)m)?"
                      r"(?:(?P<s>\d+(?:\.\d+)?)s?)?$")
UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
# A stall is at least this many of the job's recent step intervals without a step: a job that takes a minute per
# step is not stalled after the default 15 minutes of silence.
STEP_INTERVALS = 20
# What a task's process state means (_job_state's `process`), for the message.
FROZEN = {
    "stopped": "its process is stopped (SIGSTOP)",
    "uninterruptible": "its process is stuck in the kernel (uninterruptible sleep: a hung disk, NFS or device)",
}


def parse_duration(text):
    """Seconds of a duration such as 90, 45s, 15m, 2h, 1d or 1h30m; ValueError for anything else."""
    value = str(text).strip().lower().replace(" ", "")
    match = DURATION.match(value)
    if not value or not match or not any(match.groupdict().values()):
        raise ValueError("expected a duration such as 90s, 45m, 2h, 1d or 1h30m, got '%s'" % text)
    return sum(float(amount) * UNITS[unit] for unit, amount in match.groupdict().items() if amount)


def format_duration(seconds):
    """2h5m, 15m, 45s: whole units, the biggest two."""
    seconds = int(round(seconds))
    parts = []
    for unit in ("d", "h", "m", "s"):
        amount, seconds = divmod(seconds, UNITS[unit])
        if amount:
            parts.append("%d%s" % (amount, unit))
    return "".join(parts[:2]) or "0s"


def clock_time(epoch):
    return time.strftime("%H:%M:%S", time.localtime(epoch))


class Progress:
    """Whether the leader still makes progress: its step, or for a script that writes no status.json, the size of
    its log. `mark` is whichever it is; a change of it is progress. Times are the controller's time.time()."""

    def __init__(self, stall_seconds, now):
        self.stall_seconds = stall_seconds
        self.mark = None
        self.moved_at = now  # the launch counts as progress: a start-up longer than the stall time is a stall too

    def see(self, mark, now):
        if mark != self.mark:
            self.mark, self.moved_at = mark, now

    def limit(self, steps_per_sec=None):
        """Seconds without progress that make a stall: the stall time, or 20 recent step intervals if longer."""
        slowest = STEP_INTERVALS / steps_per_sec if steps_per_sec else 0.0
        return max(self.stall_seconds, slowest)

    def stalled(self, now, steps_per_sec=None):
        """Seconds without progress when that is a stall, else None (never with a stall time of 0)."""
        silent = now - self.moved_at
        return silent if self.stall_seconds > 0 and silent >= self.limit(steps_per_sec) else None


class Frozen:
    """Tasks whose processes the kernel holds (stopped, or stuck in uninterruptible sleep) and since when."""

    def __init__(self, stall_seconds):
        self.stall_seconds = stall_seconds
        self.since = {}

    def see(self, name, process_state, now):
        if process_state in FROZEN:
            self.since.setdefault((name, process_state), now)
        for key in [key for key in self.since if key[0] == name and key[1] != process_state]:
            del self.since[key]

    def state(self, name):
        """The frozen state of a task now, None when it runs."""
        return next((state for (task, state) in self.since if task == name), None)

    def stalled(self, now):
        """[(name, state, seconds)] of the tasks frozen for the stall time."""
        if self.stall_seconds <= 0:
            return []
        return sorted((name, state, now - since) for (name, state), since in self.since.items()
                      if now - since >= self.stall_seconds)


class Silence:
    """Peers (an address, a host's connection) that stopped answering, and for how long: a silence shorter than the
    grace is a blip, not a loss."""

    def __init__(self, grace):
        self.grace = grace
        self.heard_at = {}
        self.silent_since = {}

    def see(self, key, answered, now):
        if answered:
            self.heard_at[key] = now
            self.silent_since.pop(key, None)
        else:
            self.silent_since.setdefault(key, now)

    def heard(self, key):
        return key in self.heard_at

    def silent_for(self, key, now):
        since = self.silent_since.get(key)
        return 0.0 if since is None else now - since

    def gone(self, key, now):
        """Whether a peer that answered before has been silent for the grace."""
        return key in self.heard_at and key in self.silent_since and self.silent_for(key, now) >= self.grace


def stall_message(status, silent, moved_at, frozen_state=None):
    """How a leader stalled: `stalled at step 1200/5000: no step for 15m (last step 14:02:11; its process is stopped
    (SIGSTOP))`; for a script without a status.json, `stalled: no new output in its log for 15m (...)`."""
    status = status or {}
    step, target = status.get("step"), status.get("target_steps")
    at = " at step %s%s" % (step, "/%s" % target if target else "") if step is not None else ""
    what = "no step" if step is not None else "no new output in its log"
    notes = ["last %s %s" % ("step" if step is not None else "output", clock_time(moved_at))]
    if frozen_state:
        notes.append(FROZEN[frozen_state])
    return "stalled%s: %s for %s (%s)" % (at, what, format_duration(silent), "; ".join(notes))


def frozen_message(state, seconds):
    """How a task the kernel holds stalled: `stalled: its process is stopped (SIGSTOP) for 15m`."""
    return "stalled: %s for %s" % (FROZEN[state], format_duration(seconds))
