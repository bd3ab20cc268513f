"""The tensorflow role records each host's TensorFlow in one task for the play's hosts: every host gets the facts of
its own last read of the virtualenv (the read after an install, where it had one), with its own virtualenv's Python,
and a host whose virtualenv still lacks something gets none (the install's turn)."""

import json

from ansible_cli import run_playbook

HELD = {"rc": 0, "stdout_lines": ['{"version": "2.21.0", "unmet": []}']}
UNMET = {"rc": 0, "stdout_lines": ['{"version": "2.20.0", "unmet": ["tensorflow-cpu==2.21.0"]}']}
NO_VENV = {"rc": 1, "stdout_lines": []}
INSTALLED = {"rc": 0, "stdout_lines": ["pip says this", '{"version": "2.21.0", "unmet": []}']}

INVENTORY = {"all": {"vars": {"ansible_connection": "local"}, "hosts": {
    # The first host of the play lacks something: the record must not go by the first host alone.
    "unmet": {"read": UNMET},
    "held": {"read": HELD, "tensorflow_venv": "/srv/own/venv"},
    "none": {"read": NO_VENV},
}}}

PLAYBOOK = """
- hosts: all
  gather_facts: false
  tasks:
    - name: The first read of each host's virtualenv
      ansible.builtin.set_fact:
        __tensorflow_held: "{{{{ read }}}}"
    - name: The record after the first read
      ansible.builtin.include_role:
        name: tfdist.cluster.tensorflow
        tasks_from: record
    - name: What each host holds then
      ansible.builtin.set_fact:
        first: "{{{{ {{'bin': tensorflow_python_bin | default(None), 'version': tensorflow_installed_version | default(None)}} }}}}"
    - name: The read after an install, on the hosts that lacked something
      ansible.builtin.set_fact:
        __tensorflow_installed: {installed}
      when: inventory_hostname != 'held'
    - name: The record after the install
      ansible.builtin.include_role:
        name: tfdist.cluster.tensorflow
        tasks_from: record
    - name: Write what each host holds, after each record
      ansible.builtin.copy:
        content: >-
          {{%- set held = {{}} -%}}
          {{%- for host in ansible_play_hosts -%}}
          {{%-   set _ = held.update({{host: {{'first': hostvars[host].first,
                                          'after': hostvars[host].tensorflow_installed_version | default(None)}}}}) -%}}
          {{%- endfor -%}}
          {{{{ held | to_json }}}}
        dest: "{out}"
        mode: "0600"
      delegate_to: localhost
      run_once: true
"""


def test_each_host_is_recorded_from_its_own_read_in_one_task(tmp_path):
    out = tmp_path / "record.json"
    (tmp_path / "hosts.yml").write_text(json.dumps(INVENTORY))
    (tmp_path / "play.yml").write_text(PLAYBOOK.format(installed=json.dumps(INSTALLED), out=out))
    result = run_playbook(str(tmp_path / "play.yml"), args=("-i", str(tmp_path / "hosts.yml")))
    assert result.returncode == 0, result.stdout[-4000:]
    held = json.loads(out.read_text())
    # After the first read: only the host whose virtualenv holds everything, with its own virtualenv's Python.
    assert held["held"]["first"] == {"bin": "/srv/own/venv/bin/python", "version": "2.21.0"}
    assert held["unmet"]["first"] == held["none"]["first"] == {"bin": None, "version": None}
    # After the install: every host, each from its own last read.
    assert {host: facts["after"] for host, facts in held.items()} == {"unmet": "2.21.0", "held": "2.21.0", "none": "2.21.0"}
    # One task for the play's hosts each time, not one per host.
    assert result.stdout.count("TASK [tfdist.cluster.tensorflow : Record the installed TensorFlow]") == 2
