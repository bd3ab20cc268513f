#!/usr/bin/python
# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
# The work is done by the action plugin of the same name; this file documents it.

from __future__ import annotations

DOCUMENTATION = r"""
module: training_watch
short_description: Follow a TF training job until it finishes, printing progress
description:
  - Looks at the host's tasks every O(poll_interval) seconds through M(tfdist.cluster.training_status), which waits on the
    host between two progress lines and answers at once when a task starts, ends or stops answering. A failure is seen
    within a poll, with one Python started on the host every O(progress_every) seconds rather than every poll.
  - On the host that runs the leader (the chief, or worker 0 of a cluster without one), prints a progress line (step, loss, examples/s, ETA) as
    training advances and checks that the TF tasks of the other hosts still answer on their ports.
  - Fails as soon as a task of this host exits with an error or dies, naming the task, the exception its log ends
    with and the line that raised it, then the tail of its log; when a task on another host, or this host itself,
    stays silent for longer than O(unreachable_grace) (a shorter silence is a network blip); when the job stalls
    (see O(stall_seconds)); and at the O(deadline).
  - Running long never fails it. Without O(deadline) and O(timeout) a job that makes progress is watched to its end.
  - Returns when the leader has finished successfully; on other hosts, when their tasks have ended cleanly.
  - On the leader's host, a job that resumed from a checkpoint says from which step, once.
  - When the watch fails (but not when its host is gone), it stops this host's tasks with
    M(tfdist.cluster.training_task) before it returns, so that nothing trains on unwatched.
version_added: 0.1.0
author: tfdist maintainers (@tfdist)
extends_documentation_fragment:
  - tfdist.cluster.attributes
  - tfdist.cluster.attributes.action
options:
  work_dir:
    description: The cluster's job folder on the host.
    type: str
    required: true
  cluster_tasks:
    description: Every TF task of the cluster (C(name), C(type), C(index), C(host), C(address), C(port)), as made by the C(tfdist.cluster.tf_tasks) filter.
    type: list
    elements: dict
    required: true
  host:
    description: Inventory name of this host; its own tasks are watched through their process state.
    type: str
    required: true
  poll_interval:
    description: Seconds between two looks at the host's tasks.
    type: float
    default: 2.0
  timeout:
    description:
      - Seconds after which the watch stops following the job and fails with RV(detached), leaving the job running
        (a later watch follows it again). V(0) follows it to its end.
      - It never stops the job; O(deadline) does.
    type: float
    default: 0.0
  deadline:
    description:
      - The longest the job may run, as a duration (V(90s), V(45m), V(12h), V(2d), V(1h30m)), from O(deadline_from).
        Empty, the default, for none.
      - Past it, the watch of the leader's host stops that host's tasks, the leader first (the training program then
        writes a checkpoint of the step it reached), marks O(stop_file) so the other watches stop theirs, and
        fails with RV(deadline_reached). The watches of other hosts stop their tasks by themselves two minutes later
        if no mark came.
    type: str
    default: ""
    version_added: 0.5.0
  deadline_from:
    description: When the O(deadline) starts, in seconds since the epoch (the job's first launch); default now.
    type: float
    version_added: 0.5.0
  budget:
    description:
      - US dollars the run may cost; V(0), the default, for none. With O(price_per_hour) it is another deadline, the
        time the price takes to reach the budget (from O(deadline_from)); the earlier of the two stops the job the same
        way, and RV(limit) says which.
    type: float
    default: 0.0
    version_added: 0.5.0
  price_per_hour:
    description: What the cluster costs an hour, in US dollars; V(0), the default, when unknown (no budget then).
    type: float
    default: 0.0
    version_added: 0.5.0
  stall_seconds:
    description:
      - A job that makes no progress for this long is lost, as a task that died is, and the watch fails naming it
        in RV(losses). No progress is the leader's step not moving (for a script that writes no C(status.json), its
        log not growing), since its launch or its last step; or any task of this host whose processes the kernel
        holds (stopped by SIGSTOP, or in uninterruptible sleep).
      - Never less than 20 of the job's recent step intervals (its C(steps_per_sec)). V(0) turns the rule off.
    type: float
    default: 900.0
    version_added: 0.5.0
  unreachable_grace:
    description:
      - Seconds this host (its connection) or a task of another host (its port) may stay silent before it counts as
        lost. A shorter silence is a network blip, and the watch asks again.
      - The same grace as the servers' own wait for their leader (C(training_gone_grace)).
    type: float
    default: 60.0
    version_added: 0.5.0
  progress_every:
    description: Least number of seconds between two progress lines.
    type: float
    default: 2.0
  startup_grace:
    description: Seconds a task on another host may take to answer for the first time.
    type: float
    default: 180.0
  tail_lines:
    description: Lines of a failed task's log to show.
    type: int
    default: 25
  linger_timeout:
    description: Seconds to wait, once the chief is done, for this host's other tasks to stop by themselves.
    type: float
    default: 60.0
  worker_loss:
    description:
      - What a lost worker (its task died, or its host is gone) does to the watch.
      - V(fail) fails the play at once, naming the task and showing its log.
      - V(tolerate) warns and goes on when O(strategy=parameter_server), which trains on with the
        remaining workers; the lost tasks are returned in RV(lost_tasks). Losing the chief or a
        parameter server always fails.
    type: str
    choices: [fail, tolerate]
    default: fail
  strategy:
    description: The job's distribution strategy; only V(parameter_server) can tolerate a lost worker.
    type: str
    default: parameter_server
  stop_file:
    description:
      - A file on the controller shared by the watches of one job (one per host). The first watch that fails
        writes its host's name there, and the others fail at their next poll with RV(stopped_by), so that every
        host stops its part of the job at once instead of waiting for tasks that train on without the lost one.
      - Remove it before the watches start. Empty, the watches do not tell each other.
    type: path
    default: ""
    version_added: 0.5.0
attributes:
  check_mode:
    support: full
    details: Only reads the job's state; a failed watch stops nothing in check mode.
  diff_mode:
    support: none
  idempotent:
    support: full
    details: A watch that succeeds only reads the job's state; a failed one stops this host's tasks.
"""

