#!/usr/bin/python
# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Start or stop one supervised TensorFlow task on the managed host."""

from __future__ import annotations

DOCUMENTATION = r"""
module: training_task
short_description: Start or stop one supervised TensorFlow task
description:
  - Runs one task (a TF task such as chief, worker, ps or evaluator, or a daemon such as an HDFS NameNode)
    in the background under the tfdist supervisor, a detached process that this module forks on the managed
    host and that keeps the task's log, pids and exit record in O(dir). Nothing needs to be installed for it.
  - O(state=started) makes sure a run of the task is in progress. A task that is running with the
    same configuration is left alone (C(changed=false)); one running with another configuration is
    restarted. A task whose previous run has ended, successfully or not, is launched again, so a
    second run of a deploy playbook relaunches a finished job, which resumes from its checkpoint
    (set O(rerun_finished=false) to leave a task that finished with return code 0 alone).
  - A launch hands the task to the warm start that M(tfdist.cluster.training_files) left in O(dir) when it wrote the
    task's files (its Python has imported TensorFlow meanwhile); the task's log, record and return code are those of
    a cold start. O(state=stopped) and O(state=absent) end such a warm start.
  - A task whose job folder (two folders above O(dir)) keeps a network namespace (M(tfdist.cluster.local_network), a
    cluster on cloud=local) runs in it, with its supervisor; one whose namespace is gone is not started.
  - The configuration is a SHA-256 of O(command), O(env), O(chdir), the stop-when-gone settings and
    the contents of O(env_file), O(env_from_files) and O(watch_files), unless O(config_hash) is given.
    It is kept in O(dir)/config.sha256.
version_added: 0.1.0
author: tfdist maintainers (@tfdist)
options:
  name:
    description:
      - Task name, for example V(worker-1); shown in the log and the status.
      - Required unless O(tasks) is given.
    type: str
  dir:
    description:
      - The task's own directory (created when missing); holds task.log, task.pid, supervisor.pid,
        task.json and exit.json.
      - Required with O(name).
    type: path
  tasks:
    description:
      - Several tasks of one host in one call, handled in the order given (for a TF job, servers before
        the chief). Each entry holds the options of one task; the other options are shared by all of them.
      - With O(wait), the tasks launched by this call are watched together.
      - The result then lists each task's result in RV(tasks), and C(changed) is true when any task changed.
    type: list
    elements: dict
    version_added: 0.5.0
    suboptions:
      name:
        description: As O(name).
        type: str
        required: true
      dir:
        description: As O(dir).
        type: path
        required: true
      command:
        description: As O(command).
        type: list
        elements: str
      env_file:
        description: As O(env_file).
        type: path
      env_from_files:
        description: As O(env_from_files).
        type: dict
        default: {}
      watch_files:
        description: As O(watch_files).
        type: list
        elements: path
        default: []
      stop_when_gone:
        description: As O(stop_when_gone).
        type: str
      announce_end:
        description: As O(announce_end).
        type: int
      end_grace:
        description: As O(end_grace).
        type: int
        version_added: 0.5.0
  state:
    description:
      - V(started) ensures a run is in progress, see the description.
      - V(stopped) stops the task and its supervisor (SIGTERM to its process group, then SIGKILL).
      - V(absent) stops it and removes O(dir).
    type: str
    choices: [started, stopped, absent]
    default: started
  command:
    description: The program and its arguments. Required with O(state=started).
    type: list
    elements: str
  env:
    description:
      - Extra environment variables of the task. Values may be secrets, so they are never logged;
        they reach the task through the supervisor's environment, not through a file or its command line.
      - Of the environment of the module's process a task inherits only C(PATH), C(HOME), C(USER), C(LOGNAME), the
        locale (C(LANG), C(LANGUAGE), C(LC_*), C(TZ)), C(LD_LIBRARY_PATH) and the C(TF_*) (but Terraform's),
        C(TFDIST_*) and C(CUDA_*) variables; anything else (cloud credentials above all) only from here or
        O(env_file).
      - A mapping, or the JSON text of one (C(env | to_json), as the training role passes it). Ansible masks
        every occurrence of a no_log value in the module's result. Given a mapping, each value is masked on its own,
        and a short one such as V(1) garbles the result (names, pids, times); given JSON, only that whole text is.
      - Unless set here or in O(env_file), C(TMPDIR) is the folder C(tmp) in the task's O(dir), removed when the
        task ends (a Python that leaves by C(os._exit) leaves its temporary files behind).
    type: raw
    default: {}
  env_file:
    description: File of C(KEY=VALUE) lines added to the task's environment.
    type: path
  env_from_files:
    description: >-
      Environment variables set to the contents of a file, for example
      C(TF_CONFIG) set from the task's C(tf_config.json).
    type: dict
    default: {}
  watch_files:
    description: Files whose contents count as configuration (for example the training script), so that a changed
      file restarts a running task.
    type: list
    elements: path
    default: []
  chdir:
    description: Working directory of the task. Defaults to O(dir).
    type: path
  stop_when_gone:
    description:
      - C(HOST:PORT) of the chief. Once the chief's supervisor has announced the end of the job on that port (see
        O(announce_end)), the supervisor stops the task and records return code 0 (reason C(chief finished)).
      - When that port has answered and then stays silent for O(gone_grace) seconds with no end announced, the task
        is stopped too, and recorded as failed with return code 75 and reason C(leader unreachable for Ns).
      - Meant for ps and worker tasks of V(parameter_server) jobs, which never exit on their own.
    type: str
  gone_grace:
    description:
      - Seconds the chief's port may stay silent, with no end announced, before the task is stopped.
      - Longer than an ordinary network blip, which the task serves through.
    type: int
    default: 60
  end_grace:
    description:
      - With O(stop_when_gone), seconds the task goes on once the chief's supervisor has announced the end of the job
        (see O(announce_end)); without it, O(gone_grace) applies.
      - V(0) is for a task that only serves (a parameter server, or a worker of a parameter_server job); the job is
        done, so it stops at once and its host is free for the next step of the play.
      - Only for an end heard after the chief's port has answered in this run; an announcement heard first may be the
        last run's (until the chief's relaunch ends it), and O(gone_grace) applies to it.
    type: int
    version_added: 0.5.0
  never_seen_timeout:
    description: Stop the task when the chief's port has not answered at all within this many seconds.
    type: int
    default: 1800
  announce_end:
    version_added: 0.5.0
    description:
      - For the leader of a job (the chief, or worker 0 without one), its own TF port. Once the task has exited
        with return code 0, its supervisor answers on that port for O(announce_for) seconds that the job
        finished, and tasks started with O(stop_when_gone) pointing at it stop after O(end_grace) (or O(gone_grace)) seconds.
      - Without it a job shorter than the probes' interval, or a server launched after the leader ended, leaves
        that server running until O(never_seen_timeout).
      - The task counts as ended meanwhile; O(state=stopped) and a new launch end the announcement at once.
    type: int
  announce_for:
    version_added: 0.5.0
    description: Seconds the end of the job is announced on O(announce_end).
    type: int
    default: 60
  config_hash:
    description: Use this value as the configuration instead of the computed hash.
    type: str
  restart:
    description: Restart the task even when it is running with the same configuration.
    type: bool
    default: false
  rerun_finished:
    description: Launch a task again whose previous run with the same configuration ended with return code 0.
    type: bool
    default: true
  wait:
    description: After launching, watch the task for this many seconds and fail if it exits with a non-zero code
      in that time (the module's result then carries the end of its log).
    type: int
    default: 0
  stop_timeout:
    description: Seconds to wait for the task to stop before it is killed.
    type: int
    default: 15
extends_documentation_fragment:
  - tfdist.cluster.attributes
  - tfdist.cluster.attributes.action
attributes:
  action:
    details:
      - In check mode with O(state=started), the action asks the host's own copy of the package tfdist (the idle
        guard's, when it is this version's) with one raw command, the options on stdin; otherwise it runs the module.
  check_mode:
    support: full
    details: Computes whether the task would be started, restarted or stopped, and changes nothing.
  diff_mode:
    support: none
  idempotent:
    support: partial
    details: With O(state=started) a finished task is launched again unless O(rerun_finished=false).
"""

