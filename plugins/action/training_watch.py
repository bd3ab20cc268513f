# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Follow a training job from the controller, printing progress as it goes.

Runs on the controller for one host of the cluster and polls that host with the
read-only tfdist.cluster.training_status module. A module alone could not show
progress while it runs; an action plugin can print between polls. A host that is the
controller's own machine (a local connection, no become) is looked at in this process,
with the module's own code: no Python started there every few seconds beside the training.

What ends a job besides its end (module_utils/_liveness.py has the rules): a task that died, a peer silent for
longer than a blip, a stall (no step, or a process the kernel holds, for the stall time) and the deadline the user
set. Running long never does: without a deadline a job is watched as long as it makes progress.
"""

from __future__ import annotations

import os
import time

from ansible.errors import AnsibleActionFail, AnsibleConnectionFailure
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.tfdist.cluster.plugins.module_utils import _job_state
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._cluster import ClusterError, leader, task_folders
from ansible_collections.tfdist.cluster.plugins.module_utils._failures import failure_line
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._files import FILE_MODE
from ansible_collections.tfdist.cluster.plugins.module_utils._liveness import (
    Frozen, Progress, Silence, clock_time, format_duration, frozen_message, parse_duration, stall_message)
from ansible_collections.tfdist.cluster.plugins.module_utils._sizes import budget_seconds
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist.train.progress import format_progress

display = Display()

ARGUMENT_SPEC = {
    "work_dir": {"type": "str", "required": True},
    "cluster_tasks": {"type": "list", "elements": "dict", "required": True},
    "host": {"type": "str", "required": True},
    "poll_interval": {"type": "float", "default": 2.0},
    # 0: no limit. Past it the watch stops following and fails; the job goes on (a re-run of deploy watches it again).
    "timeout": {"type": "float", "default": 0.0},
    # A duration (2h, 90m, 1h30m): past deadline_from + deadline the job is stopped. '' : none.
    "deadline": {"type": "str", "default": ""},
    "deadline_from": {"type": "float"},
    # US dollars the run may cost, and what the cluster costs an hour (0: none, unknown): the budget is another
    # deadline, the time the price takes to reach it.
    "budget": {"type": "float", "default": 0.0},
    "price_per_hour": {"type": "float", "default": 0.0},
    "stall_seconds": {"type": "float", "default": 900.0},
    "unreachable_grace": {"type": "float", "default": 60.0},
    "progress_every": {"type": "float", "default": 2.0},
    "startup_grace": {"type": "float", "default": 180.0},
    "tail_lines": {"type": "int", "default": 25},
    "linger_timeout": {"type": "float", "default": 60.0},
    "worker_loss": {"type": "str", "default": "fail", "choices": ["fail", "tolerate"]},
    "strategy": {"type": "str", "default": "parameter_server"},
    "stop_file": {"type": "path", "default": ""},
}


def earliest_limit(deadline, budget, price_per_hour):
    """(seconds the job may run, 'deadline' or 'budget'): a budget is another deadline, the time the cluster's price
    an hour takes to reach it; the earlier of the two stops the job. (None, 'deadline'): neither."""
    by_budget = budget_seconds(budget, price_per_hour)
    if by_budget is not None and (deadline is None or by_budget < deadline):
        return by_budget, "budget"
    return deadline, "deadline"


# The key of this host's own connection in a Silence (the others are HOST:PORT addresses).
CONNECTION = "connection"
# How long after the deadline the watch of a host without the leader waits for the leader's host to stop the job
# (the leader goes first: its last checkpoint needs the parameter servers).
DEADLINE_SLACK = 120.0


def stopped_elsewhere(stop_file, host):
    """The host whose watch failed first and wrote the job's stop file, if not this one."""
    try:
        with open(stop_file) as handle:
            failed_host = handle.read().strip()
    except OSError:
        return None
    return failed_host if failed_host and failed_host != host else None


def mark_stopped(stop_file, host):
    """Tell the other hosts' watches to stop: the first failure wins."""
    if not stop_file:
        return
    try:
        os.makedirs(os.path.dirname(stop_file) or ".", exist_ok=True)
        with os.fdopen(os.open(stop_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE), "w") as handle:
            handle.write(host)
    except OSError:
        pass  # another watch failed first, or the folder is gone: either way the others stop