EXAMPLES = r"""
- name: Follow training until the chief is done
  tfdist.cluster.training_watch:
    work_dir: /var/lib/tfdist/mycluster
    cluster_tasks: "{{ hostvars | tfdist.cluster.tf_tasks(groups['tfdist_mycluster']) }}"
    host: "{{ inventory_hostname }}"
"""

RETURN = r"""
status:
  description: The leader's last progress record (step, loss, examples_per_sec, initial_step, ...), also when the watch fails.
  returned: on the leader's host
  type: dict
result:
  description: The chief's result record (steps, final_loss, accuracy, examples_per_sec, ...).
  returned: on the chief's host, when training succeeded
  type: dict
resumed_from:
  description: The step the watched run of the job started from (its checkpoint's; 0 for a fresh start), once it trained.
  returned: on the leader's host
  type: int
  version_added: 0.5.0
lost_tasks:
  description: Workers lost during training while O(worker_loss=tolerate).
  returned: success
  type: list
  elements: str
stopped_tasks:
  description: This host's tasks that the failed watch stopped (those still running then).
  returned: failure
  type: list
  elements: str
  version_added: 0.5.0
failed_tasks:
  description: Names of the TF tasks that died.
  returned: failure
  type: list
  elements: str
losses:
  description:
    - The TF tasks this watch found lost, each with C(task), C(host), C(why) (its exit code and the exception it
      raised, that it stopped answering, or that it stalled), C(node_gone) (the whole host stopped answering),
      C(returncode) (null while it runs or when its node is gone) and C(error) (the exception line of its log, or the
      last line it wrote; empty when there is none to read). deploy.yml's restart policy replaces and relaunches
      from these, and compares them between launches.
    - Empty when the watch failed for another reason (a deadline, a timeout, another host's failure).
  returned: failure
  type: list
  elements: dict
  version_added: 0.5.0
node_gone:
  description: This host stopped answering for O(unreachable_grace) seconds; reported as a failure, not as unreachable.
  returned: failure
  type: bool
  version_added: 0.5.0
stopped_by:
  description: The host whose watch failed first, when this watch stopped because of it (see O(stop_file)).
  returned: failure
  type: str
  version_added: 0.5.0
progressed:
  description: Whether the leader's current run took a training step since its launch (read from its C(status.json);
    a script that writes none never shows one).
  returned: on the leader's host
  type: bool
  version_added: 0.5.0
deadline_reached:
  description: The watch stopped the job at its O(deadline), or at the deadline its O(budget) gives.
  returned: failure
  type: bool
  version_added: 0.5.0
limit:
  description: Which limit stopped the job, V(deadline) or V(budget) (the message then starts with C(stopped) and the budget).
  returned: with RV(deadline_reached)
  type: str
  version_added: 0.5.0
detached:
  description: The watch stopped following at its O(timeout); the job goes on.
  returned: failure
  type: bool
  version_added: 0.5.0
elapsed:
  description: Seconds the watch took.
  returned: success
  type: float
"""
