"""A local cluster's network namespace (_netns): real holders, real supervised processes, no TensorFlow.

The tasks of a job folder that has one reach each other on 127.0.0.1 inside it; this machine's network (where the test
runs) shows none of their ports, TensorBoard's forwarded port excepted, on 127.0.0.1 only."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap

import pytest

from processes import alive, free_port_block, listening_ports, wait_until

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import (
    _netns, _supervisor, _task_folder, _warm_start)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# A TF server's stand-in: listens on its port on every interface (as TensorFlow does) until it is stopped.
SERVE = "import socket, time; s = socket.create_server(('', %d)); print('listening', flush=True); time.sleep(300)"


@pytest.fixture
def job(tmp_path):
    """A job folder with a namespace of its own; its tasks and holder are ended afterwards."""
    job_dir = str(tmp_path / "job")
    yield job_dir
    for name in os.listdir(os.path.join(job_dir, "tasks")) if os.path.isdir(os.path.join(job_dir, "tasks")) else []:
        _supervisor.stop(os.path.join(job_dir, "tasks", name))
    _netns.remove_namespace(job_dir)


def netns_of(pid):
    return os.readlink("/proc/%d/ns/net" % pid)


def log_of(task_dir):
    return _task_folder.log_tail(task_dir, 50)


def test_tasks_reach_each_other_inside_and_this_machine_sees_none_of_their_ports(job):
    leader_port, forwarded = free_port_block(1), free_port_block(1)
    changed, record = _netns.ensure(job, forward=[forwarded])
    assert changed and record["kind"] in ("net", "user+net")
    assert _netns.ensure(job, forward=[forwarded]) == (False, dict(record, running=True))  # a re-run keeps it
    tasks = os.path.join(job, "tasks")
    leader_dir, ps_dir, board_dir = (os.path.join(tasks, name) for name in ("chief-0", "ps-0", "tensorboard"))

    leader = _supervisor.start(leader_dir, "job/chief-0", [sys.executable, "-c", SERVE % leader_port],
                               announce_end=leader_port, announce_for=30)
    ps = _supervisor.start(ps_dir, "job/ps-0", ["sleep", "300"], stop_when_gone="127.0.0.1:%d" % leader_port,
                           gone_grace=60, probe_interval=0.2, end_grace=0)
    _supervisor.start(board_dir, "job/tensorboard", [sys.executable, "-c", SERVE % forwarded])
    assert wait_until(lambda: "listening" in log_of(leader_dir) and "listening" in log_of(board_dir))

    # Inside, the server's supervisor reaches the leader's port on 127.0.0.1; outside, nothing listens on it.
    assert wait_until(lambda: "chief 127.0.0.1:%d answers" % leader_port in log_of(ps_dir)), log_of(ps_dir)
    assert netns_of(leader["pid"]) == netns_of(ps["pid"]) == netns_of(record["pid"]) != netns_of(os.getpid())
    assert leader_port not in listening_ports()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", leader_port), timeout=2).close()
    # TensorBoard's port is forwarded from this machine's loopback, and from nowhere else.
    assert forwarded in listening_ports()
    with socket.create_connection(("127.0.0.1", forwarded), timeout=5) as connection:
        assert connection.getpeername()[0] == "127.0.0.1"

    # The leader's end is announced inside, and the server stops for it.
    _supervisor.stop(leader_dir)  # as a finished leader would, minus the announcement: the server's grace runs
    started = _supervisor.start(leader_dir, "job/chief-0", ["true"], announce_end=leader_port, announce_for=30)
    assert netns_of(started["supervisor_pid"]) == netns_of(record["pid"])
    assert wait_until(lambda: not _task_folder.task_status(ps_dir)["running"], timeout=30), log_of(ps_dir)
    assert _task_folder.task_status(ps_dir)["reason"] == _task_folder.CHIEF_FINISHED


def test_warm_starts_and_a_warm_host_run_in_the_namespace(job):
    record = _netns.ensure(job)[1]
    tasks = os.path.join(job, "tasks")
    alone, hosted = os.path.join(tasks, "chief-0"), os.path.join(tasks, "worker-0")
    socket_path = os.path.join(job, "warm-host-0.sock")
    _warm_start.warm_host(socket_path, sys.executable, 1, modules=["decimal"])
    warm_alone = _supervisor.warm(alone, sys.executable, modules=["decimal"])
    warm_hosted = _supervisor.warm(hosted, sys.executable, modules=["decimal"], host=socket_path)
    assert warm_hosted["hosted"] is True

    for task_dir, warm in ((alone, warm_alone), (hosted, warm_hosted)):
        script = os.path.join(task_dir, "serve.py")
        with open(script, "w") as f:
            f.write(SERVE % free_port_block(1))
        started = _supervisor.start(task_dir, "job/" + os.path.basename(task_dir), [sys.executable, script])
        assert started["pid"] == _task_folder.task_status(task_dir)["pid"]
        assert wait_until(lambda: "listening" in log_of(task_dir)), log_of(task_dir)
        assert "warm start: decimal imported" in log_of(task_dir)
        assert netns_of(started["pid"]) == netns_of(record["pid"]) != netns_of(os.getpid())


def test_destroy_ends_the_holder_and_a_task_never_starts_outside_a_namespace_that_is_gone(job):
    record = _netns.ensure(job)[1]
    assert _netns.holders(job) == [record["pid"]]
    os.kill(record["pid"], 9)  # a holder lost (killed): its record stays
    assert wait_until(lambda: not alive(record["pid"]))
    with pytest.raises(_task_folder.SupervisorError, match="network namespace is gone .* run the deploy again"):
        _supervisor.start(os.path.join(job, "tasks", "chief-0"), "job/chief-0", ["sleep", "300"])

    # A re-run makes a new one; destroy's removal of the job folder ends it, and destroy finds nothing left.
    record = _netns.ensure(job)[1]
    assert alive(record["pid"])
    shutil.rmtree(job)
    assert wait_until(lambda: not alive(record["pid"]), timeout=10)
    assert _netns.remove_namespace(job) is False
    record = _netns.ensure(job)[1]
    assert _netns.remove_namespace(job) is True
    assert not alive(record["pid"]) and not os.path.exists(os.path.join(job, _netns.RECORD))


UNPRIVILEGED = """
import json, os, sys, time
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _netns, _supervisor, _task_folder
job, port = sys.argv[1], int(sys.argv[2])
record = _netns.ensure(job)[1]
task = _supervisor.start(os.path.join(job, "tasks", "ps-0"), "job/ps-0", [sys.executable, "-c", sys.argv[3] % port])
for _ in range(100):
    if "listening" in _task_folder.log_tail(os.path.join(job, "tasks", "ps-0")):
        break
    time.sleep(0.1)
