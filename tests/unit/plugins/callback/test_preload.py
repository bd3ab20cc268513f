"""tfdist.cluster.preload: before it forks a task's workers, the controller loads their plugins, freezes its objects."""

import os
import re
import subprocess
import sys

from ansible.playbook.task import Task
from ansible.plugins.loader import callback_loader

# A fresh interpreter for each check: this test process may have loaded the plugins already.
CHECK = """
import sys
from ansible.plugins.loader import callback_loader, init_plugin_loader
from ansible.playbook.task import Task
init_plugin_loader()
plugin = callback_loader.get("tfdist.cluster.preload")
plugin.set_options()  # as a run does: from the configuration and the environment
before = set(sys.modules)
plugin.v2_playbook_on_start(None)
for action in sys.argv[1:]:
    task = Task()
    task.action = action
    plugin.v2_playbook_on_task_start(task, False)
print("\\n".join(sorted(set(sys.modules) - before)))
"""

PREFIX = "ansible_collections.tfdist.cluster.plugins."


def loaded_by_preload(*actions):
    run = subprocess.run([sys.executable, "-c", CHECK, *actions], capture_output=True, text=True, check=True)
    return set(run.stdout.split())


def builtin(loaded, plugin):
    """Whether Ansible's plugin X is loaded (ansible.plugins.X_<hash> or ansible_collections.ansible.builtin...X)."""
    return any(re.search(r"plugins[.]%s(_[0-9]+)?$" % re.escape(plugin), name) for name in loaded)


def test_the_task_action_the_filters_and_the_connections_are_loaded_in_the_controller():
    loaded = loaded_by_preload("tfdist.cluster.training_files", "ansible.builtin.set_fact")
    # The task's own action plugin, and what it imports.
    assert PREFIX + "action.training_files" in loaded
    assert PREFIX + "module_utils.tfdist._files" in loaded
    assert builtin(loaded, "action.set_fact")
    # Every filter file of the collection (a worker looking up one of them imports them all) and Ansible's own.
    assert {PREFIX + "filter.cluster", PREFIX + "filter.radl", PREFIX + "filter.storage"} <= loaded
    assert builtin(loaded, "filter.core")
    assert builtin(loaded, "connection.ssh")


def test_a_module_without_an_action_plugin_loads_the_normal_action():
    loaded = loaded_by_preload("tfdist.cluster.training_watch_not_there", "ansible.builtin.ping")
    assert builtin(loaded, "action.normal")


def test_a_task_it_cannot_resolve_is_left_to_the_worker():
    plugin = callback_loader.get("tfdist.cluster.preload")
    plugin.set_options()
    task = Task()
    task.action = "no.such.collection_module"
    plugin.v2_playbook_on_task_start(task, False)  # the worker reports it, as without this callback
    plugin.v2_playbook_on_task_start(task, False)


# In a fresh interpreter too: a playbook's start installs the template cache.
FREEZES = """
import gc
from ansible.plugins.loader import callback_loader, init_plugin_loader
from ansible.playbook.task import Task
init_plugin_loader()
plugin = callback_loader.get("tfdist.cluster.preload")
plugin.set_options()  # as a run does: from the configuration and the environment
task = Task()
task.action = "ansible.builtin.debug"
plugin.v2_playbook_on_task_start(task, False)
at_a_task = gc.get_freeze_count()
gc.unfreeze()
plugin.v2_playbook_on_handler_task_start(task)
at_a_handler = gc.get_freeze_count()
plugin.v2_playbook_on_stats(None)
at_the_end = gc.get_freeze_count()
plugin.v2_playbook_on_start(None)
print(at_a_task, at_a_handler, at_the_end, gc.get_freeze_count())
"""


def test_the_objects_are_frozen_for_the_forks_to_the_end_and_given_back_when_another_playbook_starts():
    run = subprocess.run([sys.executable, "-c", FREEZES], capture_output=True, text=True, check=True)
    at_a_task, at_a_handler, at_the_end, at_the_next_playbook = (int(count) for count in run.stdout.split())
    assert at_a_task > 0 and at_a_handler > 0
    # The run's end leaves them frozen: the interpreter's teardown does not walk them.
    assert at_the_end == at_a_handler
    assert at_the_next_playbook == 0


PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  vars:
    steps: "{{ 40 + 2 }}"
  tasks:
    - ansible.builtin.debug:
        msg: "steps={{ steps }} on {{ ['w0', 'w1'] | map('upper') | join(',') }}"
      when: steps | int > 2
"""


def test_a_playbook_keeps_its_compiled_templates_in_the_folder_and_shows_the_same(tmp_path):
    playbook = tmp_path / "play.yml"
    playbook.write_text(PLAYBOOK)
    folder = tmp_path / "templates"
    env = dict(os.environ, TFDIST_TEMPLATE_CACHE=str(folder), ANSIBLE_CALLBACKS_ENABLED="tfdist.cluster.preload",
               TFDIST_PRELOAD_PRIVATE_SPEEDUPS="true",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default", ANSIBLE_NOCOLOR="1")
    command = [sys.executable, "-m", "ansible.cli.playbook", "-i", "localhost,", str(playbook)]
    runs, kept = [], []
    for _run in range(2):
        runs.append(subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout)
        kept.append({entry.name: entry.stat().st_mtime_ns for entry in folder.iterdir()})
    assert "steps=42 on W0,W1" in runs[0]
    assert runs[1] == runs[0]
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    assert len(kept[0]) >= 3  # the variable, the message, the condition
    assert kept[1] == kept[0]  # the second run compiled nothing new: no entry written again


FOUND_ONCE = """
import pkgutil, sys
from ansible.plugins.loader import callback_loader, filter_loader, init_plugin_loader
init_plugin_loader()
plugin = callback_loader.get("tfdist.cluster.preload")
plugin.set_options()
plugin.v2_playbook_on_start(None)

def listed(*args, **kwargs):
    raise AssertionError("the collection's filter files were listed again")

pkgutil.iter_modules = listed
first = filter_loader.get("tfdist.cluster.tf_group")
print(first is filter_loader.get("tfdist.cluster.tf_group"), first.ansible_name)
try:
    filter_loader.get("tfdist.cluster.no_such_filter")
except Exception as e:  # Ansible wraps what went wrong while it looked
    print("looked for again:", e.__cause__)
"""


def test_each_filter_of_the_collection_is_found_once_in_the_controller_and_a_missing_one_is_looked_for_again():
    env = dict(os.environ, TFDIST_PRELOAD_PRIVATE_SPEEDUPS="true")
    run = subprocess.run([sys.executable, "-c", FOUND_ONCE], env=env, capture_output=True, text=True, check=True)
    found, missing = run.stdout.splitlines()
    # A worker (forked from the controller) finds the filter with no look at the collection's files.
    assert found == "True tfdist.cluster.tf_group"
    # A name not found is not remembered as missing: the next look searches again (and reports it as before).
    assert missing == "looked for again: the collection's filter files were listed again"


# By default the callback replaces nothing of ansible-core or Jinja: the lookup and the compile are theirs.
UNTOUCHED = """
import jinja2
from ansible.plugins.loader import Jinja2Loader, callback_loader, init_plugin_loader
init_plugin_loader()
lookup, compile_ = Jinja2Loader.get_with_context, jinja2.Environment.compile
plugin = callback_loader.get("tfdist.cluster.preload")
plugin.set_options()
plugin.v2_playbook_on_start(None)
print(Jinja2Loader.get_with_context is lookup, jinja2.Environment.compile is compile_)
"""


def test_without_private_speedups_neither_ansible_s_plugin_lookup_nor_jinja_s_compile_is_replaced():
    env = {key: value for key, value in os.environ.items() if not key.startswith("TFDIST_PRELOAD")}
    run = subprocess.run([sys.executable, "-c", UNTOUCHED], env=env, capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["True", "True"]
    run = subprocess.run([sys.executable, "-c", UNTOUCHED], env=dict(env, TFDIST_PRELOAD_PRIVATE_SPEEDUPS="true"),
                         capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["False", "False"]
