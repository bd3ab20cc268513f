"""What a person reads: the repository's stdout callback (tfdist.cluster.concise) on a real playbook run."""

import sys
import textwrap

from ansible_cli import run_playbook, tail

PLAYBOOK = textwrap.dedent("""\
    - name: A play like the deploy's checks
      hosts: localhost
      connection: local
      gather_facts: false
      tasks:
        - name: Three checks that pass
          ansible.builtin.assert:
            that: item > 0
            quiet: true
          loop: [1, 2, 3]
        - name: A step for another cloud
          ansible.builtin.debug:
            msg: not here
          when: false
        - name: One item changes something
          ansible.builtin.command: "echo {{ item }}"
          changed_when: item == 2
          loop: [1, 2]
    """)


def test_skipped_tasks_and_unchanged_items_are_one_line_or_none(tmp_path):
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    result = run_playbook(str(tmp_path / "play.yml"))
    assert result.returncode == 0, tail(result)
    assert "ok: [localhost] (3 items)" in result.stdout
    assert "(item=1)" not in result.stdout and "changed: [localhost] => (item=2)" in result.stdout
    assert "A step for another cloud" not in result.stdout and "skipping" not in result.stdout
    assert "skipped=1" in result.stdout  # the recap still counts it


def test_verbose_brings_the_detail_back(tmp_path):
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    result = run_playbook(str(tmp_path / "play.yml"), args=("-v",))
    assert result.returncode == 0, tail(result)
    assert result.stdout.count("(item=") == 5
    assert "TASK [A step for another cloud]" in result.stdout and "skipping: [localhost]" in result.stdout


FAN_OUT = textwrap.dedent("""\
    - name: A task on every node of a cluster
      hosts: nodes
      connection: local
      gather_facts: false
      tasks:
        - name: Read something
          ansible.builtin.command: "true"
          changed_when: inventory_hostname == 'node-3'
        - name: Say something
          ansible.builtin.debug:
            msg: "hello from {{ inventory_hostname }}"
          when: inventory_hostname == 'node-1'
    """)


def test_hosts_that_changed_nothing_share_one_line(tmp_path):
    (tmp_path / "play.yml").write_text(FAN_OUT)
    # YAML: the repository's ansible.cfg enables no ini inventory.
    (tmp_path / "hosts.yml").write_text("nodes:\n  hosts:\n" + "".join(f"    node-{i}:\n" for i in range(12)))
    python = f"ansible_python_interpreter={sys.executable}"
    result = run_playbook(str(tmp_path / "play.yml"), python, args=("-i", str(tmp_path / "hosts.yml")))
    assert result.returncode == 0, tail(result)
    assert "changed: [node-3]\nok: 11 hosts [node-0, node-1, ..., node-11]\n" in result.stdout
    assert "ok: [node-0]" not in result.stdout
    # A message is still shown with its host.
    assert "ok: [node-1] =>" in result.stdout and "hello from node-1" in result.stdout
    verbose = run_playbook(str(tmp_path / "play.yml"), python, args=("-i", str(tmp_path / "hosts.yml"), "-v"))
    assert verbose.returncode == 0, tail(verbose)
    assert "ok: [node-0]" in verbose.stdout and "11 hosts" not in verbose.stdout
