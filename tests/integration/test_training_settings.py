"""The training role checks the job's settings once for the play's hosts, before it writes anything: the message
names the bad setting and every host of the play that the layout gives no TF task."""

from ansible_cli import REPO, run_playbook

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


# The address of the one worker counts each pass over the hosts' variables (each renders it once).
LAYOUT_INVENTORY = """
all:
  vars: {ansible_connection: local}
  children:
    worker:
      hosts:
        w0: {tfdist_private_ip: "{{ lookup('ansible.builtin.pipe', 'echo pass >> ' ~ passes) }}10.0.0.1"}
"""

LAYOUT_PLAYBOOK = """
- hosts: all
  gather_facts: false
  vars_files: ["{{ repo }}/roles/training/vars/main.yml"]
  vars: {training_port: 2222, training_cluster_group: '', training_role_groups: {}}
  tasks:
    - name: Note the layout once for the play, as the role's first task does
      ansible.builtin.set_fact:
        __training_layout: "{{ __training_layout_now }}"
      run_once: true
    - name: Count the passes so far
      ansible.builtin.set_fact:
        passes_noted: "{{ lookup('ansible.builtin.file', passes) | split | length }}"
    - name: Use the cluster's tasks, as the role's later tasks do
      ansible.builtin.debug:
        msg: "tasks: {{ __training_all_tasks | map(attribute='name') | join(',') }} at {{ __training_cluster_spec.worker | join(',') }}"
    - name: Count the passes again
      ansible.builtin.debug:
        msg: "passes: {{ passes_noted }} then {{ lookup('ansible.builtin.file', passes) | split | length }}"
"""


def test_the_layout_noted_for_the_play_is_what_later_tasks_use_with_no_pass_over_every_host(tmp_path):
    """The role reads every host's variables for the layout once per play (__training_layout); the tasks after it
    use that, with no new pass over every host (in each task of each host, that is quadratic in the nodes)."""
    (tmp_path / "hosts.yml").write_text(LAYOUT_INVENTORY)
    (tmp_path / "play.yml").write_text(LAYOUT_PLAYBOOK)
    result = run_playbook(str(tmp_path / "play.yml"), "repo=%s" % REPO, "passes=%s" % (tmp_path / "passes"),
                          args=("-i", str(tmp_path / "hosts.yml")))
    assert result.returncode == 0, result.stdout
    assert "tasks: worker-0 at 10.0.0.1:2222" in result.stdout
    assert "passes: 1 then 1" in result.stdout
