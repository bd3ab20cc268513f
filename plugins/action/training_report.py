# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Write the run summary and the loss curve of a finished job, from the controller's own process.

Every file it reads and writes is the controller's: as a module it cost a payload to build and a Python to start on
every deploy (0.3 to 0.4 s), for a summary that a re-run leaves as it is.
"""

from __future__ import annotations

import csv
import io
import json
import os
import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._files import needs_write, write_file
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._json_files import read_json
from ansible_collections.tfdist.cluster.plugins.module_utils._restart import restart_line

ARGUMENT_SPEC = {
    "artifacts_dir": {"type": "path", "required": True},
    "cluster": {"type": "str", "required": True},
    "cloud": {"type": "str", "required": True},
    "clock": {"type": "dict", "default": {}},
    "lost_tasks": {"type": "list", "elements": "str", "default": []},
    "restarts": {"type": "list", "elements": "dict", "default": []},
    "required": {"type": "bool", "default": True},
    "source": {"type": "str", "default": ""},
    "leader_run": {"type": "str", "default": ""},
    # Where else the run's results are, for the message (summary.json does not record them).
    "model_urls": {"type": "list", "elements": "str", "default": []},
    "checkpoint_url": {"type": "str", "default": ""},
    "leader_address": {"type": "str", "default": ""},
    "tensorboard": {"type": "bool", "default": False},
    "tensorboard_port": {"type": "int", "default": 0},
}

# summary.json's shape (docs/schemas/summary.schema.json): raised when a key changes meaning or goes away.
SUMMARY_SCHEMA_VERSION = 1
# The summary is written once the job ended well: a failed job stops the deploy before it (the run's outcome.json,
# written by the outcome callback, names that one).
SUMMARY_OUTCOME = "success"

# matplotlib is optional (requirements.txt): without it the report says so, once per run, and how to get it.
NO_MATPLOTLIB = ("matplotlib is not installed on the controller: no loss curve (loss.png) drawn; "
                 "`pip install matplotlib` draws it")


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
    # Imported only to draw (about half a second): a re-run whose curve is up to date does not pay it.
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
    picture = io.BytesIO()
    fig.savefig(picture, format="png")
    plt.close(fig)
    write_file(path, picture.getvalue())  # its user's alone, as the rest of the folder


def summary_message(params, reported):
    """The lines that tell the user how the run went and where its results are (from report()'s result)."""
    summary = reported["summary"]

    def value(key, default="?"):
        return summary.get(key, default)

    restarts = "; ".join(restart_line(restart) for restart in summary.get("restarts") or []) or "none"
    tensorboard = (f"http://{params['leader_address']}:{params['tensorboard_port']} (runs until destroy)"
                   if params["tensorboard"] else "off (set tf_tensorboard=true)")
    return [
        f"cluster {params['cluster']} on {params['cloud']}: {value('steps')} steps"
        f" (resumed from {value('initial_step', 0)}), final loss {value('final_loss')},"
        f" held-out accuracy {value('accuracy')}, {value('examples_per_sec')} examples/s",
        f"restarts: {restarts}",
        f"model: {reported['model_path'] or 'none written by your script'}",
        f"summary: {reported['summary_path']}",
        f"loss curve: {reported['loss_curve_path'] or 'not drawn'}",
        f"model also at: {', '.join(params['model_urls']) or 'nowhere else (set tf_model_url)'}",
        f"checkpoints: {params['checkpoint_url'] or 'on the leader only (set tf_checkpoint_url)'}",
        f"TensorBoard: {tensorboard}",
    ]


def report(params, warn):
    """Write summary.json (and loss.png) in params['artifacts_dir']; the action's result. warn(message) warns."""
    folder = params["artifacts_dir"]
    source = params["source"] or "the leader's job folder"
    result_path = os.path.join(folder, "result.json")
    model_path = os.path.join(folder, "model", "model.keras")
    missing = [name for name, path in (("result.json", result_path), ("model/model.keras", model_path))
               if not os.path.exists(path)]
    if "result.json" in missing and params["required"]:
        raise AnsibleActionFail(f"artifacts_dir: no result.json in {folder}; did the leader finish?")
    for name in missing:
        warn(f"your script wrote no {name}: looked for it in {source} (as $TFDIST_WORK_DIR/{name}); "
             "the job ended well by its exit code")
    result = {}
    if "result.json" not in missing:
        with open(result_path) as handle:
            result = json.load(handle)

    summary_path = os.path.join(folder, "summary.json")
    clock = params["clock"]
    seconds, lost_tasks, restarts = phase_seconds(clock, result), params["lost_tasks"], params["restarts"]
    leader_run = params["leader_run"]
    if not clock.get("launched"):
        # Nothing launched by this deploy: the job's phases and losses are those of the deploy that ran it, and so
        # is its run when nothing was collected either (the controller held its results).
        previous = read_json(summary_path) or {}
        seconds, lost_tasks = previous.get("seconds", seconds), previous.get("lost_tasks", lost_tasks)
        restarts = previous.get("restarts", restarts)
        leader_run = leader_run or previous.get("leader_run", "")
    summary = dict(result)
    summary.update(
        schema_version=SUMMARY_SCHEMA_VERSION,
        outcome=SUMMARY_OUTCOME,
        cluster=params["cluster"],
        cloud=params["cloud"],
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
    if history:
        curve_path = os.path.join(folder, "loss.png")
        if not os.path.exists(curve_path) or os.path.getmtime(curve_path) < os.path.getmtime(history_path):
            title = f"{params['cluster']} ({params['cloud']}): {summary.get('strategy', '')}"
            try:
                draw_loss_curve(history, curve_path, title)
                changed = True
            except Exception as error:  # pylint: disable=broad-exception-caught
                # A matplotlib missing or installed but broken costs the picture, not the run's summary.
                if isinstance(error, ModuleNotFoundError) and error.name == "matplotlib":
                    warn(NO_MATPLOTLIB)
                else:
                    warn(f"matplotlib could not draw the loss curve: {error!r}")
                curve_path = ""

    reported = {
        "changed": changed,
        "summary": summary,
        "summary_path": summary_path,
        "model_path": "" if "model/model.keras" in missing else model_path,
        "missing": summary["missing"],
        "loss_curve_path": curve_path,
    }
    reported["message"] = summary_message(params, reported)
    return reported


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = False  # it never touches the host: the files are the controller's

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        if self._task.check_mode:
            result.update(skipped=True, msg="training_report writes the summary; it does not run in check mode")
            return result
        params = self.validate_argument_spec(ARGUMENT_SPEC)[1]
        warnings = []
        try:
            result.update(report(params, warnings.append))
        except OSError as error:
            raise AnsibleActionFail("artifacts_dir: %s: %s" % (error.filename, error.strerror)) from None
        if warnings:
            result["warnings"] = warnings
        return result