def unanswered(gone, never_heard, status, grace_over):
    """The addresses of other hosts' tasks that count as lost: one that never answered within the start-up grace
    period (never_heard), or one that answered and then stayed silent for longer than a blip (gone) while the
    leader's status says steps remain (multi_worker_mirrored workers, and a classic cluster's other workers, leave
    as soon as the last step is done). A script that reports no status cannot tell a clean exit from a crash here:
    that task's own host's watch reads its exit code."""
    state = status.get("state")
    if state not in (None, "starting", "running") or (status.get("step") or 0) >= (status.get("target_steps") or 1):
        return []
    reports_steps = state is not None
    return sorted(set(gone if reports_steps else ()) | set(never_heard if grace_over else ()))


def this_run(status, leading_task):
    """Whether the chief's status.json was written by the run the leading task is now (not left by the last run).

    The chief writes its first status after its supervisor recorded the task's start, on the same host's clock.
    """
    started = (leading_task or {}).get("started_at")
    return started is not None and (status.get("started_at") or 0) >= started


def how_it_ended(task):
    """Why a task of this host is no longer running: its exit code, or its supervisor's reason."""
    code = task.get("returncode")
    how = f"exited with code {code}" if code is not None else "died without an exit code"
    if task.get("reason") and task["reason"] != "exited":
        how += f" ({task['reason']})"
    return how


def loss(task, why, node_gone=False, error=""):
    """One lost TF task, as the deploy's restart policy records it: error is what its log says went wrong (the
    exception line, or the last line it wrote), '' when there is none to read."""
    return {"task": task["name"], "host": task["host"], "why": why, "node_gone": node_gone,
            "returncode": task.get("returncode"), "error": error}


def died(task, host):
    """The loss of a task of this host that ended badly."""
    error = task.get("error") or {}
    how = how_it_ended(task)
    if failure_line(error):
        how += ": " + failure_line(error)
    return loss(dict(task, host=host), how, error=error.get("error") or "")


def describe_failure(task, host):
    """The message of a task that ended badly: how it ended, the exception its log ends with and where it was
    raised, then the last lines of its log."""
    tail = task.get("log_tail") or ""
    if isinstance(tail, list):
        tail = "\n".join(tail)
    return f"TF task {task['name']} on {host} {died(task, host)['why']}. Last lines of its log:\n{tail}"


def stalls(tasks, leading, status, ours, progress, frozen, now, host, said_done=False):
    """[(task, why)] of this host's running tasks that stalled: the leader without progress (its step, or its
    log without a status.json of this run) until it says it is done, any task whose process the kernel has held
    for the stall time."""
    found = []
    for task in tasks.values():
        frozen.see(task["name"], task.get("process") if task["running"] else None, now)
    leading_task = tasks.get(leading["name"])
    if leading_task is not None and leading_task["running"] and not said_done:
        progress.see(("step", status.get("step")) if ours else ("log", leading_task.get("log_size")), now)
        silent = progress.stalled(now, status.get("steps_per_sec") if ours else None)
        if silent is not None:
            why = stall_message(status if ours else None, silent, progress.moved_at, frozen.state(leading["name"]))
            found.append((dict(leading_task, host=host), why))
    for name, state, seconds in frozen.stalled(now):
        if name != leading["name"] and name in tasks:
            found.append((dict(tasks[name], host=host), frozen_message(state, seconds)))
    return found


