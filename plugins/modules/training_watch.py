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
  - Fails as soon as a task of this host exits with an error or dies, naming the task and showing
    the tail of its log; or when a task on another host stops answering while the chief trains.
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
    description: Seconds after which the watch gives up and fails.
    type: float
    default: 3600.0
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
  connection_retries:
    description: Polls in a row that may fail to reach the host before it counts as gone.
    type: int
    default: 3
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
    - The TF tasks this watch found lost, each with C(task), C(host), C(why) (its exit code, or that it stopped
      answering) and C(node_gone) (the whole host stopped answering). deploy.yml's restart policy replaces
      and relaunches from these.
    - Empty when the watch failed for another reason (a timeout, another host's failure).
  returned: failure
  type: list
  elements: dict
  version_added: 0.5.0
node_gone:
  description: This host stopped answering (after O(connection_retries) polls); reported as a failure, not as unreachable.
  returned: failure
  type: bool
  version_added: 0.5.0
stopped_by:
  description: The host whose watch failed first, when this watch stopped because of it (see O(stop_file)).
  returned: failure
  type: str
  version_added: 0.5.0
elapsed:
  description: Seconds the watch took.
  returned: success
  type: float
"""
