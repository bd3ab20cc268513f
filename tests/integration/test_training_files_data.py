"""The training_files action sends the controller's dataset with the task files: a small one inside the call, a
large one as ansible.builtin.copy does; either way it lands byte for byte, once, and a re-run changes nothing."""

import json
import os

import pytest

from ansible_cli import run_playbook, tail
from ansible_collections.tfdist.cluster.plugins.action.training_files import INLINE_LIMIT

PLAYBOOK = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - tfdist.cluster.training_files:
        work_dir: "{{ work_dir }}"
        cluster_name: data
        tasks: [{name: worker-0, type: worker, index: 0}]
        script: "x = 1"
        cluster_spec: {worker: ["127.0.0.1:2222"]}
        data_src: "{{ data_src }}"
      register: laid
    - ansible.builtin.copy:
        content: "{{ laid | to_json }}"
        dest: "{{ work_dir }}.result.json"
        mode: "0644"
"""


def lay(tmp_path, data_src):
    playbook = tmp_path / "lay.yml"
    playbook.write_text(PLAYBOOK)
    work_dir = tmp_path / "job"
    result = run_playbook(str(playbook), "work_dir=%s" % work_dir, "data_src=%s" % data_src,
                          args=("-i", "localhost,"))
    laid = json.loads((tmp_path / "job.result.json").read_text()) if result.returncode == 0 else None
    return result, laid


@pytest.mark.parametrize("size", [70 * 1024, INLINE_LIMIT + 1024], ids=["inside-the-call", "copied"])
def test_the_dataset_lands_once_byte_for_byte(tmp_path, size):
    data = tmp_path / "digits.npz"
    data.write_bytes(os.urandom(size))
    result, first = lay(tmp_path, data)
    assert result.returncode == 0, tail(result)
    assert first["changed"] and (tmp_path / "job" / "data" / "digits.npz").read_bytes() == data.read_bytes()
    assert (tmp_path / "job" / "tasks" / "worker-0" / "train.py").read_text() == "x = 1"

    result, again = lay(tmp_path, data)
    assert result.returncode == 0, tail(result)
    assert not again["changed"], again

    data.write_bytes(os.urandom(size))  # a new dataset of the same name replaces the old one
    result, newer = lay(tmp_path, data)
    assert result.returncode == 0 and newer["changed"], tail(result)
    assert (tmp_path / "job" / "data" / "digits.npz").read_bytes() == data.read_bytes()


def test_a_missing_dataset_is_named_and_nothing_is_laid_down(tmp_path):
    result = lay(tmp_path, tmp_path / "missing.npz")[0]
    assert result.returncode != 0
    assert "data_src: %s does not exist on the controller" % (tmp_path / "missing.npz") in result.stdout, tail(result)
    assert not (tmp_path / "job").exists()