class Watch:
    """What the watch of one host has seen so far, with one method per decision that can end it.

    Each decision returns the watch's result to end with, or None to go on; `decide` asks them in order after each
    answer of the host. Durations are on the controller's clock; wall-clock times only for the deadline and the
    messages.
    """

    def __init__(self, args, stop_tasks):
        """stop_tasks(names): stops those tasks of this host (a lost worker that stalled)."""
        self.args, self.stop_tasks = args, stop_tasks
        self.host = host = args["host"]
        self.local = [t for t in args["cluster_tasks"] if t["host"] == host]
        self.kinds = {t["name"]: t["type"] for t in args["cluster_tasks"]}
        try:
            self.leading = leader(args["cluster_tasks"])
        except ClusterError as error:
            raise AnsibleActionFail(f"cluster_tasks: {error}") from error
        try:
            deadline = parse_duration(args["deadline"]) if args["deadline"] else None
        except ValueError as error:
            raise AnsibleActionFail(f"deadline: {error}") from error
        self.deadline, self.limit = earliest_limit(deadline, args["budget"], args["price_per_hour"])
        # The host of the leader (the chief, or worker 0 without one) prints progress and probes the others.
        self.watches_leader = self.leading["host"] == host
        remote = [t for t in args["cluster_tasks"] if t["host"] != host and t["type"] != "evaluator"]
        self.probe_names = {f"{t['address']}:{t['port']}": t for t in remote} if self.watches_leader else {}
        self.started = time.monotonic()
        began = time.time()
        self.deadline_at = (args["deadline_from"] or began) + self.deadline if self.deadline is not None else None
        self.result = {"progressed": False} if self.watches_leader else {}
        self.progress = Progress(args["stall_seconds"], began)
        self.frozen = Frozen(args["stall_seconds"])
        self.silence = Silence(args["unreachable_grace"])
        self.silence.see(CONNECTION, True, began)  # the launch has just reached this host
        self.last_step, self.last_print = None, 0.0
        self.leader_done_at = None
        self.lost = []
        self.status = {}
        # What the latest answer said (set by see and take_in).
        self.probe, self.now, self.elapsed = {}, began, 0.0
        self.tasks, self.unreachable, self.ours, self.said_done, self.leader_done = {}, set(), False, False, False

    def module_args(self):
        """What the training_status module (or _job_state.watch on this machine) is asked on each poll."""
        return {
            "work_dir": self.args["work_dir"],
            "tasks": task_folders(self.local, self.args["work_dir"]),
            "probe": sorted(self.probe_names),
            "tail_lines": self.args["tail_lines"],
            # Each call looks every poll_interval and answers at once when a task starts or ends, or when a
            # progress line is due: a failure is seen as soon as before, with a Python started on the host
            # every few seconds instead of every poll (it took CPU from training on small hosts).
            "wait": max(self.args["progress_every"], self.args["poll_interval"]),
            "wait_interval": self.args["poll_interval"],
        }

    def end(self, **keys):
        """The watch's result, with these keys: what the watch ends with."""
        self.result.update(keys)
        return self.result

    # ------------------------------------------------------------ the lost-worker rule

    def tolerates(self, name):
        """Whether training goes on without this task: ParameterServerStrategy goes on without a worker (not the
        leader) when worker_loss=tolerate; every other loss stops the job."""
        return (self.args["worker_loss"] == "tolerate" and self.args["strategy"] == "parameter_server"
                and self.kinds.get(name) == "worker" and name != self.leading["name"])

    def spared(self, name, warning):
        """Whether the job goes on without this lost task; a task newly spared is warned about and counted in
        lost_tasks."""
        if name in self.lost:
            return True
        if not self.tolerates(name):
            return False
        display.warning(warning)
        self.lost.append(name)
        return True

    def failed_host(self):
        """The host whose watch failed first and stopped the job, if not this one."""
        return stopped_elsewhere(self.args["stop_file"], self.host) if self.args["stop_file"] else None

    # ------------------------------------------------------------ the decisions

    def host_lost(self, error):
        """This host did not answer: None while that lasts less than the grace (a blip: it is asked again), else the
        end, its tasks lost."""
        now = time.time()
        self.silence.see(CONNECTION, False, now)
        # Once another host's watch has failed, one more try is not worth a connection timeout.
        if not self.silence.gone(CONNECTION, now) and not self.failed_host():
            return None
        silent = format_duration(self.silence.silent_for(CONNECTION, now))
        names = ", ".join(t["name"] for t in self.local)
        if not (self.local and all(self.tolerates(t["name"]) for t in self.local)):
            # Not raised as unreachable: the host stays in the play, for the deploy to replace its node.
            return self.end(failed=True, node_gone=True,
                            losses=[loss(t, "its node stopped answering", node_gone=True) for t in self.local],
                            msg=f"{self.host} stopped answering for {silent} ({error}); its task(s) "
                                f"{names or 'none'} are lost.")
        display.warning(f"{self.host} is gone for {silent} ({error}); its task(s) {names} are lost. "
                        "Training goes on with the other workers (worker_loss=tolerate).")
        return self.end(changed=False, lost_tasks=[t["name"] for t in self.local])

    def decide(self, probe):
        """The result to end the watch with after this answer of the host, or None to poll again."""
        self.see(probe)
        for decision in (self.unreadable, self.failed_tasks, self.stopped_by_another, self.take_in, self.finished,
                         self.lost_peers, self.stalled, self.past_limit, self.timed_out):
            ended = decision()
            if ended is not None:
                return ended
        return None

    def see(self, probe):
        """Take the host's answer: it is reachable, and its status (if it could read one) is the latest."""
        self.probe, self.now = probe, time.time()
        self.silence.see(CONNECTION, True, self.now)
        if not probe.get("failed"):
            self.status = self.result["status"] = probe.get("status") or self.status

    def unreadable(self):
        """The host answered, but could not read the job's state."""
        if self.probe.get("failed"):
            return self.end(failed=True, msg=f"could not read the job's state on {self.host}: {self.probe.get('msg')}")
        return None

    def failed_tasks(self):
        """Tasks of this host that ended badly, besides the workers the job goes on without."""
        failed = [t for t in self.probe["tasks"] if t["name"] in self.probe["failed_tasks"]]
        failed = [t for t in failed if not self.spared(
            t["name"], describe_failure(t, self.host) + "\nTraining goes on with the other workers.")]
        if not failed:
            return None
        return self.end(failed=True, failed_tasks=[t["name"] for t in failed],
                        losses=[died(t, self.host) for t in failed],
                        msg="\n\n".join(describe_failure(t, self.host) for t in failed))

    def stopped_by_another(self):
        """Another host's watch failed: the job is over, and this host's part of it is stopped too."""
        failed_host = self.failed_host()
        if failed_host:
            return self.end(failed=True, stopped_by=failed_host, msg=f"the job failed on {failed_host}")
        return None

    def take_in(self):
        """Take in the tasks, the peers and the progress the answer shows, printing progress when due; never ends the
        watch (None)."""
        status, host = self.status, self.host
        self.elapsed = time.monotonic() - self.started
        self.unreachable = set(self.probe.get("unreachable") or [])
        for address in self.probe_names:
            self.silence.see(address, address not in self.unreachable, self.now)
        self.tasks = {t["name"]: t for t in self.probe["tasks"]}
        leading_task = self.tasks.get(self.leading["name"])
        self.ours = ours = this_run(status, leading_task)
        if self.watches_leader and ours:
            self.result["progressed"] = bool(status.get("first_step_at"))
        if (self.watches_leader and "resumed_from" not in self.result and status.get("initial_step") is not None
                and ours):
            # The step this run started from. Read from any status of this run, "done" included: a job
            # relaunched near its end can finish between two polls without a "running" one.
            self.result["resumed_from"] = status["initial_step"]
            if self.result["resumed_from"]:
                display.display(f"[{host}] resumed from the checkpoint of step {self.result['resumed_from']}")
        trained = status.get("state") == "running" and status.get("first_step_at")
        if self.watches_leader and trained and status.get("step") != self.last_step:
            moment = time.monotonic()
            if moment - self.last_print >= self.args["progress_every"]:
                display.display(f"[{host}] {format_progress(status)}")
                self.last_step, self.last_print = status.get("step"), moment
        # The leader is done when it ended cleanly, or once it says so (its results are written): what is left is
        # its exit (a ParameterServerStrategy coordinator's teardown can take a while), awaited like a server's.
        self.said_done = ours and status.get("state") == "done"
        self.leader_done = leading_task is not None and (
            self.said_done and leading_task["running"]
            or not leading_task["running"] and leading_task.get("returncode") == 0)
        if self.leader_done and self.leader_done_at is None:
            self.leader_done_at = time.monotonic()
            if status:
                display.display(f"[{host}] {format_progress(status)}")
        return None

    def finished(self):
        """This host's part of the job ended: every task of this host has ended cleanly (servers stop by themselves
        shortly after the leader is gone, or are left lingering after linger_timeout)."""
        still_running = [t["name"] for t in self.tasks.values() if t["running"]]
        elapsed = round(self.elapsed, 1)
        if self.leader_done and (not still_running
                                 or time.monotonic() - self.leader_done_at > self.args["linger_timeout"]):
            return self.end(changed=False, status=self.status, result=self.probe.get("result"),
                            lingering=still_running, lost_tasks=self.lost, elapsed=elapsed)
        if not self.watches_leader and self.tasks and not still_running:
            return self.end(changed=False, tasks=list(self.tasks.values()), lost_tasks=self.lost, elapsed=elapsed)
        return None

    def lost_peers(self):
        """Tasks of other hosts that stopped answering the leader's host (unanswered), besides the workers the job
        goes on without."""
        now, probe_names = self.now, self.probe_names
        gone = [a for a in probe_names if self.silence.gone(a, now)]
        never_heard = [a for a in self.unreachable if not self.silence.heard(a)]
        dead = unanswered(gone, never_heard, self.status, self.elapsed > self.args["startup_grace"])
        dead = [a for a in dead if not self.spared(
            probe_names[a]["name"], f"TF task {probe_names[a]['name']} ({a} on {probe_names[a]['host']}) stopped "
                                    "answering. Training goes on with the other workers (worker_loss=tolerate).")]
        if not self.watches_leader or not dead or self.leader_done:
            return None
        dead = sorted(dead)
        names = ", ".join(f"{probe_names[a]['name']} ({a} on {probe_names[a]['host']})" for a in dead)
        silent = {a: format_duration(self.silence.silent_for(a, now)) for a in dead}
        return self.end(
            failed=True,
            failed_tasks=[probe_names[a]["name"] for a in dead],
            losses=[loss(probe_names[a], f"stopped answering on {a}"
                         + (f" for {silent[a]}" if self.silence.heard(a) else " since its launch"))
                    for a in dead],
            msg=f"TF task(s) {names} stopped answering while {self.leading['name']} leads the training. "
                "Its host's own watch reports its log; see also the task logs under the job folder.",
        )

    def stalled(self):
        """Tasks of this host that stalled; a worker the job goes on without is stopped."""
        found = stalls(self.tasks, self.leading, self.status, self.ours, self.progress, self.frozen, self.now,
                       self.host, self.said_done)
        spared = [task["name"] for task, why in found if self.spared(
            task["name"], f"TF task {task['name']} on {self.host} {why}. "
                          "Training goes on with the other workers (worker_loss=tolerate).")]
        if spared:
            self.stop_tasks(spared)
        found = [(task, why) for task, why in found if task["name"] not in spared]
        if not found:
            return None
        return self.end(failed=True, failed_tasks=[task["name"] for task, why in found],
                        losses=[loss(dict(task, host=self.host), why) for task, why in found],
                        msg="\n".join(f"TF task {task['name']} on {self.host} {why}." for task, why in found))

    def past_limit(self):
        """The deadline (or the budget) is reached: the job is stopped, keeping its latest checkpoint. A host
        without the leader waits DEADLINE_SLACK longer for the leader's host to stop it first."""
        if self.deadline_at is None or self.now < self.deadline_at + (0 if self.watches_leader else DEADLINE_SLACK):
            return None
        deadline, status, args = self.deadline, self.status, self.args
        where = f" at {format_progress(status)}" if status else ""
        since = clock_time(self.deadline_at - deadline)
        if self.limit == "budget":
            msg = (f"stopped: budget (${args['budget']:.2f} at ${args['price_per_hour']:.4g}/h, "
                   f"spent {format_duration(deadline)} after {since}){where}. It keeps its latest checkpoint: a later "
                   "deploy with a larger budget resumes from it.")
        else:
            msg = (f"the job reached its deadline ({format_duration(deadline)} after {since}) and was stopped{where}. "
                   "It keeps its latest checkpoint: a later deploy with a later deadline resumes from it.")
        return self.end(failed=True, deadline_reached=True, limit=self.limit, msg=msg)

    def timed_out(self):
        """Past the watch's own timeout: it stops following and fails; the job goes on."""
        timeout = self.args["timeout"]
        if not timeout or self.elapsed <= timeout:
            return None
        return self.end(failed=True, detached=True,
                        msg=f"stopped watching after {format_duration(timeout)} (the watch's timeout; last progress: "
                            f"{format_progress(self.status) if self.status else 'none'}). The job goes on: run the "
                            "same deploy again to watch it.")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(ARGUMENT_SPEC)[1]
        try:
            result.update(self.follow(args, task_vars))
        except AnsibleConnectionFailure:
            mark_stopped(args["stop_file"], args["host"])
            raise
        except Exception:
            mark_stopped(args["stop_file"], args["host"])
            self.stop_tasks(args, task_vars)
            raise
        if not result.get("failed") or result.get("detached"):
            return result  # a watch that stopped following leaves the job running, as the user asked
        if result.get("deadline_reached"):
            # This host's tasks first, the leader among them writing its last checkpoint while the others serve.
            result["stopped_tasks"] = self.stop_tasks(args, task_vars)
            mark_stopped(args["stop_file"], args["host"])
            return result
        if not result.get("stopped_by"):
            mark_stopped(args["stop_file"], args["host"])
        if not result.get("node_gone"):
            result["stopped_tasks"] = self.stop_tasks(args, task_vars)
        return result

    def stop_tasks(self, args, task_vars, names=None):
        """Stop this host's tasks (those named, or all) as soon as its watch fails; the names of those that were
        still running. The leader goes first: stopped, it writes its last checkpoint while its servers still serve.

        Nothing may keep running (and paying) once nobody watches it, and a leader that trains on after a loss
        can finish the job before the play moves on (another host's watch may wait for SSH timeouts).
        """
        try:
            leading = leader(args["cluster_tasks"])["name"]
        except ClusterError:
            leading = None
        local = sorted((t for t in args["cluster_tasks"] if t["host"] == args["host"]
                        and (names is None or t["name"] in names)), key=lambda t: t["name"] != leading)
        if not local or self._task.check_mode:
            return []
        try:
            stopped = self._execute_module(
                module_name="tfdist.cluster.training_task",
                module_args={"tasks": task_folders(local, args["work_dir"]), "state": "stopped"},
                task_vars=task_vars,
            )
        except AnsibleConnectionFailure as error:
            display.warning(f"{args['host']}: could not stop its tasks after the failure ({error})")
            return []
        if stopped.get("failed"):
            display.warning(f"{args['host']}: could not stop its tasks after the failure: {stopped.get('msg')}")
        return [t["name"] for t in stopped.get("tasks") or [] if t.get("stopped")]

    def follow(self, args, task_vars):
        """Poll the host until its part of the job ends; the result of the watch."""
        watch = Watch(args, lambda names: self.stop_tasks(args, task_vars, names=names))
        module_args = watch.module_args()
        # cloud=local: the job runs on this machine, where a module run every few seconds takes CPU from it.
        here = self._connection.transport == "local" and not self._play_context.become
        while True:
            try:
                if here:
                    probe = _job_state.watch(**module_args)
                else:
                    probe = self._execute_module(
                        module_name="tfdist.cluster.training_status",
                        module_args=module_args,
                        task_vars=task_vars,
                    )
            except AnsibleConnectionFailure as error:
                ended = watch.host_lost(error)
                if ended is not None:
                    return ended
                time.sleep(args["poll_interval"])  # a blip: the host is asked again
                continue
            ended = watch.decide(probe)
            if ended is not None:
                return ended
            if (probe.get("waited") or 0) < args["poll_interval"]:
                time.sleep(args["poll_interval"])  # it answered at once: tasks that ended linger, or it has news
