"""On a re-run the training_files action looks before it runs the module: on a node one raw command, the node's own
copy of the package checking each file by its SHA256; on this machine (connection local) the action itself. The look
answers only when the node holds everything as the module would leave it; an edited file, a changed mode, a missing
folder or a stray file in the package sends the call to the module, which puts it right."""

import json
import os
import subprocess

from ansible_cli import run_playbook, tail

from ansible_collections.tfdist.cluster.plugins.action.training_files import files_to_check, node_params
from ansible_collections.tfdist.cluster.plugins.module_utils import _package
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _idle_guard, _node_run
from ansible_collections.tfdist.cluster.plugins.module_utils._package import CHECKSUMS, package_files

PLAYBOOK = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - tfdist.cluster.training_files:
        work_dir: "{{ work_dir }}"
        cluster_name: looked
        tasks: [{name: worker-0, type: worker, index: 0}, {name: worker-1, type: worker, index: 1}]
        script: "print('training')\\n"
        cluster_spec: {worker: ["127.0.0.1:2222", "127.0.0.1:2223"]}
        folders: [tensorboard]
        package_dest: "{{ lib_dir }}"
      register: laid
    - ansible.builtin.copy:
        content: "{{ laid | to_json }}"
        dest: "{{ work_dir }}.result.json"
        mode: "0644"
"""

# What -vvv prints when the action builds and runs the module (not when its look answered).
MODULE_RAN = "Using module file"


def files_in_place(package_dest, parts):
    """The exit code of the training_files action's "files_in_place" run on a node, with the copy in package_dest."""
    return subprocess.run(_node_run.COMMAND, shell=True, input=_node_run.request("files_in_place", parts, package_dest),
                          check=False, timeout=60).returncode


def lay(tmp_path):
    playbook = tmp_path / "lay.yml"
    playbook.write_text(PLAYBOOK)
    result = run_playbook(str(playbook), "work_dir=%s" % (tmp_path / "job"), "lib_dir=%s" % (tmp_path / "lib"),
                          args=("-i", "localhost,", "-vvv"))
    assert result.returncode == 0, tail(result)
    laid = json.loads((tmp_path / "job.result.json").read_text())
    module_ran = any(MODULE_RAN in line and "training_files" in line for line in result.stdout.splitlines())
    return laid, module_ran


def test_a_node_that_holds_the_files_is_answered_by_the_look(tmp_path):
    first, module_ran = lay(tmp_path)
    assert first["changed"] and module_ran
    assert first["new_tasks"] == ["worker-0", "worker-1"] and "_files.py" in first["package_written"]

    again, module_ran = lay(tmp_path)
    assert not again["changed"] and not module_ran
    assert again["written"] == [] and again["new_tasks"] == [] and again["warm"] == []


def test_anything_the_module_would_change_sends_the_call_to_it(tmp_path):
    lay(tmp_path)
    job, package = tmp_path / "job", tmp_path / "lib" / "tfdist"
    script = job / "tasks" / "worker-1" / "train.py"
    changes = [
        (lambda: script.write_text("print('edited')\n"), "tasks/worker-1/train.py"),
        (lambda: os.chmod(job / "tasks" / "worker-0" / "task.env", 0o644), "tasks/worker-0/task.env"),
        (lambda: (package / "_cluster.py").write_text("# not the collection's\n"), "_cluster.py"),
    ]
    for change, path in changes:
        change()
        laid, module_ran = lay(tmp_path)
        assert laid["changed"] and module_ran, path
        assert path in laid["written"] + laid["package_written"]
    assert script.read_text() == "print('training')\n"

    os.rmdir(job / "tasks" / "tensorboard")
    laid, module_ran = lay(tmp_path)
    assert laid["changed"] and module_ran

    (package / "train" / "leftover.py").write_text("")
    laid, module_ran = lay(tmp_path)
    assert laid["changed"] and module_ran and laid["package_removed"] == ["train/leftover.py"]

    laid, module_ran = lay(tmp_path)
    assert not laid["changed"] and not module_ran


