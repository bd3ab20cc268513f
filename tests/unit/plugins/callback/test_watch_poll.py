"""tfdist.cluster.watch_poll: the controller checks for results less often only while training is watched."""

import pytest

from ansible import constants as C
from ansible.playbook.task import Task
from ansible.plugins.loader import callback_loader


@pytest.fixture
def usual_interval():
    before = C.DEFAULT_INTERNAL_POLL_INTERVAL
    C.DEFAULT_INTERNAL_POLL_INTERVAL = 0.001
    yield 0.001
    C.DEFAULT_INTERNAL_POLL_INTERVAL = before


def task(action):
    made = Task()
    made.action = action
    return made


def callback(**options):
    plugin = callback_loader.get("tfdist.cluster.watch_poll")
    plugin.set_options(direct=options)
    return plugin


def test_the_watch_is_polled_slowly_and_the_next_task_as_before(usual_interval):
    plugin = callback()
    plugin.v2_playbook_on_task_start(task("ansible.builtin.command"), False)
    assert C.DEFAULT_INTERNAL_POLL_INTERVAL == usual_interval
    plugin.v2_playbook_on_task_start(task("tfdist.cluster.training_watch"), False)
    assert C.DEFAULT_INTERNAL_POLL_INTERVAL == 0.1
    plugin.v2_playbook_on_task_start(task("tfdist.cluster.training_task"), False)
    assert C.DEFAULT_INTERNAL_POLL_INTERVAL == usual_interval


def test_the_interval_is_an_option_and_the_run_ends_as_it_began(usual_interval):
    plugin = callback(interval=0.5)
    plugin.v2_playbook_on_handler_task_start(task("tfdist.cluster.training_watch"))
    assert C.DEFAULT_INTERNAL_POLL_INTERVAL == 0.5
    plugin.v2_playbook_on_stats(None)
    assert C.DEFAULT_INTERNAL_POLL_INTERVAL == usual_interval


def test_a_slower_usual_interval_is_kept(usual_interval):
    C.DEFAULT_INTERNAL_POLL_INTERVAL = 0.2  # internal_poll_interval set higher by the user
    plugin = callback()
    plugin.v2_playbook_on_task_start(task("tfdist.cluster.training_watch"), False)
    assert C.DEFAULT_INTERNAL_POLL_INTERVAL == 0.2
