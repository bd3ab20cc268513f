"""The training_files action renders each task's script from a template on the controller, with the play's
variables and the task's own (type, index, folder, where the dataset lands); a template it cannot find is named and
nothing is written."""

import json

from ansible_cli import run_playbook, tail

PLAYBOOK = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    greeting: hello
  tasks:
    - tfdist.cluster.training_files:
        work_dir: "{{ work_dir }}"
        cluster_name: rendered
        tasks: [{name: worker-0, type: worker, index: 0}, {name: ps-0, type: ps, index: 0}]
        script_template: "{{ template }}"
        script_template_vars: {training_data_path: /data/digits.npz}
        data_src: "{{ data_src | default(omit) }}"
        cluster_spec: {worker: ["127.0.0.1:2222"], ps: ["127.0.0.1:2223"]}
      register: laid
    - ansible.builtin.copy:
        content: "{{ laid | to_json }}"
        dest: "{{ work_dir }}.result.json"
        mode: "0644"
"""

TEMPLATE = """# {{ greeting }} from {{ training_task.type }} {{ training_task.index }}
TASK_DIR = {{ training_task_dir | tojson }}
DATA = {{ training_data_path | tojson }}
"""


def lay(tmp_path, template, *extra_vars):
    playbook = tmp_path / "lay.yml"
    playbook.write_text(PLAYBOOK)
    work_dir = tmp_path / "job"
    result = run_playbook(str(playbook), "work_dir=%s" % work_dir, "template=%s" % template, *extra_vars,
                          args=("-i", "localhost,"))
    laid = json.loads((tmp_path / "job.result.json").read_text()) if result.returncode == 0 else None
    return result, laid


def test_each_task_gets_its_own_rendering_once(tmp_path):
    template = tmp_path / "train.py.j2"
    template.write_text(TEMPLATE)
    result, first = lay(tmp_path, template)
    assert result.returncode == 0, tail(result)
    job = tmp_path / "job"
    assert (job / "tasks" / "worker-0" / "train.py").read_text() == (
        f'# hello from worker 0\nTASK_DIR = "{job}/tasks/worker-0"\nDATA = "/data/digits.npz"\n')
    assert (job / "tasks" / "ps-0" / "train.py").read_text().startswith("# hello from ps 0\n")
    assert first["changed"] and first["new_tasks"] == ["worker-0", "ps-0"]

    result, again = lay(tmp_path, template)
    assert result.returncode == 0 and not again["changed"], tail(result)


def test_a_missing_template_is_named_and_nothing_is_written(tmp_path):
    result, laid = lay(tmp_path, tmp_path / "nowhere.py.j2")
    assert result.returncode != 0 and laid is None
    assert "script_template:" in result.stdout and "nowhere.py.j2" in result.stdout, tail(result)
    assert not (tmp_path / "job").exists()


def test_the_template_sees_where_a_dataset_of_the_controller_lands(tmp_path):
    template = tmp_path / "train.py.j2"
    template.write_text(TEMPLATE)
    (tmp_path / "digits.npz").write_bytes(b"not really numpy")
    result, _laid = lay(tmp_path, template, "data_src=%s" % (tmp_path / "digits.npz"))
    assert result.returncode == 0, tail(result)
    job = tmp_path / "job"
    assert (job / "tasks" / "ps-0" / "train.py").read_text().endswith(f'DATA = "{job}/data/digits.npz"\n')
    assert (job / "data" / "digits.npz").read_bytes() == b"not really numpy"