def test_the_nodes_own_copy_answers_the_same_look(tmp_path):
    """On a node the look is a raw command: python3 runs the "files_in_place" run of the package the module laid
    down."""
    lay(tmp_path)
    args = {"work_dir": str(tmp_path / "job"), "package_dest": str(tmp_path / "lib"), "cluster_name": "looked",
            "tasks": [{"name": "worker-%d" % i, "type": "worker", "index": i} for i in (0, 1)],
            "script": "print('training')\n", "cluster_spec": {"worker": ["127.0.0.1:2222", "127.0.0.1:2223"]},
            "folders": ["tensorboard"]}

    def node_look(**changed):
        return files_in_place(args["package_dest"], files_to_check(dict(args, **changed)))

    assert node_look() == 0
    assert node_look(script="print('other')\n") != 0
    # The module's own options decide: what it refuses, it names (no look), and its defaults are the look's.
    assert files_to_check(dict(args, chief_name="boss")) is None
    assert files_to_check(dict(args, gpus="two")) is None
    assert files_to_check(dict(args, chief_name="chief", gpus=0)) == files_to_check(args)
    assert node_look(folders=["tensorboard", "profile"]) != 0
    os.remove(tmp_path / "lib" / "tfdist" / "_files.py")  # no look without the node's own copy
    assert node_look() != 0


def test_on_a_fresh_node_the_guards_copy_lays_down_what_the_module_would(tmp_path):
    """A node that holds the idle guard's copy of this version's package lays its files down with it: one raw command
    (the "training_files" run of _node_run), its params on stdin. Its result and files are the module's; another
    version's copy does nothing and leaves the call to the module."""
    home = tmp_path / "home"
    _package.lay_down(str(home / _idle_guard.HOME_FOLDER / "lib"))  # what the idle_guard module leaves
    args = {"work_dir": str(tmp_path / "job"), "package_dest": str(tmp_path / "lib"), "cluster_name": "looked",
            "tasks": [{"name": "worker-%d" % i, "type": "worker", "index": i} for i in (0, 1)],
            "script": "print('training')\n", "cluster_spec": {"worker": ["127.0.0.1:2222", "127.0.0.1:2223"]},
            "folders": ["tensorboard"]}
    stdin = _node_run.request("training_files", node_params(args), _node_run.GUARD_LIB,
                              package_files()[CHECKSUMS].decode())

    def node_lay_down():
        done = subprocess.run(_node_run.COMMAND, shell=True, input=stdin.decode(), capture_output=True, text=True,
                              env=dict(os.environ, HOME=str(home)), check=False, timeout=60)
        return done.returncode, json.loads(done.stdout.splitlines()[-1]) if done.returncode == 0 else done.stderr

    rc, laid = node_lay_down()
    assert rc == 0, laid
    assert laid["changed"] and laid["new_tasks"] == ["worker-0", "worker-1"] and "_host_files.py" in laid["package_written"]
    assert (tmp_path / "job" / "tasks" / "worker-1" / "train.py").read_text() == "print('training')\n"
    # Exactly what the module leaves: the look finds everything in place, and the module has nothing to do.
    assert files_in_place(args["package_dest"], files_to_check(args)) == 0
    again, module_ran = lay(tmp_path)
    assert not again["changed"] and not module_ran
    assert node_lay_down() == (0, dict(changed=False, written=[], new_tasks=[], package_written=[], package_removed=[],
                                       warm=[]))

    (home / _idle_guard.HOME_FOLDER / "lib" / "tfdist" / "_cluster.py").write_text("# not this version's\n")
    (tmp_path / "job" / "tasks" / "worker-0" / "train.py").write_text("print('edited')\n")
    rc, _output = node_lay_down()
    assert rc != 0
    assert (tmp_path / "job" / "tasks" / "worker-0" / "train.py").read_text() == "print('edited')\n"