print(json.dumps({"kind": record["kind"], "holder": record["pid"], "task": task["pid"], "uid": os.getuid(),
                  "task_uid": os.stat("/proc/%d" % task["pid"]).st_uid}), flush=True)
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or not os.path.exists("/usr/bin/python3"),
                    reason="needs root to become another user (setpriv) and the system's Python")
def test_a_user_who_is_not_root_gets_an_unprivileged_namespace():
    """As users run a deploy: a user namespace that maps the user to itself, with its network namespace."""
    folder = tempfile.mkdtemp(dir="/tmp")  # pytest's own is root's alone
    os.chmod(folder, 0o777)
    job, port = os.path.join(folder, "job"), free_port_block(1)
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "env", "-i", "PATH=/usr/bin:/bin",
              "PYTHONPATH=" + os.path.join(REPO, ".collections"), "/usr/bin/python3"]
    try:
        out = subprocess.run(nobody + ["-c", textwrap.dedent(UNPRIVILEGED), job, str(port), SERVE], capture_output=True,
                             text=True, timeout=60, check=False)
        assert out.returncode == 0, out.stderr
        seen = json.loads(out.stdout.splitlines()[-1])
        assert (seen["kind"], seen["uid"], seen["task_uid"]) == ("user+net", 65534, 65534)
        assert os.readlink("/proc/%d/ns/net" % seen["task"]) == os.readlink("/proc/%d/ns/net" % seen["holder"])
        assert os.readlink("/proc/%d/ns/user" % seen["task"]) != os.readlink("/proc/self/ns/user")
        assert port not in listening_ports()
    finally:
        subprocess.run(nobody + ["-c", "import sys; from ansible_collections.tfdist.cluster.plugins.module_utils "
                                 "import _netns, _supervisor; _supervisor.stop(sys.argv[1] + '/tasks/ps-0'); "
                                 "_netns.remove_namespace(sys.argv[1])", job], timeout=60, check=False)
        shutil.rmtree(folder)
