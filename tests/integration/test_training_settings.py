"""The training role checks the job's settings once for the play's hosts, before it writes anything: the message
names the bad setting and every host of the play that the layout gives no TF task."""

from ansible_cli import run_playbook

INVENTORY = """
all:
  vars: {ansible_connection: local}
  children:
    worker: {hosts: {w0: {}}}
    other: {hosts: {stray: {}}}
"""

PLAYBOOK = """
- hosts: all
  gather_facts: false
  roles:
    - role: tfdist.cluster.training
      vars:
        training_home: "{{ home }}"
        training_steps: "{{ steps | int }}"
"""


def deploy(tmp_path, steps):
    (tmp_path / "hosts.yml").write_text(INVENTORY)
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    return run_playbook(str(tmp_path / "play.yml"), "home=%s" % (tmp_path / "home"), "steps=%d" % steps,
                        args=("-i", str(tmp_path / "hosts.yml")))


def test_bad_steps_and_a_host_without_a_task_are_named_at_once_and_nothing_is_written(tmp_path):
    result = deploy(tmp_path, 0)
    assert result.returncode != 0
    assert "training: bad settings: strategy=parameter_server, steps=0, hosts without a TF task=['stray']" in result.stdout
    assert not (tmp_path / "home").exists()
