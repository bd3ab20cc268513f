#!/usr/bin/python
# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
# The work is done by the action plugin of the same name, in the controller's own process; this file documents it.

from __future__ import annotations

DOCUMENTATION = r"""
module: training_report
short_description: Write the run summary and the loss curve of a finished training job
description:
  - Reads the leader's C(result.json) and C(history.csv) that were collected into O(artifacts_dir)
    and writes C(summary.json) next to them, adding the wall-clock seconds of each deploy phase.
  - A script of your own may write no C(result.json) or no model (with O(required=false)). The summary then
    lists what was not found and where it was looked for, with a warning; the script's exit code decided.
  - Draws the loss curve as C(loss.png) when matplotlib is available and the history is newer than the curve.
  - Files are rewritten only when their content differs.
  - Runs in the controller's own process (an action plugin), with no module to build and start for files of the controller.
version_added: 0.1.0
author: tfdist maintainers (@tfdist)
extends_documentation_fragment:
  - tfdist.cluster.attributes
options:
  artifacts_dir:
    description: Folder on the controller with the collected results of one cluster.
    type: path
    required: true
  cluster:
    description: Cluster name, recorded in the summary.
    type: str
    required: true
  cloud:
    description: Cloud name, recorded in the summary.
    type: str
    required: true
  clock:
    description:
      - Unix times of the deploy phases, each optional C(deploy_started), C(provisioned),
        C(installed), C(launched).
      - Without C(launched) (a re-run that launched nothing, as the job had finished with the same settings), the
        summary keeps the phases of the deploy that ran the job, and the files are left as they are when nothing
        else differs (C(changed=false)).
    type: dict
    default: {}
  lost_tasks:
    description:
      - Workers lost during training (worker_loss=tolerate), recorded in the summary.
      - Without C(launched) in O(clock), those of the deploy that ran the job are kept.
    type: list
    elements: str
    default: []
  restarts:
    description:
      - The restarts of deploy.yml's restart policy (C(tf_restart=on_failure)), recorded in the summary as C(restarts).
        Each has C(restart) (its number), C(at) (Unix time the loss was seen), C(losses) (each lost task with
        C(task), C(host), C(why), C(node_gone), C(returncode) and C(error)), C(step) (the leader's step then),
        C(progressed) (the lost run had taken a step since its launch), C(backoff_seconds) (the wait before the
        restart), C(replaced) (the nodes created or started again), C(resumed_from) (the checkpoint's step the job
        went on from) and C(steps_lost).
      - Without C(launched) in O(clock), those of the deploy that ran the job are kept.
    type: list
    elements: dict
    default: []
    version_added: 0.5.0
  leader_run:
    description:
      - Which run of the leader wrote these results (its supervisor's start time), recorded as C(leader_run). A re-run
        that finds that run finished, and the summary naming it, leaves the results where they are.
      - When it is empty and this deploy launched nothing (no C(launched) in O(clock)), the summary keeps the run it
        names (the controller held the results, nothing was collected).
    type: str
    default: ""
    version_added: 0.5.0
  required:
    description:
      - Fail when C(result.json) was not collected (the training program of the collection always writes it).
      - V(false) for a script of your own, which may write no result or model.
    type: bool
    default: true
    version_added: 0.5.0
  source:
    description: Where the leader wrote its results (for example C(HOST:/var/lib/tfdist/CLUSTER)), named in the warnings.
    type: str
    default: ""
    version_added: 0.5.0
  model_urls:
    description: The folder URLs that also keep the model (C(tf_model_url)), named in RV(message).
    type: list
    elements: str
    default: []
    version_added: 0.5.0
  checkpoint_url:
    description: The folder URL that keeps a copy of the checkpoints (C(tf_checkpoint_url)), named in RV(message).
    type: str
    default: ""
    version_added: 0.5.0
  tensorboard:
    description: TensorBoard runs on the leader's host (C(tf_tensorboard)); RV(message) gives its address.
    type: bool
    default: false
    version_added: 0.5.0
  leader_address:
    description: The address of the leader's host, in TensorBoard's address.
    type: str
    default: ""
    version_added: 0.5.0
  tensorboard_port:
    description: TensorBoard's port on the leader's host.
    type: int
    default: 0
    version_added: 0.5.0
requirements:
  - matplotlib (optional, for the loss curve)
attributes:
  check_mode:
    support: none
  diff_mode:
    support: none
  idempotent:
    support: full
    details: The summary and the curve are written again only when they differ (a re-run that launched nothing).
"""

EXAMPLES = r"""
- name: Summarize the run
  tfdist.cluster.training_report:
    artifacts_dir: artifacts/mycluster
    cluster: mycluster
    cloud: local
    clock: "{{ tfdist_phase_times }}"
"""

RETURN = r"""
summary:
  description: What was written to summary.json.
  returned: success
  type: dict
  sample:
    steps: 300
    initial_step: 0
    final_loss: 0.12
    accuracy: 0.96
    examples_per_sec: 2500.0
    seconds: {provision: 0.4, install: 6.1, launch_to_first_step: 9.8, training: 8.2, total: 31.0}
summary_path:
  description: Path of summary.json.
  returned: success
  type: str
model_path:
  description: Path of the trained model (loads with C(keras.models.load_model)); empty when your script wrote none.
  returned: success
  type: str
missing:
  description: The results that were not found, each as where it was looked for (also in C(summary.json)).
  returned: success
  type: list
  elements: str
  version_added: 0.5.0
loss_curve_path:
  description: Path of loss.png, empty when matplotlib is missing or no history was recorded.
  returned: success
  type: str
message:
  description: The run told in a few lines (steps, loss, accuracy, restarts) with where its results are, for the user.
  returned: success
  type: list
  elements: str
  version_added: 0.5.0
  sample:
    - "cluster mycluster on local: 300 steps (resumed from 0), final loss 0.12, held-out accuracy 0.96, 2500.0 examples/s"
    - "restarts: none"
    - "model: /home/me/artifacts/mycluster/model/model.keras"
"""