EXAMPLES = r"""
- name: Start a parameter server that stops itself after the chief has finished
  tfdist.cluster.training_task:
    name: ps-0
    dir: /var/lib/tfdist/job/tasks/ps-0
    command: [/opt/tfdist/venv/bin/python, /var/lib/tfdist/job/tasks/ps-0/train.py]
    env_from_files:
      TF_CONFIG: /var/lib/tfdist/job/tasks/ps-0/tf_config.json
    watch_files: [/var/lib/tfdist/job/tasks/ps-0/train.py]
    stop_when_gone: 10.0.0.5:2222

- name: Start the chief with a secret in its environment
  tfdist.cluster.training_task:
    name: chief-0
    dir: /var/lib/tfdist/job/tasks/chief-0
    command: [/opt/tfdist/venv/bin/python, /var/lib/tfdist/job/tasks/chief-0/train.py]
    env:
      DATA_TOKEN: "{{ vault_data_token }}"
    env_from_files:
      TF_CONFIG: /var/lib/tfdist/job/tasks/chief-0/tf_config.json
    wait: 5

- name: Start the tasks of a host in one call, the parameter server first
  tfdist.cluster.training_task:
    tasks:
      - name: ps-0
        dir: /var/lib/tfdist/job/tasks/ps-0
        command: [/opt/tfdist/venv/bin/python, /var/lib/tfdist/job/tasks/ps-0/train.py]
        env_from_files: {TF_CONFIG: /var/lib/tfdist/job/tasks/ps-0/tf_config.json}
        stop_when_gone: 10.0.0.5:2222
      - name: worker-0
        dir: /var/lib/tfdist/job/tasks/worker-0
        command: [/opt/tfdist/venv/bin/python, /var/lib/tfdist/job/tasks/worker-0/train.py]
        env_from_files: {TF_CONFIG: /var/lib/tfdist/job/tasks/worker-0/tf_config.json}
        stop_when_gone: 10.0.0.5:2222
    wait: 2

- name: Stop a task
  tfdist.cluster.training_task:
    name: worker-1
    dir: /var/lib/tfdist/job/tasks/worker-1
    state: stopped
"""

