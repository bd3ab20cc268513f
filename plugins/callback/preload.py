# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""The controller prepares what its workers share before it forks one for each host of a task."""

from __future__ import annotations

DOCUMENTATION = r"""
name: preload
type: aggregate
author: tfdist maintainers (@tfdist)
version_added: 0.5.0
short_description: The controller loads a task's plugins and freezes its objects before it forks its workers
description:
  - Ansible runs each task of each host in a worker process forked from the controller's. What the controller has
    not loaded yet (the task's action plugin, the filters and tests of its templates, the connection) each worker
    finds and imports again, on every task, because a worker's imports end with it. And a worker's garbage
    collector walks every object it inherited, which copies the controller's memory page by page into the worker.
  - This callback loads those plugins in the controller's own process, where every worker forked after it finds them
    loaded. Filters, tests and connections once per playbook; a task's module path and action plugin when the task
    starts, before its workers are forked. On a 32-node cluster that is one import instead of 32 on every task.
  - When a task starts it also moves the controller's objects out of the garbage collector's reach (Python's
    C(gc.freeze), made for servers that fork), so the workers leave them alone. They stay there to the end of the
    run, where the interpreter's teardown then does not walk them (about 0.15 s of every run), and are given back
    when another playbook starts in the same process.
  - It changes nothing a task does or shows, and replaces nothing (it calls the plugin loaders' lookups and Python's
    C(gc.freeze)). Enabled by the tfdist.cluster repository's C(ansible.cfg); in your own, add it to
    C(callbacks_enabled). On a first C(cloud=local) deploy it brought the first training step about 2 s sooner.
  - O(private_speedups) adds two more, off by default because they replace private parts of ansible-core and Jinja
    in the controller's process, which a new ansible-core may change (where they are not found, the run goes on
    without them); leave them off while you debug a template or a plugin.
  - Each filter and test name found once per process (it replaces ansible-core's Jinja plugin lookup and reads the
    loader's module cache). Ansible finds a collection's filter or test again each time a template names it, in
    each worker and for each new templating environment (several per task), by listing the collection's filter (or
    test) files and loading every one of them to pick the one named.
  - The code Jinja compiles for each template and expression kept in the process and in O(template_cache) (it
    replaces C(jinja2.Environment.compile)). Ansible compiles a template each time it renders one, most of them in a
    worker for one host of one task. The code is kept under a key made of the template's text, the settings it is
    compiled with and the Python, Jinja and Ansible versions, so a changed template is compiled again; the filters
    and tests it names are looked at again before its code is used.
requirements:
  - enable in the configuration (C(callbacks_enabled))
options:
  private_speedups:
    description:
      - Also find each filter and test name once per process and keep compiled templates (see above), replacing private
        parts of ansible-core and Jinja, for speed only.
    type: bool
    default: false
    env:
      - name: TFDIST_PRELOAD_PRIVATE_SPEEDUPS
    ini:
      - key: private_speedups
        section: callback_preload
  template_cache:
    description:
      - With O(private_speedups), the folder that keeps compiled templates between runs, made with mode C(0700) where
        missing. Ansible runs
        the code in it, so a folder that other users can write to is not used (the run goes on without it).
      - Entries are a few kilobytes each; the folder can be removed at any time. Once a day the first run removes
        the entries no run has used for 30 days (those of an older Ansible, Jinja or Python, or of edited templates).
    type: path
    default: ~/.ansible/tfdist/templates
    env:
      - name: TFDIST_TEMPLATE_CACHE
    ini:
      - key: template_cache
        section: callback_preload
"""

EXAMPLES = r"""
# ansible.cfg
# [defaults]
# callbacks_enabled = tfdist.cluster.preload
"""

import functools
import gc

from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import Jinja2Loader, action_loader, connection_loader, filter_loader, module_loader, test_loader
from ansible.utils.display import Display

from ansible_collections.tfdist.cluster.plugins.plugin_utils import _template_cache

display = Display()

