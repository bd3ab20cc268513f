"""tfdist.cluster.training_log against real supervised processes and their real task.log."""

import json
import os
import sys

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _supervisor
from ansible_collections.tfdist.cluster.plugins.modules import training_log

# Waits for the file `begin` in the folder it is given, prints `count` numbered lines, then waits for the file `go`
# there before printing "after go" and ending.
PROGRAM = """
import os, sys, time
def wait_for(name):
    while not os.path.exists(os.path.join(sys.argv[2], name)):
        time.sleep(0.05)
wait_for("begin")
for number in range(int(sys.argv[1])):
    print("line %d" % number)
sys.stdout.flush()
wait_for("go")
print("after go")
"""


@pytest.fixture
def task(tmp_path):
    """start(count) -> the folder of a supervised task printing `count` lines, then waiting for task.go (go())."""
    task_dir = str(tmp_path / "tasks" / "worker-1")
    go_file = str(tmp_path / "go")

    (tmp_path / "program.py").write_text(PROGRAM)

    def start(count):
        command = [sys.executable, str(tmp_path / "program.py"), str(count), str(tmp_path)]
        _supervisor.start(task_dir, "demo/worker-1", command)
        # The supervisor's "runs as pid" line is in the log once start() returns: the program's lines come after it.
        open(tmp_path / "begin", "w").close()
        return task_dir

    start.go = lambda: open(go_file, "w").close()
    yield start
    _supervisor.stop(task_dir)


def wait_for(task_dir, text):
    """read_log's answers from offset 0 until one holds text: the log's whole text then."""
    answer = training_log.read_log(task_dir, offset=0, wait=10)
    while text not in answer["text"] and answer["running"]:
        answer = training_log.read_log(task_dir, offset=0, wait=10)
    return answer


def test_the_last_lines_of_a_log_and_what_it_gets_after_them(task, capsys):
    task_dir = task(100)
    assert "line 99" in wait_for(task_dir, "line 99")["text"]

    with patch_module_args({"dir": task_dir, "lines": 3}), pytest.raises(SystemExit):
        training_log.main()
    last = json.loads(capsys.readouterr().out)
    assert last["text"].splitlines() == ["line 97", "line 98", "line 99"]
    assert (last["exists"], last["running"], last["changed"]) == (True, True, False)
    assert last["offset"] == os.path.getsize(os.path.join(task_dir, "task.log"))

    # Nothing new while it waits: an empty read at the same offset.
    assert training_log.read_log(task_dir, offset=last["offset"])["text"] == ""

    task.go()
    rest = training_log.read_log(task_dir, offset=last["offset"], wait=10)
    assert rest["text"].startswith("after go\n")
    # Read on until it has ended: the supervisor's last line comes, then nothing, with running false.
    while rest["running"] or rest["text"]:
        seen = rest["text"]
        rest = training_log.read_log(task_dir, offset=rest["offset"], wait=10)
    assert "task ended: returncode 0 (exited)" in seen + rest["text"]
    assert rest == {"text": "", "offset": os.path.getsize(os.path.join(task_dir, "task.log")), "exists": True,
                    "running": False}


def test_a_read_from_an_offset_stops_at_a_whole_line_and_a_new_log_is_read_from_its_start(task):
    task_dir = task(100)
    wait_for(task_dir, "line 99")

    # In reads of at most 400 bytes, each ending at a whole line: together, the log as it is.
    parts = [training_log.read_log(task_dir, offset=0, max_bytes=400)]
    while parts[-1]["text"]:
        parts.append(training_log.read_log(task_dir, offset=parts[-1]["offset"], max_bytes=400))
    with open(os.path.join(task_dir, "task.log")) as handle:
        assert "".join(part["text"] for part in parts) == handle.read()
    assert len(parts) > 2 and all(len(part["text"]) <= 400 and part["text"].endswith("\n") for part in parts[:-1])

    beyond = training_log.read_log(task_dir, offset=10 ** 9, max_bytes=400)
    assert beyond["text"] == parts[0]["text"]  # the log is shorter than the offset: a new log, read from its start


def test_a_task_that_never_ran_here_has_no_log(tmp_path):
    nothing = {"text": "", "offset": 0, "exists": False, "running": False}
    assert training_log.read_log(str(tmp_path / "tasks" / "worker-9")) == nothing
