"""tfdist.cluster.idle_guard action: which options it answers for itself on the node, and which it leaves to the module
(which names what is wrong with them)."""

import pytest

from ansible_collections.tfdist.cluster.plugins.action.idle_guard import started_options


def test_a_started_guard_gets_the_options_as_the_module_reads_them_with_tasks_dir_left_to_the_node():
    options = started_options({"idle_minutes": "30", "tasks_dir": "~/jobs/$USER", "poweroff_command": ["sudo", "halt"],
                               "quiet_seconds": "600"})
    assert options == {"idle_minutes": 30.0, "tasks_dir": "~/jobs/$USER", "poweroff_command": ["sudo", "halt"],
                       "quiet_seconds": 600}
    assert started_options({"state": "started", "idle_minutes": 5, "tasks_dir": "/var/lib/tfdist/c/tasks"}) == {
        "idle_minutes": 5.0, "tasks_dir": "/var/lib/tfdist/c/tasks", "poweroff_command": None, "quiet_seconds": 0}


@pytest.mark.parametrize("args", [
    {"state": "absent"},
    {"idle_minutes": 30},  # no tasks_dir
    {"tasks_dir": "/t"},  # no idle_minutes
    {"idle_minutes": 0, "tasks_dir": "/t"},
    {"idle_minutes": "soon", "tasks_dir": "/t"},
    {"idle_minutes": 30, "tasks_dir": "/t", "poweroff_command": {"run": "halt"}},
    {"idle_minutes": 30, "tasks_dir": "/t", "state": "paused"},
    {"idle_minutes": 30, "tasks_dir": "/t", "colour": "red"},
    {"idle_minutes": 30, "tasks_dir": ["/t"]},
    {"idle_minutes": 30, "tasks_dir": "/t", "quiet_seconds": -1},
    {"idle_minutes": 30, "tasks_dir": "/t", "quiet_seconds": 86401},  # more than a day
    {"idle_minutes": 30, "tasks_dir": "/t", "quiet_seconds": "a while"},
])
def test_anything_else_is_the_modules_to_run_or_name(args):
    assert started_options(args) is None
