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
from ansible_collections.tfdist.cluster.plugins.module_utils._cluster import ClusterError, leader, task_folders
from ansible_collections.tfdist.cluster.plugins.module_utils._failures import failure_line
from ansible_collections.tfdist.cluster.plugins.module_utils._files import FILE_MODE
from ansible_collections.tfdist.cluster.plugins.module_utils._liveness import (
    Frozen, Progress, Silence, clock_time, format_duration, frozen_message, parse_duration, stall_message)
from ansible_collections.tfdist.cluster.plugins.module_utils._sizes import budget_seconds

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


def format_progress(status):
    """One human line from the leader's status.json."""
    step, target = status.get("step") or 0, status.get("target_steps") or 0
    pct = f" ({100.0 * step / target:.0f}%)" if target else ""
    parts = [f"step {step}/{target}{pct}"]
    if status.get("loss") is not None:
        parts.append(f"loss {status['loss']:.4f}")
    if status.get("examples_per_sec"):
        parts.append(f"{status['examples_per_sec']:.0f} examples/s")
    if status.get("eta_seconds") is not None:
        parts.append(f"ETA {status['eta_seconds']:.0f}s")
    return " | ".join(parts)


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
        result = {}
        host = args["host"]
        local = [t for t in args["cluster_tasks"] if t["host"] == host]
        kinds = {t["name"]: t["type"] for t in local}
        remote = [t for t in args["cluster_tasks"] if t["host"] != host and t["type"] != "evaluator"]
        try:
            leading = leader(args["cluster_tasks"])
        except ClusterError as error:
            raise AnsibleActionFail(f"cluster_tasks: {error}") from error
        try:
            deadline = parse_duration(args["deadline"]) if args["deadline"] else None
        except ValueError as error:
            raise AnsibleActionFail(f"deadline: {error}") from error
        deadline, limit = earliest_limit(deadline, args["budget"], args["price_per_hour"])
        # The host of the leader (the chief, or worker 0 without one) prints progress and probes the others.
        watches_leader = leading["host"] == host
        probe_names = {f"{t['address']}:{t['port']}": t for t in remote} if watches_leader else {}
        module_args = {
            "work_dir": args["work_dir"],
            "tasks": task_folders(local, args["work_dir"]),
            "probe": sorted(probe_names),
            "tail_lines": args["tail_lines"],
            # Each call looks every poll_interval and answers at once when a task starts or ends, or when a
            # progress line is due: a failure is seen as soon as before, with a Python started on the host
            # every few seconds instead of every poll (it took CPU from training on small hosts).
            "wait": max(args["progress_every"], args["poll_interval"]),
            "wait_interval": args["poll_interval"],
        }

        # Durations on the controller's clock; wall-clock times only for the deadline and the messages.
        started = time.monotonic()
        began = time.time()
        deadline_at = (args["deadline_from"] or began) + deadline if deadline is not None else None
        if watches_leader:
            result["progressed"] = False
        progress = Progress(args["stall_seconds"], began)
        frozen = Frozen(args["stall_seconds"])
        silence = Silence(args["unreachable_grace"])
        silence.see(CONNECTION, True, began)  # the launch has just reached this host
        last_step, last_print = None, 0.0
        leader_done_at = None
        # ParameterServerStrategy goes on without a worker; every other loss stops the job.
        tolerate = args["worker_loss"] == "tolerate" and args["strategy"] == "parameter_server"
        only_workers = bool(local) and all(t["type"] == "worker" for t in local)
        lost = []
        status = {}
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
                now = time.time()
                silence.see(CONNECTION, False, now)
                # Once another host's watch has failed, one more try is not worth a connection timeout.
                failed_elsewhere = args["stop_file"] and stopped_elsewhere(args["stop_file"], host)
                # A connection that drops for less than the grace is a blip: the host is asked again.
                if not silence.gone(CONNECTION, now) and not failed_elsewhere:
                    time.sleep(args["poll_interval"])
                    continue
                silent = format_duration(silence.silent_for(CONNECTION, now))
                if not (tolerate and only_workers):
                    # Not raised as unreachable: the host stays in the play, for the deploy to replace its node.
                    result.update(failed=True, node_gone=True,
                                  losses=[loss(t, "its node stopped answering", node_gone=True) for t in local],
                                  msg=f"{host} stopped answering for {silent} ({error}); its task(s) "
                                      f"{', '.join(t['name'] for t in local) or 'none'} are lost.")
                    return result
                names = ", ".join(t["name"] for t in local)
                display.warning(f"{host} is gone for {silent} ({error}); its task(s) {names} are lost. "
                                "Training goes on with the other workers (worker_loss=tolerate).")
                result.update(changed=False, lost_tasks=[t["name"] for t in local])
                return result
            now = time.time()
            silence.see(CONNECTION, True, now)
            if probe.get("failed"):
                result.update(failed=True, msg=f"could not read the job's state on {host}: {probe.get('msg')}")
                return result
            status = probe.get("status") or status
            result["status"] = status

            failed = [t for t in probe["tasks"] if t["name"] in probe["failed_tasks"]]
            for task in failed:
                if (tolerate and kinds.get(task["name"]) == "worker" and task["name"] != leading["name"]
                        and task["name"] not in lost):
                    display.warning(describe_failure(task, host) + "\nTraining goes on with the other workers.")
                    lost.append(task["name"])
            failed = [t for t in failed if t["name"] not in lost]
            if failed:
                result.update(
                    failed=True,
                    failed_tasks=[t["name"] for t in failed],
                    losses=[died(t, host) for t in failed],
                    msg="\n\n".join(describe_failure(t, host) for t in failed),
                )
                return result
            # Another host's watch failed: the job is over, and this host's part of it is stopped too.
            failed_host = stopped_elsewhere(args["stop_file"], host) if args["stop_file"] else None
            if failed_host:
                result.update(failed=True, stopped_by=failed_host, msg=f"the job failed on {failed_host}")
                return result

            elapsed = time.monotonic() - started
            unreachable = set(probe.get("unreachable") or [])
            for address in probe_names:
                silence.see(address, address not in unreachable, now)
            tasks = {t["name"]: t for t in probe["tasks"]}
            leading_task = tasks.get(leading["name"])
            ours = this_run(status, leading_task)
            trained = status.get("state") == "running" and status.get("first_step_at")
            if watches_leader and ours:
                result["progressed"] = bool(status.get("first_step_at"))
            if watches_leader and "resumed_from" not in result and status.get("initial_step") is not None and ours:
                # The step this run started from. Read from any status of this run, "done" included: a job
                # relaunched near its end can finish between two polls without a "running" one.
                result["resumed_from"] = status["initial_step"]
                if result["resumed_from"]:
                    display.display(f"[{host}] resumed from the checkpoint of step {result['resumed_from']}")
            if watches_leader and trained and status.get("step") != last_step:
                moment = time.monotonic()
                if moment - last_print >= args["progress_every"]:
                    display.display(f"[{host}] {format_progress(status)}")
                    last_step, last_print = status.get("step"), moment

            # The leader is done when it ended cleanly, or once it says so (its results are written): what is left is
            # its exit (a ParameterServerStrategy coordinator's teardown can take a while), awaited like a server's.
            said_done = ours and status.get("state") == "done"
            leader_done = leading_task is not None and (
                said_done and leading_task["running"] or not leading_task["running"] and leading_task.get("returncode") == 0)
            if leader_done and leader_done_at is None:
                leader_done_at = time.monotonic()
                if status:
                    display.display(f"[{host}] {format_progress(status)}")
            # The job has ended here when every task of this host has ended cleanly
            # (servers stop by themselves shortly after the leader is gone).
            still_running = [t["name"] for t in tasks.values() if t["running"]]
            if leader_done and (not still_running or time.monotonic() - leader_done_at > args["linger_timeout"]):
                result.update(changed=False, status=status, result=probe.get("result"),
                              lingering=still_running, lost_tasks=lost, elapsed=round(elapsed, 1))
                return result
            if not watches_leader and tasks and not still_running:
                result.update(changed=False, tasks=list(tasks.values()), lost_tasks=lost, elapsed=round(elapsed, 1))
                return result

            gone = [a for a in probe_names if silence.gone(a, now)]
            never_heard = [a for a in unreachable if not silence.heard(a)]
            dead = unanswered(gone, never_heard, status, elapsed > args["startup_grace"])
            for address in dead:
                task = probe_names[address]
                if tolerate and task["type"] == "worker" and task["name"] != leading["name"] and task["name"] not in lost:
                    display.warning(f"TF task {task['name']} ({address} on {task['host']}) stopped answering. "
                                    "Training goes on with the other workers (worker_loss=tolerate).")
                    lost.append(task["name"])
            dead = [a for a in dead if probe_names[a]["name"] not in lost]
            if watches_leader and dead and not leader_done:
                names = ", ".join(f"{probe_names[a]['name']} ({a} on {probe_names[a]['host']})" for a in sorted(dead))
                silent = {a: format_duration(silence.silent_for(a, now)) for a in dead}
                result.update(
                    failed=True,
                    failed_tasks=[probe_names[a]["name"] for a in sorted(dead)],
                    losses=[loss(probe_names[a], f"stopped answering on {a}"
                                 + (f" for {silent[a]}" if silence.heard(a) else " since its launch"))
                            for a in sorted(dead)],
                    msg=f"TF task(s) {names} stopped answering while {leading['name']} leads the training. "
                        "Its host's own watch reports its log; see also the task logs under the job folder.",
                )
                return result

            stalled = self.stalls(tasks, leading, status, ours, progress, frozen, now, host, said_done)
            for task, why in list(stalled):
                if tolerate and kinds.get(task["name"]) == "worker" and task["name"] != leading["name"]:
                    display.warning(f"TF task {task['name']} on {host} {why}. "
                                    "Training goes on with the other workers (worker_loss=tolerate).")
                    self.stop_tasks(args, task_vars, names=[task["name"]])
                    lost.append(task["name"])
                    stalled.remove((task, why))
            if stalled:
                result.update(failed=True, failed_tasks=[task["name"] for task, why in stalled],
                              losses=[loss(dict(task, host=host), why) for task, why in stalled],
                              msg="\n".join(f"TF task {task['name']} on {host} {why}." for task, why in stalled))
                return result

            if deadline_at is not None and now >= deadline_at + (0 if watches_leader else DEADLINE_SLACK):
                where = f" at {format_progress(status)}" if status else ""
                result.update(failed=True, deadline_reached=True, limit=limit,
                              msg=f"the job reached its deadline ({format_duration(deadline)} after "
                                  f"{clock_time(deadline_at - deadline)}) and was stopped{where}. It keeps its latest "
                                  "checkpoint: a later deploy with a later deadline resumes from it.")
                if limit == "budget":
                    result["msg"] = (f"stopped: budget (${args['budget']:.2f} at ${args['price_per_hour']:.4g}/h, "
                                     f"spent {format_duration(deadline)} after {clock_time(deadline_at - deadline)})"
                                     f"{where}. It keeps its latest checkpoint: a later deploy with a larger budget "
                                     "resumes from it.")
                return result
            if args["timeout"] and elapsed > args["timeout"]:
                result.update(failed=True, detached=True,
                              msg=f"stopped watching after {format_duration(args['timeout'])} (the watch's timeout; "
                                  f"last progress: {format_progress(status) if status else 'none'}). The job goes on: "
                                  "run the same deploy again to watch it.")
                return result
            if (probe.get("waited") or 0) < args["poll_interval"]:
                time.sleep(args["poll_interval"])  # it answered at once: tasks that ended linger, or it has news

    @staticmethod
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
