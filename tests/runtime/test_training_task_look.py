"""The training_task action's node run in check mode: the node's copy of the package (the idle guard's lib), run by a
plain python3 with the options on stdin, answers as the module's check mode does, and only when that copy is this
version's."""

import json
import os
import subprocess

from ansible_collections.tfdist.cluster.plugins.module_utils import _package
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _node_run, _task_plan
from ansible_collections.tfdist.cluster.plugins.module_utils._package import CHECKSUMS, package_files


def look(guard_folder, params):
    """(exit code, the plans printed) of the "task_plans" run from guard_folder's lib, as the action runs it on a
    node."""
    stdin = _node_run.request("task_plans", params, os.path.join(guard_folder, "lib"),
                              package_files()[CHECKSUMS].decode())
    run = subprocess.run(_node_run.COMMAND, shell=True, input=stdin.decode(), capture_output=True, text=True,
                         check=False, timeout=60)
    return run.returncode, json.loads(run.stdout.splitlines()[-1]) if run.returncode == 0 else None


def task(tmp_path, name, **options):
    params = {key: spec.get("default") for key, spec in _task_plan.ARGUMENT_SPEC.items()}
    params.update(name=name, dir=str(tmp_path / "tasks" / name), command=["python3", "-c", "pass"], tasks=None,
                  env={"SECRET": "only on stdin"}, **options)
    return _task_plan.task_params(params)[0]


def test_the_look_plans_as_the_module_and_only_with_this_version(tmp_path):
    guard = tmp_path / "guard"
    _package.lay_down(str(guard / "lib"))
    done = tmp_path / "tasks" / "done"
    done.mkdir(parents=True)
    kept = task(tmp_path, "done", rerun_finished=False)
    (done / _task_plan.HASH_FILE).write_text(_task_plan.compute_hash(kept) + "\n")
    (done / "task.json").write_text(json.dumps({"name": "done", "pid": None}))
    (done / "exit.json").write_text(json.dumps({"returncode": 0, "reason": "exited", "finished_at": 1.0}))
    params = [task(tmp_path, "new"), kept, dict(kept, command=["python3", "-c", "print(1)"])]

    rc, plans = look(str(guard), params)
    assert rc == 0
    assert plans == [_task_plan.plan(p)[0] for p in params]
    assert [(p["name"], p["changed"]) for p in plans] == [("new", True), ("done", False), ("done", True)]
    assert plans[0]["status"]["reason"] == "not started"

    (guard / "lib" / "tfdist" / "_task_plan.py").write_text("# another version\n")
    assert look(str(guard), params)[0] != 0
    os.remove(guard / "lib" / "tfdist" / "_task_plan.py")
    assert look(str(guard), params)[0] != 0