RETURN = r"""
pid:
  description: Pid of the running task or of the run this call launched (which may have ended already);
    null otherwise. It is also the id of the task's process group.
  returned: always (with O(tasks), in each entry of RV(tasks))
  type: int
  sample: 12345
started:
  description: Whether this call launched a new run.
  returned: always (with O(tasks), in each entry of RV(tasks))
  type: bool
stopped:
  description: Whether this call stopped a running task.
  returned: always (with O(tasks), in each entry of RV(tasks))
  type: bool
config_hash:
  description: The configuration hash of the task as now requested (O(state=started) only).
  returned: when state is started (with O(tasks), in each entry of RV(tasks))
  type: str
  sample: 3f0a...
status:
  description:
    - The task's state after this call, as the supervisor records it in O(dir).
    - The keys of an entry of RV(tfdist.cluster.training_status#module:tasks) (C(running), C(pid), C(returncode),
      C(reason), C(started_at), C(finished_at)), which documents them.
  returned: always (with O(tasks), in each entry of RV(tasks))
  type: dict
log_tail:
  description: Last lines of task.log when the task failed within O(wait).
  returned: on failure within O(wait)
  type: str
tasks:
  description: With O(tasks), the result of each task, in the order given, with its C(name) and the keys above.
  returned: when O(tasks) is given
  type: list
  elements: dict
  version_added: 0.5.0
"""

import os
import shutil
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import (
    _idle_guard, _json_files, _supervisor, _task_folder, _task_plan, _warm_start)


def launch(p):
    """Start the task under a supervisor forked from this module's process (it outlives the module)."""
    return _supervisor.start(
        p["dir"], p["name"], p["command"],
        env=p["env"], env_file=p["env_file"], env_from_files=dict(sorted(p["env_from_files"].items())),
        chdir=p["chdir"], stop_when_gone=p["stop_when_gone"], gone_grace=p["gone_grace"],
        never_seen_timeout=p["never_seen_timeout"], stop_timeout=p["stop_timeout"],
        announce_end=p["announce_end"], announce_for=p["announce_for"], end_grace=p["end_grace"])


