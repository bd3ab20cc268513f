# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Lay down a host's task files, and the dataset of the controller with them.

The module runs on the host; a script template (script_template) and a dataset (data_src) live on
the controller. Each task's script is rendered here, in the task's own process: no task of its own
before the call; the template sees where the dataset lands on the host (training_data_path). Up to
INLINE_LIMIT bytes the dataset travels inside the module's arguments: one call instead of the two of
a copy (a stat, then the transfer), the largest cost of a deploy before its first step after the TF
import. A larger file goes as ansible.builtin.copy sends it, after the call.

On a re-run the node usually holds these files already. The node's python3 then does the module's work
(_host_files.lay_down_host) from the idle guard's copy of the package, when it is this version's: one raw command
with the module's params on stdin (plugin_utils/_controller.py, run_on_node: the "training_files" run), which writes
nothing where everything is in place, as the module does, with no module payload to build, send and import.

Params larger than SEND_FIRST_LIMIT (a dataset inline) are not sent before the action knows the node wants them: the
"files_in_place" run first compares each file with its SHA256 (_files.in_place, the rule the module writes by), with the
copy of the package in package_dest; the action answers changed=false when every file and folder is there as the
module would leave it. It is also what a node without the guard's copy of this version gets, and on this machine
(connection local, no become: cloud=local) the action's own process runs it. Anything else (check mode, a dataset too
large to go inline, a file that differs with no guard's copy, no python3) runs the module.
"""

from __future__ import annotations

import base64
import json
import os

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _cluster, _files
from ansible_collections.tfdist.cluster.plugins.module_utils._package import package_files
from ansible_collections.tfdist.cluster.plugins.modules import training_files
from ansible_collections.tfdist.cluster.plugins.plugin_utils._controller import on_this_machine, run_on_node

# A file this size costs little to send again on a re-run; beyond it, the copy's checksum first.
INLINE_LIMIT = 4 * 1024 * 1024
# Params up to this size (JSON) go to the node's run of the module's work first: sending them costs about what the
# files_in_place run costs.
SEND_FIRST_LIMIT = 64 * 1024


def node_params(args):
    """The module's validated params for args, as the node would read them; None where the module must run (paths the
    node would expand, options it must name as wrong)."""
    # Paths as the module reads them only where the node cannot expand them otherwise (no ~, no $VARS).
    paths = [args.get("work_dir"), args.get("package_dest")] + ([args["warm_python"]] if args.get("warm_python") else [])
    if not all(isinstance(path, str) and path.startswith("/") and "$" not in path for path in paths):
        return None
    # The module's own options and defaults; anything they refuse is the module's to name.
    checked = ArgumentSpecValidator(training_files.ARGUMENT_SPEC).validate(args)
    return None if checked.error_messages else checked.validated_parameters


def files_to_check(args):
    """What the files_in_place run checks for the module's args, as _files.in_place arguments (the job's files and
    folders, then the package's); None where the module must run."""
    return files_to_check_for(node_params(args))


def files_to_check_for(params):
    """files_to_check for the module's params as node_params validated them (None: None)."""
    if params is None:
        return None
    try:
        task_files = _cluster.host_files(params)
        return [dict(root=params["work_dir"], digests={path: _files.digest(content) for path, content in task_files.items()},
                     folders=_cluster.host_folders(params)),
                dict(root=_files.package_root(params["package_dest"]), only=True,
                     digests={path: _files.digest(content) for path, content in package_files().items()})]
    except (_cluster.ClusterError, KeyError, TypeError, ValueError, AttributeError):
        return None  # the module names what is wrong


class _CopiedShallow(dict):
    """The task's variables for the template lookup, which deep-copies what it is given only to add its own on top
    (template_path, ansible_managed, template_vars): a shallow copy does that, without copying every variable of the
    host (about 35 ms of the controller's CPU per host on each lay-down). Rendering reads variables, never changes
    them."""

    def __deepcopy__(self, memo):
        return dict(self)


