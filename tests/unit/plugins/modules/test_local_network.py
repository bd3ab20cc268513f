"""tfdist.cluster.local_network: a real holder where this machine allows one; the warning where it allows none."""

import json
import os
import socket

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _netns
from ansible_collections.tfdist.cluster.plugins.modules import local_network


@pytest.fixture
def run(capsys, tmp_path):
    job_dir = str(tmp_path / "job")

    def run_module(check_mode=False, **options):
        with patch_module_args(dict(dict(dir=job_dir), **options, _ansible_check_mode=check_mode)), \
                pytest.raises(SystemExit):
            local_network.main()
        out = capsys.readouterr()
        result = json.loads(out.out)
        # The warnings: in the result, or shown by Display at once where the module runs in the controller's process.
        run_module.said = " ".join((out.err + " " + " ".join(map(str, result.get("warnings", [])))).split())
        return result

    run_module.job_dir = job_dir
    yield run_module
    _netns.remove_namespace(job_dir)


def test_a_namespace_is_made_once_kept_and_removed(run):
    assert run(check_mode=True)["changed"] is True
    assert _netns.holders(run.job_dir) == []  # check mode starts nothing
    made = run()
    assert made["changed"] is True and made["namespace"] in ("net", "user+net")
    assert _netns.holders(run.job_dir) == [made["pid"]]
    assert run() == dict(made, changed=False)
    assert run(state="absent")["changed"] is True
    assert _netns.holders(run.job_dir) == [] and run(state="absent")["changed"] is False


def test_no_namespace_possible_warns_with_the_ports_that_are_open_and_goes_on(run, monkeypatch):
    def refused(*args, **kwargs):
        raise _netns.NamespaceError("net namespace: Operation not permitted")

    monkeypatch.setattr(_netns, "ensure", refused)
    result = run(ports=[2222, 2223])
    assert (result.get("failed"), result["changed"], result["namespace"]) == (None, False, None)
    assert ("cloud=local: no network namespace can be made on this machine (net namespace: Operation not permitted), "
            "so the tasks run in its own network. TensorFlow listens on every interface, so the cluster's TF ports "
            "(2222, 2223) are open, without authentication, to anyone who reaches this machine while the job runs."
            ) in run.said


def test_a_forwarded_port_that_is_taken_fails_naming_it(run):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = run(forward=[port])
    assert result["failed"] is True
    assert result["msg"].startswith("port %d, forwarded from this machine's loopback" % port)
    assert not os.path.exists(os.path.join(run.job_dir, _netns.RECORD))