class TaskError(Exception):
    """A task that cannot be brought to its state: the message, and the result so far."""

    def __init__(self, msg, result):
        super().__init__(msg)
        self.result = result


def ensure_stopped(p, status, result, check_mode):
    if not check_mode:
        _warm_start.stop_warm(p["dir"])  # a warm start waiting for a launch that will not come (no task state)
    if status["running"]:
        result.update(changed=True, stopped=True)
        if not check_mode:
            result["status"] = _supervisor.stop(p["dir"], p["stop_timeout"])
        result["pid"] = None
    elif status.get("supervisor_running") and not check_mode:
        _supervisor.stop(p["dir"], p["stop_timeout"])  # the task has ended; its end is no longer announced
    if p["state"] == "absent" and os.path.isdir(p["dir"]):
        result["changed"] = True
        if not check_mode:
            shutil.rmtree(p["dir"])
    return result


def ensure(p, check_mode):
    """Bring one task to p["state"]; returns its result (launched tasks are not waited for here)."""
    status = _task_plan.status_of(p["dir"])
    if p["state"] in ("stopped", "absent"):
        result = dict(name=p["name"], changed=False, started=False, stopped=False,
                      pid=status.get("pid") if status["running"] else None, status=status)
        return ensure_stopped(p, status, result, check_mode)

    result, action = _task_plan.plan(p, status)
    if action == "keep" or check_mode:
        return result
    if action == "restart":
        _supervisor.stop(p["dir"], p["stop_timeout"])
    os.makedirs(p["dir"], exist_ok=True)
    try:
        launched = launch(p)
    except _supervisor.SupervisorError as e:
        raise TaskError("tfdist-supervise start failed: error: %s" % e, result)
    _json_files.write_text(os.path.join(p["dir"], _task_plan.HASH_FILE), result["config_hash"] + "\n")
    result["pid"] = launched.get("pid")
    return result


def wait_for_early_failures(results, params, seconds):
    """Watch the launched tasks for `seconds`; a non-zero exit in that time raises TaskError with its log."""
    deadline = time.time() + seconds
    pending = [(r, p) for r, p in zip(results, params) if r["started"]]
    while True:
        for r, p in pending:
            r["status"] = _task_plan.status_of(p["dir"])
        for r, p in pending:
            status = r["status"]
            if not status["running"] and status.get("returncode") != 0:
                r["log_tail"] = _task_folder.log_tail(p["dir"])
                raise TaskError("task %s exited with code %s (%s) right after it started; last lines of its log:\n%s"
                                % (p["name"], status.get("returncode"), status.get("reason"), r["log_tail"]), r)
        pending = [(r, p) for r, p in pending if r["status"]["running"]]
        if not pending or time.time() >= deadline:
            return
        time.sleep(0.5)


def main():
    module = AnsibleModule(argument_spec=_task_plan.ARGUMENT_SPEC, supports_check_mode=True, **_task_plan.ARGUMENT_RULES)
    _idle_guard.heartbeat()  # the controller is heard from (see the idle_guard module)
    try:
        params = _task_plan.task_params(module.params)
    except ValueError as error:
        module.fail_json(msg=str(error))
    for p in params:
        error = _task_plan.check_params(p)
        if error:
            module.fail_json(msg=error)

    results = []
    try:
        for p in params:
            results.append(ensure(p, module.check_mode))
        if not module.check_mode and module.params["state"] == "started":
            wait_for_early_failures(results, params, module.params["wait"])
    except TaskError as e:
        done = results if any(r is e.result for r in results) else results + [e.result]
        outcome = dict(e.result, changed=any(r["changed"] for r in done))
        if module.params["tasks"] is not None:
            outcome["tasks"] = done
        module.fail_json(msg=str(e), **outcome)

    if module.params["tasks"] is not None:
        module.exit_json(changed=any(r["changed"] for r in results), tasks=results)
    result = results[0]
    del result["name"]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
