# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""The tfdist stdout callback: ansible.builtin.default, without skipped tasks, with failures that show only what
the user must fix."""

from __future__ import annotations

DOCUMENTATION = r"""
name: concise
type: stdout
author: tfdist maintainers (@tfdist)
version_added: 0.5.0
short_description: Ansible's default screen output, without skipped tasks and with short argument-spec failures
description:
  - The output of the C(ansible.builtin.default) callback, with every option of it (and of its result format,
    for example C(callback_result_format=yaml)), and with the same lines for tasks, progress and recap.
  - When a role's arguments fail validation (Ansible's automatic C(meta/argument_specs.yml) check, or an
    C(ansible.builtin.validate_argument_spec) task), the failure shows C(msg) (each offending argument and,
    for a choice, its allowed values) and C(argument_errors), not the role's whole argument specification
    (C(argument_spec_data), often hundreds of lines) nor the arguments it was given (C(validate_args_context)
    is kept, it names the role and entry point).
  - At verbosity 3 (C(-vvv)) and above the failure is shown whole, as C(ansible.builtin.default) shows it.
  - A host that ssh refused over its host key, where the host's C(tfdist_known_hosts) names the known_hosts file that
    pins it (the P(tfdist.cluster.libcloud#inventory) plugin's O(tfdist.cluster.libcloud#inventory:known_hosts)),
    is UNREACHABLE with a message that names the node and that file instead of ssh's banner (verbosity 3 and above
    show ssh's own words).
  - Skipped tasks are not shown (a deploy skips many checks and steps that do not apply to its cloud);
    C(-v) or more, or O(display_skipped_hosts=true), shows them again.
  - A loop whose items changed nothing is one line (the host and the number of items) instead of one line
    per item; items that changed something or failed are shown as usual, and C(-v) shows every item.
  - "The hosts on which a task changed nothing and has nothing to say share one line, written when the task
    ends, for example C(ok: 16 hosts [c-chief-0, c-worker-0, ..., c-worker-14]) instead of sixteen lines (the
    first two and the last are named). Changes, failures, warnings and a task's messages (M(ansible.builtin.debug))
    are shown per host as usual; C(-v) shows every host on its own line."
  - Used by the tfdist.cluster repository's C(ansible.cfg); set it in your own with
    C(stdout_callback = tfdist.cluster.concise), or C(ANSIBLE_STDOUT_CALLBACK=tfdist.cluster.concise).
extends_documentation_fragment:
  - default_callback
  - result_format_callback
requirements:
  - set as stdout callback in the configuration
options:
  display_skipped_hosts:
    name: Show skipped hosts
    description:
      - Toggle to control displaying skipped task/host results in a task.
      - Off by default, unlike C(ansible.builtin.default); on at verbosity 1 (C(-v)) and above.
    type: bool
    default: false
    env:
      - name: ANSIBLE_DISPLAY_SKIPPED_HOSTS
    ini:
      - key: display_skipped_hosts
        section: defaults
"""

EXAMPLES = r"""
# ansible.cfg
# [defaults]
# stdout_callback = tfdist.cluster.concise

# or for one run:
# ANSIBLE_STDOUT_CALLBACK=tfdist.cluster.concise ansible-playbook site.yml

# A bad training_strategy then prints (callback_result_format=yaml):
# fatal: [box]: FAILED! =>
#     argument_errors:
#     - 'value of training_strategy must be one of: parameter_server, multi_worker_mirrored, got: bogus'
#     changed: false
#     msg: |-
#         Validation of arguments failed:
#         value of training_strategy must be one of: parameter_server, multi_worker_mirrored, got: bogus
"""

import re

from ansible import constants as C
from ansible.playbook.task_include import TaskInclude
from ansible.plugins.callback.default import CallbackModule as DefaultCallbackModule

from ansible_collections.tfdist.cluster.plugins.module_utils._host_keys import KNOWN_HOSTS_VAR, refusal

# What a failed argument-spec validation returns beyond its message and errors: the role's whole
# specification, and the arguments that were checked (what the user wrote, or all of a role's defaults).
ARGUMENT_SPEC_BULK = ('argument_spec_data', 'validate_args_context_data', 'validated_args')
# Verbosity from which results are shown whole.
WHOLE_FROM_VERBOSITY = 3
# Up to this many quiet hosts are named on their task's line; beyond, the first two, the count and the last.
NAMED_HOSTS = 4


def natural_key(name):
    """worker-2 before worker-10."""
    return [int(part) if part.isdigit() else part for part in re.split(r'(\d+)', name)]


def quiet_hosts_line(labels):
    """The line of the hosts whose result is a plain ok: `ok: [a, b]`, or `ok: N hosts [a, b, ..., z]`."""
    labels = sorted(labels, key=natural_key)
    if len(labels) <= NAMED_HOSTS:
        return 'ok: [%s]' % ', '.join(labels)
    return 'ok: %d hosts [%s, %s, ..., %s]' % (len(labels), labels[0], labels[1], labels[-1])


def is_argument_spec_failure(result):
    """Whether a task result is a failed argument-spec validation: it carries argument_errors (the callback
    sees the result once Ansible has taken its failed flag out)."""
    return bool(result.get('argument_errors'))


def concise_result(result):
    """The result to show: without the argument-spec bulk when it is a failed validation, else as it is."""
    if not is_argument_spec_failure(result):
        return result
    return {key: value for key, value in result.items() if key not in ARGUMENT_SPEC_BULK}


class CallbackModule(DefaultCallbackModule):
    """ansible.builtin.default without skipped tasks, with one line for a task's quiet hosts, and with failures
    that leave out the argument spec of a failed validation."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'stdout'
    CALLBACK_NAME = 'tfdist.cluster.concise'

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The hosts of the running task whose result was a plain ok, not written yet.
        self._quiet_hosts = []

    def set_options(self, *args, **kwargs):
        super().set_options(*args, **kwargs)
        if self._display.verbosity >= 1:  # -v brings back the detail
            self._plugin_options['display_skipped_hosts'] = True

    def _shows_every_ok(self, result):
        """True when an unchanged result is shown as the default callback shows it."""
        return self._display.verbosity >= 1 or result.result.get('changed', False) or not self.get_option('display_ok_hosts')

    def _banner_and_warnings(self, result):
        if self._last_task_banner != result.task._uuid:
            self._print_task_banner(result.task)
        self._handle_warnings_and_exception(result)

    def v2_runner_item_on_ok(self, result):
        if self._shows_every_ok(result):
            super().v2_runner_item_on_ok(result)
            return
        # An unchanged item: its loop's summary line says it (v2_runner_on_ok); warnings still show.
        self._banner_and_warnings(result)

    def _is_quiet(self, result):
        """A plain ok, which the default callback would show as `ok: [host]` and nothing else."""
        return (not self._shows_every_ok(result) and not result.task.loop and not self._run_is_verbose(result)
                and not result.result.get('warnings') and not result.result.get('deprecations')
                and not result.result.get('exception'))

    def _write_quiet_hosts(self):
        if self._quiet_hosts:
            labels, self._quiet_hosts = self._quiet_hosts, []
            self._display.display(quiet_hosts_line(labels), color=C.COLOR_OK)

    def v2_runner_on_ok(self, result):
        if not isinstance(result.task, TaskInclude) and self._is_quiet(result):
            if self._last_task_banner != result.task._uuid:
                self._write_quiet_hosts()
                self._print_task_banner(result.task)
            self._quiet_hosts.append(self.host_label(result))
            return
        items = result.result.get('results')
        if self._shows_every_ok(result) or not result.task.loop or not isinstance(items, list):
            super().v2_runner_on_ok(result)
            return
        self._banner_and_warnings(result)
        self._display.display('ok: [%s] (%d items)' % (self.host_label(result), len(items)), color=C.COLOR_OK)

    # A task's quiet hosts are written when it ends: when the next task, play or include starts, or the recap.
    def v2_playbook_on_task_start(self, task, is_conditional):
        self._write_quiet_hosts()
        super().v2_playbook_on_task_start(task, is_conditional)

    def v2_playbook_on_handler_task_start(self, task):
        self._write_quiet_hosts()
        super().v2_playbook_on_handler_task_start(task)

    def v2_playbook_on_play_start(self, play):
        self._write_quiet_hosts()
        super().v2_playbook_on_play_start(play)

    def v2_playbook_on_include(self, included_file):
        self._write_quiet_hosts()
        super().v2_playbook_on_include(included_file)

    def v2_playbook_on_stats(self, stats):
        self._write_quiet_hosts()
        super().v2_playbook_on_stats(stats)

    def v2_runner_on_unreachable(self, result):
        # This callback's own copy of the result: other callbacks see ssh's words.
        known_hosts = result.host.vars.get(KNOWN_HOSTS_VAR)
        message = refusal(result.host.get_name(), known_hosts, result.result.get('msg')) if known_hosts else None
        if message and self._display.verbosity < WHOLE_FROM_VERBOSITY:
            result.result['msg'] = message
            result.result.pop('exception', None)  # Ansible's own report of the error: ssh's banner again, twice
        super().v2_runner_on_unreachable(result)

    def _dump_results(self, result, *args, **kwargs):
        if self._display.verbosity < WHOLE_FROM_VERBOSITY:
            result = concise_result(result)
        return super()._dump_results(result, *args, **kwargs)
