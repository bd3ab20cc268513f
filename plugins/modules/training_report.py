#!/usr/bin/python
# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

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
        C(task), C(host), C(why), C(node_gone)), C(step) (the leader's step then), C(replaced) (the nodes created
        or started again), C(resumed_from) (the checkpoint's step the job went on from) and C(steps_lost).
      - Without C(launched) in O(clock), those of the deploy that ran the job are kept.
    type: list
    elements: dict
    default: []
    version_added: 0.5.0
  leader_run:
    description:
      - Which run of the leader wrote these results (its supervisor's start time), recorded as C(leader_run). A re-run
        that finds that run finished, and the summary naming it, leaves the results where they are.
      - Empty when this deploy neither launched (no C(launched) in O(clock)) nor collected anything: the summary keeps
        the run it names.
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
requirements:
  - matplotlib (optional, for the loss curve)
attributes:
  check_mode:
    support: none
  diff_mode:
    support: none
  idempotent:
    support: none
    details: Every run writes the summary and the curve again and reports a change.
"""

EXAMPLES = r"""
- name: Summarize the run
  tfdist.cluster.training_report:
    artifacts_dir: artifacts/mycluster
    cluster: mycluster
    cloud: local
    clock: "{{ tfdist_clock }}"
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
"""

import csv
import importlib.util
import json
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tfdist.cluster.plugins.module_utils._files import needs_write, write_file
from ansible_collections.tfdist.cluster.plugins.module_utils._supervisor import read_json

# Imported only to draw (about half a second): a re-run whose curve is up to date does not pay it.
HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


def phase_seconds(clock, result):
    def between(start, end):
        if start is None or end is None:
            return None
        return round(float(end) - float(start), 2)

    return {
        "provision": between(clock.get("deploy_started"), clock.get("provisioned")),
        "install": between(clock.get("provisioned"), clock.get("installed")),
        "launch_to_first_step": between(clock.get("launched"), result.get("first_step_at")),
        "training": result.get("training_seconds"),
        "total": between(clock.get("deploy_started"), time.time()),
    }


def read_history(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as handle:
        return [(int(row["step"]), float(row["loss"])) for row in csv.DictReader(handle)]


def draw_loss_curve(history, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps, losses = zip(*history)
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    ax.plot(steps, losses, color="tab:blue", linewidth=1.5)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main():
    module = AnsibleModule(
        argument_spec={
            "artifacts_dir": {"type": "path", "required": True},
            "cluster": {"type": "str", "required": True},
            "cloud": {"type": "str", "required": True},
            "clock": {"type": "dict", "default": {}},
            "lost_tasks": {"type": "list", "elements": "str", "default": []},
            "restarts": {"type": "list", "elements": "dict", "default": []},
            "required": {"type": "bool", "default": True},
            "source": {"type": "str", "default": ""},
            "leader_run": {"type": "str", "default": ""},
        },
        supports_check_mode=False,
    )
    folder = module.params["artifacts_dir"]
    source = module.params["source"] or "the leader's job folder"
    result_path = os.path.join(folder, "result.json")
    model_path = os.path.join(folder, "model", "model.keras")
    missing = [name for name, path in (("result.json", result_path), ("model/model.keras", model_path))
               if not os.path.exists(path)]
    if "result.json" in missing and module.params["required"]:
        module.fail_json(msg=f"artifacts_dir: no result.json in {folder}; did the leader finish?")
    for name in missing:
        module.warn(f"your script wrote no {name}: looked for it in {source} (as $TFDIST_WORK_DIR/{name}); "
                    "the job ended well by its exit code")
    result = {}
    if "result.json" not in missing:
        with open(result_path) as handle:
            result = json.load(handle)

    summary_path = os.path.join(folder, "summary.json")
    clock = module.params["clock"]
    seconds, lost_tasks, restarts = phase_seconds(clock, result), module.params["lost_tasks"], module.params["restarts"]
    leader_run = module.params["leader_run"]
    if not clock.get("launched"):
        # Nothing launched by this deploy: the job's phases and losses are those of the deploy that ran it, and so
        # is its run when nothing was collected either (the controller held its results).
        previous = read_json(summary_path) or {}
        seconds, lost_tasks = previous.get("seconds", seconds), previous.get("lost_tasks", lost_tasks)
        restarts = previous.get("restarts", restarts)
        leader_run = leader_run or previous.get("leader_run", "")
    summary = dict(result)
    summary.update(
        cluster=module.params["cluster"],
        cloud=module.params["cloud"],
        seconds=seconds,
        lost_tasks=lost_tasks,
        restarts=restarts,
        missing=[f"{source}/{name}" for name in missing],
        leader_run=leader_run,
    )
    content = (json.dumps(summary, indent=2, sort_keys=True) + "\n").encode()
    changed = needs_write(summary_path, content)
    if changed:
        write_file(summary_path, content)

    curve_path = ""
    history_path = os.path.join(folder, "history.csv")
    history = read_history(history_path)
    if history and HAS_MATPLOTLIB:
        curve_path = os.path.join(folder, "loss.png")
        if not os.path.exists(curve_path) or os.path.getmtime(curve_path) < os.path.getmtime(history_path):
            title = f"{module.params['cluster']} ({module.params['cloud']}): {summary.get('strategy', '')}"
            try:
                draw_loss_curve(history, curve_path, title)
                changed = True
            except Exception as error:  # pylint: disable=broad-exception-caught
                # A matplotlib that is installed but broken costs the picture, not the run's summary.
                module.warn(f"matplotlib could not draw the loss curve: {error!r}")
                curve_path = ""
    elif history:
        module.warn("matplotlib is not installed on the controller: no loss.png drawn")

    module.exit_json(
        changed=changed,
        summary=summary,
        summary_path=summary_path,
        model_path="" if "model/model.keras" in missing else model_path,
        missing=summary["missing"],
        loss_curve_path=curve_path,
    )


if __name__ == "__main__":
    main()
