"""cloud=docker prepares nothing on the controller unless asked: a missing engine stops the play naming the command.

The provision role's prepare_docker tasks run against an engine that is not there (DOCKER_HOST pointing nowhere), as
a deploy without `-e docker_prepare=true` does before it creates a node.
"""

from ansible_cli import run_playbook, tail

PLAYBOOK = """\
- name: Prepare the docker cloud as the provision role does
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Check the engine and the node image
      ansible.builtin.include_role:
        name: tfdist.cluster.provision
        tasks_from: prepare_docker
"""


def test_a_missing_engine_is_an_error_naming_the_commands_that_prepare_it(tmp_path):
    playbook = tmp_path / "prepare.yml"
    playbook.write_text(PLAYBOOK)
    nowhere = "unix://%s" % (tmp_path / "no-engine.sock")
    result = run_playbook(str(playbook), "docker_node_image=tfdist/node-tf:2.21.0",
                          env={"DOCKER_HOST": nowhere, "ANSIBLE_NOCOLOR": "1"}, timeout=120)
    out = " ".join(result.stdout.split())
    assert result.returncode == 2, tail(result)
    assert "The Docker engine must answer and have the node image tfdist/node-tf:2.21.0 (" in out, tail(result)
    assert "run `make images` from a checkout, or deploy once with -e docker_prepare=true" in out, tail(result)
    # Nothing was installed or started: nothing changed, and the engine is still not there.
    assert " changed=0 " in out and not (tmp_path / "no-engine.sock").exists(), tail(result)
