"""One host's watch ends cleanly while another's fails, in the same task: what every host does next.

Two hosts of one job on this machine (local connections, each its own folder and port), a script of the user's
own: worker 0 (the leader, on `lead`) fails after 8 seconds, worker 1 (on `other`) ends at once, so the
watch of `other` returns before the failure is known. The watch play sets any_errors_fatal, as deploy.yml's
does (and as users' playbooks did before the watch needed none).

- training_fail_on_loss=false (deploy's tf_restart=on_failure): the play goes on for both hosts, and so does the
  next play (Ansible used to keep the clean host as failed for the rest of the run: skipped by the next play,
  exit code 2 with failed=0 in the recap).
- training_fail_on_loss=true: the failure stops every host, and the next play runs nowhere.
"""

import json
import sys

import pytest

from ansible_cli import run_playbook, tail
from processes import free_port_block

SCRIPT = """import json, os, sys, time
task = json.loads(os.environ["TF_CONFIG"])["task"]
if task["index"] == 0:
    time.sleep(8)  # worker 1 has ended and its watch returned by then
    sys.exit("worker 0 gave up")
"""

PLAYBOOK = """
- name: Launch the job
  hosts: worker
  gather_facts: false
  roles:
    - role: tfdist.cluster.training

- name: Watch the job
  hosts: worker
  gather_facts: false
  any_errors_fatal: true
  tasks:
    - name: Watch the job
      ansible.builtin.include_role:
        name: tfdist.cluster.training
        tasks_from: watch

    - name: Say what the watch saw
      ansible.builtin.debug:
        msg: "watched on {{ inventory_hostname }}: {{ 'failed' if training_watch_result.failed | default(false) else 'ended' }}"

- name: The play after the watch
  hosts: worker
  gather_facts: false
  tasks:
    - name: Reach the next play
      ansible.builtin.debug:
        msg: "next play on {{ inventory_hostname }}"
"""


def run_job(tmp_path, fail_on_loss):
    lead_port = free_port_block(2)
    other_port = lead_port + 1
    hosts = {host: {"ansible_connection": "local", "ansible_host": "127.0.0.1",
                    "ansible_python_interpreter": sys.executable,
                    "tfdist_tasks": [{"type": "worker", "index": index, "port": port}],
                    "training_home": str(tmp_path / host)}
             for index, (host, port) in enumerate((("lead", lead_port), ("other", other_port)))}
    (tmp_path / "hosts.yml").write_text(json.dumps({"worker": {"hosts": hosts}}))
    (tmp_path / "job.yml").write_text(PLAYBOOK)
    (tmp_path / "train.py").write_text(SCRIPT)
    return run_playbook(
        str(tmp_path / "job.yml"), "training_cluster_name=mixed", f"training_script={tmp_path / 'train.py'}",
        f"training_python={sys.executable}", "training_strategy=multi_worker_mirrored",
        f"training_artifacts_dir={tmp_path / 'artifacts'}", f"training_fail_on_loss={fail_on_loss}",
        args=("-i", str(tmp_path / "hosts.yml")), cwd=tmp_path)


@pytest.mark.parametrize("fail_on_loss", [False, True])
def test_a_clean_end_beside_a_failure(tmp_path, fail_on_loss):
    result = run_job(tmp_path, fail_on_loss)
    out = result.stdout

    assert "TF task worker-0 on lead exited with code 1" in out and "worker 0 gave up" in out, tail(result)
    if fail_on_loss:
        # Both hosts stop at the failure: neither says what it saw nor reaches the next play.
        assert result.returncode == 2, tail(result)
        assert "watched on" not in out and "next play on" not in out, tail(result)
    else:
        assert result.returncode == 0, tail(result)
        assert "watched on lead: failed" in out and "watched on other: ended" in out, tail(result)
        assert "next play on lead" in out and "next play on other" in out, tail(result)