COLLECTION = "tfdist.cluster"
# One filter of this collection: looking it up imports each of the collection's filter files, as a worker would.
COLLECTION_FILTER = COLLECTION + ".tf_leader"
CONNECTIONS = ("ansible.builtin.ssh", "ansible.builtin.local")


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "tfdist.cluster.preload"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._seen = set()

    def v2_playbook_on_start(self, playbook):
        gc.unfreeze()  # what a playbook before this one in the same process froze
        if self.get_option("private_speedups"):
            self._quietly(self._keep_compiled_templates)
            self._quietly(_keep_found_jinja_plugins)
            self._quietly(_find_collection_filters)
        self._quietly(self._load_templating_and_connections)

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._before_fork(task)

    def v2_playbook_on_handler_task_start(self, task):
        self._before_fork(task)

    def _before_fork(self, task):
        self._quietly(self._load_action, task)
        # Garbage that is alive at a freeze stays until the run ends: a few thousand objects per play (measured with
        # a full collection at each play's start, which cost 30 ms a play), against the whole heap in every worker.
        gc.freeze()

    def _keep_compiled_templates(self):
        refused = _template_cache.install(self.get_option("template_cache"))
        if refused:
            display.warning("tfdist.cluster.preload: templates are compiled on every use: %s" % refused)

    @staticmethod
    def _load_templating_and_connections():
        for loader in (filter_loader, test_loader):
            list(loader.all())  # Ansible's own filters and tests, found and wrapped once
        filter_loader.get(COLLECTION_FILTER)  # imports each of the collection's filter files, as a worker would
        for name in CONNECTIONS:
            connection_loader.get(name, class_only=True)

    def _load_action(self, task):
        """What a worker looks up first for this task (TaskExecutor): the module's path and the action plugin."""
        key = (task.action, tuple(task.collections or ()))
        if key in self._seen:
            return
        self._seen.add(key)
        module = module_loader.find_plugin_with_context(task.action, collection_list=task.collections)
        if module.resolved and module.action_plugin:
            action_loader.get(module.action_plugin, class_only=True, collection_list=task.collections)
        elif action_loader.has_plugin(task.action, collection_list=task.collections):
            action_loader.get(task.action, class_only=True, collection_list=task.collections)
        else:
            action_loader.get("ansible.legacy.normal", class_only=True)

    @staticmethod
    def _quietly(load, *args):
        # Only a head start: whatever fails here, the worker finds it (and reports it) as it would anyway.
        try:
            load(*args)
        except Exception as e:  # pylint: disable=broad-exception-caught
            display.vvvv("tfdist.cluster.preload: %s" % e)


def _find_collection_filters():
    """Each of this collection's filters found once in the controller (kept by _keep_found_jinja_plugins)."""
    for name in _collection_plugin_names(filter_loader):
        filter_loader.get(name)


def _collection_plugin_names(loader):
    """The fully qualified names of this collection's filters (none of its tests: it has no test plugins)."""
    if loader.type != "filter":
        return []
    loader.get(COLLECTION_FILTER)
    folder = "/%s/plugins/%s/" % (COLLECTION.replace(".", "/"), loader.type)
    names = []
    for path, module in list(loader._module_cache.items()):
        plugins = getattr(module, loader.class_name, None) if folder in path else None
        if plugins is not None:
            names.extend("%s.%s" % (COLLECTION, name) for name in getattr(plugins(), loader.method_map_name)())
    return names


def _keep_found_jinja_plugins():
    """Filters and tests found by name once per process (and inherited by the workers it forks), not per lookup.

    What a name resolves to depends only on the installed collections, which a run does not change; a name that is
    not found is looked for again (a worker reports it as before).
    """
    if getattr(Jinja2Loader.get_with_context, "_tfdist_kept", False):
        return
    find = Jinja2Loader.get_with_context
    clear = Jinja2Loader._clear_caches
    found_by_name = {}

    @functools.wraps(find)
    def get_with_context(self, name, *args, **kwargs):
        if args or kwargs:
            return find(self, name, *args, **kwargs)
        key = (id(self), name)
        found = found_by_name.get(key)
        if found is None:
            found = find(self, name)
            if found.object is not None:
                found_by_name[key] = found
        return found

    @functools.wraps(clear)
    def _clear_caches(self):
        clear(self)
        for key in [key for key in found_by_name if key[0] == id(self)]:
            del found_by_name[key]

    get_with_context._tfdist_kept = True
    Jinja2Loader.get_with_context = get_with_context
    Jinja2Loader._clear_caches = _clear_caches
