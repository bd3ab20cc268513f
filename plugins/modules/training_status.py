#!/usr/bin/python
# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Read-only probe of a training job on the managed host."""

from __future__ import annotations

DOCUMENTATION = r"""
module: training_status
short_description: Read the state of a training job's tasks, progress and result
description:
  - Reads, and never changes, what the tasks supervised by the tfdist supervisor (see M(tfdist.cluster.training_task))
    left in their task directories, the chief's C(status.json) and C(result.json), and checks ports of tasks on other hosts.
  - Meant to be called in a loop while a job trains (the C(tfdist.cluster.training_watch) action does).
version_added: 0.1.0
author: tfdist maintainers (@tfdist)
options:
  tasks:
    description: Tasks on this host, each with its C(name) and task directory C(dir).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: Task name, for example V(chief-0).
        type: str
        required: true
      dir:
        description: The task's directory, as given to M(tfdist.cluster.training_task).
        type: path
        required: true
  work_dir:
    description: The job's directory on this host; its C(status.json) and C(result.json) are read when present.
    type: path
  tail_lines:
    description: Lines of task.log returned for a task that is not running.
    type: int
    default: 20
  probe:
    description: C(HOST:PORT) of tasks on other hosts to check with a TCP connect.
    type: list
    elements: str
    default: []
  probe_timeout:
    description: Seconds to wait for each probed port.
    type: float
    default: 2.0
  wait:
    description:
      - Seconds to keep looking before answering, every O(wait_interval) seconds, while every task of O(tasks) runs
        and until something happens (a task starts or ends, a probed port stops or starts answering, the chief's run
        starts, takes its first step, ends or leaves its result). With a task that is not running, it answers at once.
      - A watch that calls this module with a few seconds of O(wait) learns of a failure within O(wait_interval) and
        starts far fewer Python processes on the host than one that calls it every O(wait_interval).
      - V(0) looks once.
    type: float
    default: 0
    version_added: 0.5.0
  wait_interval:
    description: Seconds between two looks while O(wait) runs.
    type: float
    default: 1.0
    version_added: 0.5.0
  heartbeat:
    description:
      - Whether this call counts as the controller being heard from, for the node's idle guard (see
        M(tfdist.cluster.idle_guard)). V(false) for a look by a person or a monitor (C(playbooks/status.yml)), so that
        looking at a cluster whose job has ended does not keep its nodes up, and paid for, past the guard's idle time.
    type: bool
    default: true
    version_added: 0.5.0
extends_documentation_fragment:
  - tfdist.cluster.attributes
attributes:
  check_mode:
    support: full
    details: Only reads; check mode runs the same probe.
  diff_mode:
    support: none
  idempotent:
    support: full
    details: It only reads.
"""

EXAMPLES = r"""
- name: Look at the job
  tfdist.cluster.training_status:
    work_dir: /var/lib/tfdist/job
    tasks:
      - {name: chief-0, dir: /var/lib/tfdist/job/tasks/chief-0}
      - {name: ps-0, dir: /var/lib/tfdist/job/tasks/ps-0}
    probe: [10.0.0.6:2222, 10.0.0.7:2222]
  register: job

- name: Wait until the chief has finished
  tfdist.cluster.training_status:
    work_dir: /var/lib/tfdist/job
    tasks: [{name: chief-0, dir: /var/lib/tfdist/job/tasks/chief-0}]
  register: job
  until: job.failed_tasks or (job.result is not none)
  retries: 360
  delay: 5
  failed_when: job.failed_tasks | length > 0
"""

RETURN = r"""
tasks:
  description: One entry per task of O(tasks), in the same order.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Task name.
      type: str
    running:
      description: The task (or its supervisor) runs.
      type: bool
    supervisor_running:
      description: The task's supervisor runs; after the task has ended, it may still announce the end of the job
        on the leader's port (see O(tfdist.cluster.training_task#module:announce_end)).
      type: bool
      version_added: 0.5.0
    pid:
      description: Pid of the task's last run, null if it never started.
      type: int
    returncode:
      description: Return code once the run has ended; 0 also for servers stopped after the leader announced the end
        of the job, 75 for a server whose leader stayed silent for its gone grace without announcing any end.
      type: int
    reason:
      description: C(exited), C(stopped), C(chief finished) (the leader announced the end), C(leader unreachable for
        Ns) (its port silent for the gone grace, no end announced), C(chief never seen), C(killed by signal N),
        C(died without exit record) or C(not started); null while running.
      type: str
    started_at:
      description: Seconds since the epoch.
      type: float
    finished_at:
      description: Seconds since the epoch.
      type: float
    log_tail:
      description: The last O(tail_lines) lines of task.log; only for a task that is not running.
      type: str
    error:
      description:
        - What the log of a task that is not running says went wrong, read from its last 256 KiB; only for a task that
          is not running. C(error) is the exception line of its last Python traceback (shortened), C(where) the
          frame that raised it (C(FILE:LINE in FUNCTION)) and C(line) that line's source; without a traceback,
          C(error) is the last line the task wrote.
      type: dict
      version_added: 0.5.0
    log_size:
      description: Bytes of task.log; only for a running task (a script that writes no status.json shows progress
        by writing).
      type: int
      version_added: 0.5.0
    process:
      description: C(stopped) when a process of the task is stopped (SIGSTOP), C(uninterruptible) when one is in
        uninterruptible sleep (a hung disk, NFS mount or device), else C(running); only for a running task.
      type: str
      version_added: 0.5.0
status:
  description: The chief's status.json (state, step, target_steps, initial_step, loss, examples_per_sec,
    eta_seconds, started_at, first_step_at, updated_at, ...), null when absent.
  returned: always
  type: dict
waited:
  description: Seconds this call looked for a change before answering (see O(wait)).
  returned: always
  type: float
  version_added: 0.5.0
status_age:
  description: Seconds since status.json was last written (by the clock of this host), null when absent.
  returned: always
  type: float
result:
  description: The chief's result.json (steps, accuracy, examples_per_sec, ...), null until the job has finished.
  returned: always
  type: dict
unreachable:
  description: The entries of O(probe) whose port does not answer.
  returned: always
  type: list
  elements: str
failed_tasks:
  description: Names of tasks that ended with a non-zero return code or died without an exit record
    (a task stopped on purpose does not count).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tfdist.cluster.plugins.module_utils import _job_state
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _idle_guard


def main():
    module = AnsibleModule(
        argument_spec=dict(
            tasks=dict(type="list", elements="dict", default=[], options=dict(
                name=dict(type="str", required=True),
                dir=dict(type="path", required=True),
            )),
            work_dir=dict(type="path"),
            tail_lines=dict(type="int", default=20),
            probe=dict(type="list", elements="str", default=[]),
            probe_timeout=dict(type="float", default=2.0),
            wait=dict(type="float", default=0.0),
            wait_interval=dict(type="float", default=1.0),
            heartbeat=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    params = dict(module.params)
    if params.pop("heartbeat"):
        _idle_guard.heartbeat()  # the controller is heard from (see the idle_guard module)
    module.exit_json(changed=False, **_job_state.watch(**params))


if __name__ == "__main__":
    main()
