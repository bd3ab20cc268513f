"""The cuda role checks the versions asked for once for the play's hosts, before it looks at any GPU: the message
names each bad version with the host it was set for, a version set in the inventory included."""

from ansible_cli import run_playbook

INVENTORY = """
all:
  vars: {ansible_connection: local}
  hosts:
    gpu0: {}
    gpu1: {cuda_toolkit_version: "12.5", cuda_driver_version: "575.1"}
"""

PLAYBOOK = """
- hosts: all
  gather_facts: false
  roles:
    - role: tfdist.cluster.cuda
"""


def test_a_bad_version_of_one_host_is_named_with_its_host_and_nothing_else_runs(tmp_path):
    (tmp_path / "hosts.yml").write_text(INVENTORY)
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    result = run_playbook(str(tmp_path / "play.yml"), args=("-i", str(tmp_path / "hosts.yml")))
    assert result.returncode != 0
    assert ("cuda_toolkit_version=12.5, cuda_driver_branch=570, cuda_driver_version=575.1 on gpu1"
            in result.stdout), result.stdout
    assert "on gpu0" not in result.stdout
    assert "Look for NVIDIA GPUs" not in result.stdout
