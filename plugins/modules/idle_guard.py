#!/usr/bin/python
# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: idle_guard
short_description: Power a cloud node off when its job is not running and the controller has gone quiet
description:
  - Runs the tfdist idle guard on the managed host, a small background process that powers the host off once no TF
    task of the job runs there and the controller has been silent for O(idle_minutes). It keeps a lost controller
    (an interrupted playbook, a closed laptop) from leaving cloud nodes running; on EC2, tfdist creates nodes that
    terminate when they shut themselves down.
  - Where systemd is PID 1 and the module runs as root, the guard is the systemd service C(tfdist-idle-guard),
    enabled and restarted on failure, so it comes back after a reboot. Elsewhere (another user, a container without
    systemd) it runs under the tfdist supervisor (see M(tfdist.cluster.training_task)) and a reboot ends it; run this
    module again after a step that may reboot the host. The deploy playbook does so on the nodes that the C(cuda)
    role rebooted to load their GPU driver.
  - 'The controller is heard from at every call of a tfdist module on the host (M(tfdist.cluster.training_status),
    which the watch calls every second, M(tfdist.cluster.training_task), M(tfdist.cluster.training_files),
    M(tfdist.cluster.node_package), M(tfdist.cluster.storage), and this module), and is at work while an SSH session
    runs a command on the host, whatever runs it: Ansible''s own modules (a long C(ansible.builtin.apt) or pip
    install, a C(command: sleep 600)), with become and sudo, or a user''s login shell. The rule: any process that
    descends from the sshd process of an SSH connection counts, at each of the guard''s checks (a tenth of the
    timeout, between 1 and 30 seconds).'
  - 'Not work: an SSH connection kept open with nothing running in it (Ansible''s C(ControlPersist)), and a process
    detached from its session and left to PID 1 (the guard itself, the TF tasks and daemons that the tfdist
    supervisor starts, an Ansible C(async) task between its polls). A command left running by a controller that
    vanished counts until sshd notices that the connection is gone.'
  - The timeout counts from the latest of the last heartbeat, the end of a silence the controller announced
    (O(quiet_seconds)), the last check that saw an SSH session at work, the guard's start and the last moment a TF
    task ran, so a job that ends while nobody watches leaves the controller O(idle_minutes) to collect its results.
  - A TF task is a folder C(chief-N), C(worker-N), C(ps-N) or C(evaluator-N) of O(tasks_dir) whose supervisor says
    it runs; TensorBoard and HDFS daemons do not keep the host up.
  - Powering off is C(systemctl poweroff) where systemd runs, the end of PID 1 in a container without it (which
    stops the container), C(shutdown -h now) elsewhere, through C(sudo -n) when not root. The reason is written to
    the guard's log, the kernel log (a VM's console output) and PID 1's output (a container's C(docker logs)).
  - The guard lives in C(~/.tfdist/idle-guard) of the user Ansible connects as; it runs the node package
    C(tfdist) (see M(tfdist.cluster.node_package)) laid down in its C(lib) folder.
  - With O(state=started), the action does the module's work with one raw command (the host's C(python3) runs it
    from the guard's own copy of the package when that copy is this version's, intact). On a re-run where the guard
    runs with these settings, that is the whole call (C(changed=false), and the controller is heard from). Where the
    copy is missing or another version's, a second raw command does the work from the package sent as a zip on the
    command's stdin, and lays that package down as the guard's copy. The module itself runs in check mode, with
    O(state=absent), for options it must name as wrong, and when that command fails (no C(python3), an error).
  - Never point it at a machine you work on. The deploy playbook does not run it on C(cloud=local).
version_added: 0.5.0
author: tfdist maintainers (@tfdist)
options:
  state:
    description:
      - V(started) makes sure the guard runs with these settings. A guard that runs already takes new settings
        without a restart; it is restarted only when its code changed (another version of the collection).
      - V(absent) stops the guard and removes its folder, and its systemd service where it has one.
    type: str
    choices: [started, absent]
    default: started
  idle_minutes:
    description:
      - Minutes without a TF task running and without word from the controller before the host powers off;
        fractions are allowed (V(0.5) is 30 seconds). Required with O(state=started), and greater than 0.
      - The deploy playbook refuses C(tf_idle_minutes) below 1 (shorter than the pauses a play may leave between
        two commands on a node); the module itself takes any positive value, such as the few seconds of a test.
    type: float
  tasks_dir:
    description:
      - The folder of the job's task folders on the host, for example V(/var/lib/tfdist/demo/tasks) (the
        C(tasks) folder of the training role's job folder). It need not exist yet.
      - Required with O(state=started).
    type: path
  poweroff_command:
    description:
      - A command of your own to run instead of powering off (for example one that asks the cloud to delete the
        node). The guard ends after it has run.
    type: list
    elements: str
  quiet_seconds:
    description:
      - The controller announces that it will be silent for up to this many seconds (for example while it replaces
        lost nodes elsewhere, running nothing on this host). The guard counts it as heard from until then, so a
        controller that dies meanwhile still gets the host powered off, O(idle_minutes) after that silence ends.
      - A later heartbeat never shortens an announced silence. Only with O(state=started); at most V(86400) (a day).
    type: int
    default: 0
