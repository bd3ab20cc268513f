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