class ActionModule(ActionBase):

    # The module's call is piped (pipelining); a remote temporary folder, where one is needed, is made then (a large
    # dataset's copy makes its own): none made and removed on every call, two SSH round trips.
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        template = args.pop("script_template", None)
        template_vars = args.pop("script_template_vars", None) or {}
        data_src = args.pop("data_src", None)
        if data_src and not os.path.isfile(data_src):
            raise AnsibleActionFail("data_src: %s does not exist on the controller (or is not a file)" % data_src)
        data_dest = _cluster.data_path(args.get("work_dir", ""), os.path.basename(data_src)) if data_src else None
        if template:
            if not isinstance(template_vars, dict):
                raise AnsibleActionFail("script_template_vars: a dictionary is expected, got %r" % (template_vars,))
            if data_dest:
                template_vars = dict(template_vars, training_data_path=data_dest)
            args["scripts"] = self._render(template, template_vars, args, task_vars)
        large = None
        if data_src:
            if os.path.getsize(data_src) <= INLINE_LIMIT:
                with open(data_src, "rb") as handle:
                    content = base64.b64encode(handle.read()).decode("ascii")
                args["data"] = {"name": os.path.basename(data_src), "content": content}
            else:
                large = data_src
        params = node_params(args)
        sent = json.dumps(params) if params is not None else None
        on_node = sent is not None and not (large or self._task.check_mode or on_this_machine(self))
        # A small call goes whole at once: on a re-run the module's work answers what files_in_place would, and a new
        # node saves that run's round trip. A large one (a dataset inline) is checked first, by its SHA256s.
        send_first = on_node and len(sent) <= SEND_FIRST_LIMIT
        laid = self._lay_down_on_node(params) if send_first else None
        if laid is None:
            if not large and self._files_in_place(params):
                result.update(changed=False, written=[], new_tasks=[], package_written=[], package_removed=[], warm=[])
                return result
            if on_node and not send_first:
                laid = self._lay_down_on_node(params)
        if laid is not None:
            result.update(laid)
            return result
        result.update(self._execute_module(module_name="tfdist.cluster.training_files", module_args=args,
                                           task_vars=task_vars))
        if large and not result.get("failed"):
            result["data_copy"] = self._copy(large, data_dest, task_vars)
            result["changed"] = result.get("changed") or result["data_copy"].get("changed", False)
            if result["data_copy"].get("failed"):
                result.update(failed=True, msg="data_src: copying %s failed: %s"
                              % (large, result["data_copy"].get("msg")))
        return result

    def _files_in_place(self, params):
        """True when the node holds every file and folder of the module's params as the module would leave them."""
        files = files_to_check_for(params)
        if files is None:
            return False
        # The copy of the package in package_dest checks: its own files are among those it checks.
        return run_on_node(self, "files_in_place", files, lib=params["package_dest"], this_version=False) is True

    def _lay_down_on_node(self, params):
        """The module's result from the node's run of its work with the idle guard's copy of the package; None: the
        module's turn."""
        if params is None or params["package_dest"] is None:
            return None
        result = run_on_node(self, "training_files", params)
        return result if isinstance(result, dict) and "changed" in result else None

    def _render(self, template, template_vars, args, task_vars):
        """{task name: its script}, rendered as the template lookup does, with the task on top of template_vars."""
        try:
            path = self._find_needle("templates", template)
        except AnsibleError as error:
            raise AnsibleActionFail("script_template: %s" % error) from error
        lookup = self._shared_loader_obj.lookup_loader.get("ansible.builtin.template", loader=self._loader,
                                                           templar=self._templar)
        scripts = {}
        for task in args.get("tasks") or []:
            if not isinstance(task, dict) or not {"name", "type", "index"} <= set(task):
                continue  # the module names what a task lacks
            own = {"training_task": {"type": task["type"], "index": task["index"]},
                   "training_task_dir": _cluster.task_folder(args.get("work_dir", ""), task["name"])}
            scripts[task["name"]] = lookup.run([path], _CopiedShallow(task_vars), template_vars=dict(template_vars, **own))[0]
        return scripts

    def _copy(self, src, dest, task_vars):
        """ansible.builtin.copy's own action, as the template action hands it its result."""
        task = self._task.copy()
        task.args = {"src": src, "dest": dest, "mode": "%04o" % _files.FILE_MODE}  # as the module writes its files
        copy_action = self._shared_loader_obj.action_loader.get(
            "ansible.legacy.copy", task=task, connection=self._connection, play_context=self._play_context,
            loader=self._loader, templar=self._templar, shared_loader_obj=self._shared_loader_obj)
        return copy_action.run(task_vars=task_vars)
