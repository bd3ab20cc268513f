"""The training_log action's follow (print_log), reading a real supervised task with the module's own code."""

import os
import sys
import threading

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.tfdist.cluster.plugins.action.training_log import print_log
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _supervisor
from ansible_collections.tfdist.cluster.plugins.modules.training_log import read_log

# Prints a line, then one more each time a file go-N appears, up to go-3, and ends.
PROGRAM = """
import os, sys, time
print("first", flush=True)
for number in range(1, 4):
    while not os.path.exists(os.path.join(sys.argv[1], "go-%d" % number)):
        time.sleep(0.05)
    print("line %d" % number, flush=True)
"""


def read(**args):
    return read_log(args.pop("dir"), **args)


def test_following_prints_each_line_as_it_comes_and_ends_with_the_task(tmp_path):
    (tmp_path / "program.py").write_text(PROGRAM)
    task_dir = str(tmp_path / "tasks" / "worker-1")
    _supervisor.start(task_dir, "demo/worker-1", [sys.executable, str(tmp_path / "program.py"), str(tmp_path)])
    shown = []

    def show(text):
        # Each line the follower shows lets the task write the next one: it ends only if every line was shown.
        shown.append(text)
        for number, before in enumerate(("first", "line 1", "line 2"), 1):
            if before in text:
                open(os.path.join(str(tmp_path), "go-%d" % number), "w").close()

    try:
        follower = threading.Thread(target=lambda: shown.append(print_log(read, show, task_dir, 5, True, 1.0)))
        follower.start()
        follower.join(60)
        assert not follower.is_alive()
    finally:
        _supervisor.stop(task_dir)

    answer = shown.pop()
    text = "".join(shown)
    assert [line for line in text.splitlines() if not line.startswith("[tfdist-supervise]")] == [
        "first", "line 1", "line 2", "line 3"]
    assert "task ended: returncode 0 (exited)" in text.splitlines()[-1]
    assert answer["running"] is False and answer["offset"] == os.path.getsize(os.path.join(task_dir, "task.log"))


def test_a_task_that_never_ran_is_named(tmp_path):
    with pytest.raises(AnsibleActionFail, match="worker-9 has no log: the task has never run on this host"):
        print_log(read, print, str(tmp_path / "worker-9"), 5, False, 1.0)
