"""tfdist.cluster.concise: a failed argument-spec validation shows the offending argument, not the whole spec."""

import yaml

from ansible.plugins.loader import callback_loader
from ansible.utils.display import Display

from ansible_collections.tfdist.cluster.plugins.callback import concise

ERROR = "value of training_strategy must be one of: parameter_server, multi_worker_mirrored, got: bogus"
SPEC_FAILURE = {
    "failed": True,
    "changed": False,
    "msg": "Validation of arguments failed:\n" + ERROR,
    "argument_errors": [ERROR],
    "argument_spec_data": {f"training_option_{i}": {"type": "str", "description": "x" * 80} for i in range(200)},
    "validate_args_context": {"name": "training", "type": "role", "argument_spec_name": "main"},
}


def callback(verbosity=0):
    plugin = callback_loader.get("tfdist.cluster.concise")
    assert plugin is not None and isinstance(plugin, concise.CallbackModule)
    plugin.set_options(direct={"result_format": "json"})
    plugin._display = Display()
    plugin._display.verbosity = verbosity
    return plugin


def test_argument_spec_failure_keeps_the_message_and_the_errors_only():
    shown = yaml.safe_load(callback()._dump_results(dict(SPEC_FAILURE)))
    assert ERROR in shown["msg"] and shown["argument_errors"] == [ERROR]
    assert shown["validate_args_context"]["name"] == "training"
    assert "argument_spec_data" not in shown
    # The whole failure is a few lines, not hundreds.
    assert len(callback()._dump_results(dict(SPEC_FAILURE), indent=4).splitlines()) < 20
    yaml_plugin = callback()
    yaml_plugin.set_options(direct={"result_format": "yaml"})
    assert yaml.safe_load(yaml_plugin._dump_results(dict(SPEC_FAILURE)))["argument_errors"] == [ERROR]


def test_other_results_and_high_verbosity_are_shown_whole():
    other = {"failed": True, "msg": "boom", "argument_spec_data": {"kept": True}}
    assert yaml.safe_load(callback()._dump_results(other))["argument_spec_data"] == {"kept": True}
    assert "argument_spec_data" in yaml.safe_load(callback(verbosity=3)._dump_results(dict(SPEC_FAILURE)))
    # The caller's result is not changed (other callbacks see it whole).
    assert "argument_spec_data" in SPEC_FAILURE


def test_it_is_the_default_callback_otherwise():
    from ansible.plugins.callback.default import CallbackModule as Default

    plugin = callback()
    assert isinstance(plugin, Default) and plugin.CALLBACK_TYPE == "stdout"
    assert plugin.get_option("display_ok_hosts") is True


def test_skipped_tasks_are_hidden_unless_asked_for_or_verbose(monkeypatch):
    assert callback().get_option("display_skipped_hosts") is False
    monkeypatch.setenv("ANSIBLE_DISPLAY_SKIPPED_HOSTS", "true")
    assert callback().get_option("display_skipped_hosts") is True
    monkeypatch.delenv("ANSIBLE_DISPLAY_SKIPPED_HOSTS")
    verbose = callback_loader.get("tfdist.cluster.concise")
    verbose._display = Display()
    monkeypatch.setattr(verbose._display, "verbosity", 1)  # Display is shared: put it back afterwards
    verbose.set_options(direct={"result_format": "json"})
    assert verbose.get_option("display_skipped_hosts") is True


def callback_task_result(host, task, result):
    """The result object ansible-core gives callbacks. Since 2.21 it is made from core's own task result type,
    before that from the result dict and the task's fields."""
    from ansible.executor.task_result import CallbackTaskResult
    from ansible.inventory.host import Host

    try:
        from ansible._internal._task import UnifiedTaskResult
    except ImportError:
        return CallbackTaskResult(Host(host), task, result, {})
    return CallbackTaskResult(Host(host), task, UnifiedTaskResult.from_action_result_dict(result))


def run_task(plugin, name, results, loop=None):
    """Give the plugin a task's start and its results: [(host name, result dict)]."""
    from ansible.playbook.task import Task

    task = Task.load({"name": name, "action": "ansible.builtin.ping", **({"loop": loop} if loop else {})})
    plugin.v2_playbook_on_task_start(task, False)
    for host, result in results:
        callback_result = callback_task_result(host, task, result)
        if result.get("failed"):
            plugin.v2_runner_on_failed(callback_result)
        else:
            plugin.v2_runner_on_ok(callback_result)


def screen(monkeypatch, verbosity=0):
    """A plugin in a play, and the lines it writes."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.playbook.play import Play

    plugin = callback()
    monkeypatch.setattr(plugin._display, "verbosity", verbosity)
    lines = []
    monkeypatch.setattr(plugin._display, "display", lambda msg, *args, **kwargs: lines.append(msg))
    monkeypatch.setattr(plugin._display, "banner", lambda msg, *args, **kwargs: lines.append(msg))
    plugin.v2_playbook_on_play_start(Play.load({"name": "Train", "hosts": "all"}, loader=DataLoader()))
    return plugin, lines


def test_hosts_with_a_plain_ok_share_one_line_in_name_order(monkeypatch):
    plugin, lines = screen(monkeypatch)
    hosts = [f"c-worker-{i}" for i in (10, 2, 0, 1)] + ["c-chief-0"]
    run_task(plugin, "Read the venv", [(host, {"changed": False}) for host in hosts])
    run_task(plugin, "Lay down", [("c-worker-0", {"changed": False}), ("c-chief-0", {"changed": True}),
                                  ("c-worker-1", {"changed": False})])
    plugin.v2_playbook_on_play_start(plugin._play)  # the next play: the last task's hosts come first
    banners = [i for i, line in enumerate(lines) if line.startswith("TASK")]
    # Each task's quiet hosts are one line at its end, after what its other hosts showed.
    assert lines[banners[0] + 1:banners[1]] == ["ok: 5 hosts [c-chief-0, c-worker-0, ..., c-worker-10]"]
    assert lines[banners[1] + 1:banners[1] + 3] == ["changed: [c-chief-0]", "ok: [c-worker-0, c-worker-1]"]


def test_a_failure_messages_and_verbosity_keep_their_own_lines(monkeypatch):
    plugin, lines = screen(monkeypatch)
    run_task(plugin, "Check", [("a", {"changed": False}), ("b", {"failed": True, "msg": "boom"}),
                               ("c", {"changed": False, "msg": "hello", "_ansible_verbose_always": True})])
    plugin.v2_playbook_on_play_start(plugin._play)
    shown = [line for line in lines if not line.startswith(("TASK", "PLAY"))]
    assert "boom" in shown[0] and shown[1].startswith("ok: [c] =>") and shown[2] == "ok: [a]"
    verbose, verbose_lines = screen(monkeypatch, verbosity=1)
    run_task(verbose, "Read", [("a", {"changed": False}), ("b", {"changed": False})])
    assert [line.split(" =>")[0] for line in verbose_lines if line.startswith("ok:")] == ["ok: [a]", "ok: [b]"]