extends_documentation_fragment:
  - tfdist.cluster.attributes
  - tfdist.cluster.attributes.action
attributes:
  action:
    details:
      - The action does the module's work with one raw command (the guard's own copy of the package); where that
        copy is missing or another version's, a second raw command does it from the package sent on its stdin, and
        the module runs only when that cannot be done.
  check_mode:
    support: full
    details: Says whether the guard would be started, restarted, given new settings or removed, and changes nothing.
  diff_mode:
    support: none
  idempotent:
    support: full
notes:
  - Only POSIX hosts with Python 3.7 or later; the guard uses the interpreter that runs this module.
"""

EXAMPLES = r"""
- name: Power the node off after 30 minutes without a job and without the controller
  tfdist.cluster.idle_guard:
    idle_minutes: 30
    tasks_dir: /var/lib/tfdist/demo/tasks

- name: The controller replaces lost nodes next and runs nothing here for up to 30 minutes
  tfdist.cluster.idle_guard:
    idle_minutes: 30
    tasks_dir: /var/lib/tfdist/demo/tasks
    quiet_seconds: 1800

- name: Turn the guard off
  tfdist.cluster.idle_guard:
    state: absent
"""

RETURN = r"""
dir:
  description: The guard's folder on the host (its log is C(task.log) there).
  returned: always
  type: str
  sample: /root/.tfdist/idle-guard
running:
  description: Whether the guard runs after this call (in check mode, whether it would).
  returned: always
  type: bool
pid:
  description: Pid of the guard process, null when it does not run.
  returned: always
  type: int
service:
  description: The guard's systemd service (C(tfdist-idle-guard.service)) when it runs as one, null when it runs under
    the tfdist supervisor (or not at all).
  returned: always
  type: str
  sample: tfdist-idle-guard.service
started:
  description: Whether this call started (or restarted) the guard.
  returned: always
  type: bool
settings:
  description: The guard's settings after this call (C(idle_seconds), C(tasks_dir), C(poweroff_command)).
  returned: when O(state=started)
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _idle_guard, _supervisor
from ansible_collections.tfdist.cluster.plugins.module_utils._package import package_files


# The module's options; the action (plugins/action/idle_guard.py) checks them the same way before it answers itself.
ARGUMENT_SPEC = dict(
    state=dict(type="str", default="started", choices=["started", "absent"]),
    idle_minutes=dict(type="float"),
    tasks_dir=dict(type="path"),
    poweroff_command=dict(type="list", elements="str"),
    quiet_seconds=dict(type="int", default=0),
)
REQUIRED_IF = [("state", "started", ("idle_minutes", "tasks_dir"))]


def started_error(p):
    """What is wrong with the validated params p of a started guard, beyond their types; None when nothing."""
    if p["idle_minutes"] <= 0:
        return "idle_minutes: must be greater than 0 (use state=absent to turn the guard off), got %s" % p["idle_minutes"]
    if not 0 <= p["quiet_seconds"] <= _idle_guard.MAX_QUIET_SECONDS:
        return "quiet_seconds: must be between 0 and %d (a day), got %s" % (_idle_guard.MAX_QUIET_SECONDS,
                                                                            p["quiet_seconds"])
    return None


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, required_if=REQUIRED_IF, supports_check_mode=True)
    p = module.params
    folder = _idle_guard.guard_dir()
    if p["state"] == "absent":
        try:
            module.exit_json(**_idle_guard.ensure_absent(folder, module.check_mode))
        except OSError as e:
            module.fail_json(msg="the idle guard in %s cannot be removed: %s" % (folder, e))
    error = started_error(p)
    if error:
        module.fail_json(msg=error)
    try:
        result = _idle_guard.ensure_started(p, folder, module.check_mode, package_files)
    except (OSError, _supervisor.SupervisorError) as e:
        module.fail_json(msg="the idle guard cannot start in %s: %s" % (folder, e))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
