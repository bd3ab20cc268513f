#!/usr/bin/python
# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: training_files
short_description: Lay down the folders and files of a host's TF tasks in one call
description:
  - Writes, for each TF task of the host, the folder O(work_dir)/tasks/NAME with the task's training script
    C(train.py), its TF_CONFIG C(tf_config.json) and its environment file C(task.env) (C(TFDIST_CLUSTER),
    C(TFDIST_TASK), C(TFDIST_WORK_DIR), C(TFDIST_TASK_DIR) and, on a GPU host with several tasks,
    C(CUDA_VISIBLE_DEVICES)).
  - One call per host, whatever its number of tasks (a call per file costs a connection round trip each, most of
    the time a deploy spends before its first step on a host with several tasks).
  - Files are rewritten only when their content or mode differs. What it makes is the job's user's alone (the user it
    runs as, who runs the tasks too) - folders C(0700), files C(0600), the dataset and the package included.
version_added: 0.5.0
author: tfdist maintainers (@tfdist)
options:
  work_dir:
    description: The job folder (created with its C(data) and C(tasks) folders when missing).
    type: path
    required: true
  cluster_name:
    description: The cluster's name, for C(TFDIST_CLUSTER).
    type: str
    required: true
  tasks:
    description:
      - The host's TF tasks, as made by the C(tfdist.cluster.tf_tasks) filter (C(name), C(type), C(index) are used).
    type: list
    elements: dict
    required: true
  scripts:
    description:
      - The training script of each task, by task name (for example each rendered from a template with the task's
        type and index). A task without an entry gets O(script).
    type: dict
    default: {}
  script:
    description: The training script of every task not in O(scripts).
    type: str
  cluster_spec:
    description: The cluster part of TF_CONFIG (C(tfdist.cluster.tf_cluster_spec)).
    type: dict
    required: true
  chief_name:
    description: The chief's name in TF_CONFIG; V(master) for Estimator-era scripts.
    type: str
    default: chief
    choices: [chief, master]
  gpus:
    description:
      - GPUs of the host. When it runs several tasks, its chief and worker tasks get one each, round-robin, as
        C(CUDA_VISIBLE_DEVICES), and the others (ps, evaluator) none. V(0) leaves C(CUDA_VISIBLE_DEVICES) alone.
    type: int
    default: 0
  tf_keras:
    description:
      - Each task's C(task.env) sets C(TF_USE_LEGACY_KERAS=1), so that C(tf.keras) is C(tf-keras) (Keras 2), which
        the node must have (the tensorflow role's C(tensorflow_tf_keras)).
    type: bool
    default: false
    version_added: 0.5.0
  folders:
    description: More folders to create under O(work_dir)/tasks (for example V(tensorboard)).
    type: list
    elements: str
    default: []
  package_dest:
    description:
      - Also lay down the node-side package C(tfdist) (the collection's training program) in this folder, in the same
        call, as M(tfdist.cluster.node_package) does with its O(tfdist.cluster.node_package#module:dest).
    type: path
    version_added: 0.5.0
  script_template:
    description:
      - A Jinja template on the controller (found as M(ansible.builtin.template) finds its O(ansible.builtin.template#module:src))
        that gives each task its script, rendered by the action on the controller with every variable of the play, and
        on top of O(script_template_vars) C(training_task) (the task's C(type) and C(index)), C(training_task_dir)
        (its folder) and, with O(data_src), C(training_data_path) (where the dataset lands on the host). The module
        never sees it; it takes the place of O(scripts).
    type: path
    version_added: 0.5.0
  script_template_vars:
    description: More variables for O(script_template), the same for every task.
    type: dict
    default: {}
    version_added: 0.5.0
  data_src:
    description:
      - A dataset on the controller to lay down as O(work_dir)/data/NAME (NAME its file name) in the same call, rewritten
        only when its content differs. Read by the action on the controller; the module never sees it.
      - Up to 4 MiB it travels with the call as O(data); a larger file is copied as M(ansible.builtin.copy) does, after
        the call.
    type: path
    version_added: 0.5.0
  data:
    description:
      - The dataset itself, as the action passes it from O(data_src). Never logged.
    type: dict
    suboptions:
      name:
        description: Its file name under O(work_dir)/data.
        type: str
        required: true
      content:
        description: Its content, base64-encoded.
        type: str
        required: true
    version_added: 0.5.0
  warm_python:
    description:
      - The Python that will run the tasks (the tensorflow role's virtualenv). Each task whose files this call wrote,
        or whose training program changed, gets that Python started at once in its folder, importing
        O(warm_modules) while the deploy goes on; the launch (M(tfdist.cluster.training_task)) then hands it the
        task. Where nothing changed, nothing starts.
      - A warm start that no launch claims within 5 minutes ends by itself.
      - Tasks of this host whose environments differ only in their own C(TFDIST_*) variables share one import; one
        Python imports O(warm_modules) and forks the Python of each task (its socket and log are
        C(warm-host-N.sock) and C(warm-host-N.log) in O(work_dir)). A task with a GPU of its own imports alone.
    type: path
    version_added: 0.5.0
  warm_modules:
    description: The modules the warm Python imports.
    type: list
    elements: str
    default: [tensorflow]
    version_added: 0.5.0
  env:
    description:
      - The extra environment of the tasks, as the launch's O(tfdist.cluster.training_task#module:env), so that the
        warm Python imports with the task's environment (one that differs is not used). Never logged.
      - A mapping, or the JSON text of one, as O(tfdist.cluster.training_task#module:env) takes it (JSON keeps
        Ansible from masking each short value wherever it appears in the result).
    type: raw
    default: {}
    version_added: 0.5.0
extends_documentation_fragment:
  - tfdist.cluster.attributes
  - tfdist.cluster.attributes.action
attributes:
  action:
    details:
      - Renders O(script_template) and reads O(data_src) on the controller.
      - Looks first with one raw command (the host's copy of the package tfdist checks each file by its SHA256); it
        runs the module when anything differs.
  check_mode:
    support: full
    details: Reports the files that would be written, and changes nothing.
  diff_mode:
    support: none
  idempotent:
    support: full
"""

EXAMPLES = r"""
- name: Lay down the task files of this host
  tfdist.cluster.training_files:
    work_dir: /var/lib/tfdist/mnist
    cluster_name: mnist
    tasks: "{{ hostvars | tfdist.cluster.tf_tasks | selectattr('host', 'equalto', inventory_hostname) }}"
    script: "{{ lookup('ansible.builtin.file', 'train.py') }}"
    cluster_spec: "{{ hostvars | tfdist.cluster.tf_tasks | tfdist.cluster.tf_cluster_spec }}"
    data_src: files/mnist.npz  # lands in /var/lib/tfdist/mnist/data/mnist.npz

- name: Give each task a script of its own, rendered from a template on the controller
  tfdist.cluster.training_files:
    work_dir: /var/lib/tfdist/mnist
    cluster_name: mnist
    tasks: "{{ hostvars | tfdist.cluster.tf_tasks | selectattr('host', 'equalto', inventory_hostname) }}"
    # It sees training_task.type, training_task.index, training_task_dir and training_data_path.
    script_template: train.py.j2
    data_src: files/mnist.npz  # training_data_path: /var/lib/tfdist/mnist/data/mnist.npz
    cluster_spec: "{{ hostvars | tfdist.cluster.tf_tasks | tfdist.cluster.tf_cluster_spec }}"
"""

RETURN = r"""
written:
  description: The files created or rewritten (or that would have been, in check mode), relative to O(work_dir).
  returned: always
  type: list
  elements: str
  sample: [tasks/worker-0/train.py, tasks/worker-0/tf_config.json]
package_written:
  description: With O(package_dest), the files of the package created or rewritten, relative to its folder.
  returned: when O(package_dest) is given
  type: list
  elements: str
  sample: [train/cli.py]
  version_added: 0.5.0
package_removed:
  description: With O(package_dest), the entries of the package folder that are no longer part of it, removed.
  returned: when O(package_dest) is given
  type: list
  elements: str
  sample: [train/old_module.py]
  version_added: 0.5.0
new_tasks:
  description: The tasks whose folder this call created (never launched on this host, so a launch has nothing to compare).
  returned: always
  type: list
  elements: str
  sample: [chief-0]
  version_added: 0.5.0
warm:
  description: With O(warm_python), the tasks whose Python was started ahead of their launch.
  returned: always
  type: list
  elements: str
  sample: [worker-0]
  version_added: 0.5.0
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _cluster, _idle_guard
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._host_files import HostFilesError, lay_down_host
from ansible_collections.tfdist.cluster.plugins.module_utils._package import package_files


# The module's options; the action (plugins/action/training_files.py) checks its node runs' options against them too.
ARGUMENT_SPEC = dict(
    work_dir=dict(type="path", required=True),
    cluster_name=dict(type="str", required=True),
    tasks=dict(type="list", elements="dict", required=True),
    scripts=dict(type="dict", default={}),
    script=dict(type="str"),
    cluster_spec=dict(type="dict", required=True),
    chief_name=dict(type="str", default="chief", choices=list(_cluster.CHIEF_NAMES)),
    gpus=dict(type="int", default=0),
    tf_keras=dict(type="bool", default=False),
    folders=dict(type="list", elements="str", default=[]),
    package_dest=dict(type="path"),
    script_template=dict(type="path"),
    script_template_vars=dict(type="dict", default={}),
    data_src=dict(type="path"),
    data=dict(type="dict", options=dict(
        name=dict(type="str", required=True),
        content=dict(type="str", required=True, no_log=True),
    )),
    warm_python=dict(type="path"),
    warm_modules=dict(type="list", elements="str", default=["tensorflow"]),
    env=dict(type="raw", default={}, no_log=True),  # a mapping or its JSON (_task_folder.extra_environment)
)


def main():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        supports_check_mode=True,
    )
    _idle_guard.heartbeat()  # the controller is heard from (see the idle_guard module)
    p = module.params
    for option in ("script_template", "data_src"):
        if p[option]:
            module.fail_json(msg="%s: read on the controller by the action tfdist.cluster.training_files, "
                                 "which did not run (call the module by that name)" % option)
    try:
        module.exit_json(**lay_down_host(p, package_files, module.check_mode))
    except HostFilesError as error:
        module.fail_json(msg=str(error))


if __name__ == "__main__":
    main()
