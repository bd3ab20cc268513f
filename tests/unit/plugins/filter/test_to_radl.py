"""tfdist.cluster.to_radl filter: RADL text that reads back, through the lookup, to the same cluster."""

import json
import os

import pytest
from ansible.errors import AnsibleFilterError
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import lookup_loader
from ansible.template import Templar, trust_as_template
from radl import radl_parse

from ansible_collections.tfdist.cluster.plugins.filter.radl import own_version, to_radl

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
SHAPE_KEYS = ("chief", "workers", "ps", "evaluators", "nodes", "cloud", "region", "endpoint", "ports")


def read_back(path):
    [shape] = lookup_loader.get("tfdist.cluster.radl", loader=DataLoader()).run([str(path)], variables={})
    return {key: shape[key] for key in SHAPE_KEYS}


@pytest.mark.parametrize("name", ["ps1-workers2.radl", "aws-gpu-workers.radl", "docker-small.radl", "classic.radl"])
def test_lookup_then_filter_then_lookup_is_the_same_cluster(name, tmp_path):
    source = os.path.join(REPO, "radl", name)
    templar = Templar(loader=DataLoader(), variables={"path": source})
    text = templar.template(trust_as_template("{{ lookup('tfdist.cluster.radl', path) | tfdist.cluster.to_radl }}"))
    (tmp_path / name).write_text(text)
    assert read_back(tmp_path / name) == read_back(source)
    assert "# Based on %s." % source in text


def test_a_cluster_from_scratch_with_nodes_missing_size_and_image(tmp_path):
    text = to_radl({"workers": 3, "evaluators": 1, "nodes": {"worker": {"gpus": 2}, "evaluator": {"size": "small"}}})
    radl_parse.parse_radl(text).check()
    (tmp_path / "new.radl").write_text(text)
    assert read_back(tmp_path / "new.radl") == {
        "chief": 1, "workers": 3, "ps": 0, "evaluators": 1,
        "nodes": {"chief": {"size": None, "image": None, "gpus": 0},
                  "worker": {"size": None, "image": None, "gpus": 2},
                  "evaluator": {"size": "small", "image": None, "gpus": 0}},
        "cloud": None, "region": None, "endpoint": None,
        "ports": [22],  # SSH by default, Ansible's way in
    }


def test_sizes_chosen_from_constraints_are_written_back_as_the_constraints(tmp_path):
    """What the provision role writes: nodes from tf_node_specs, whose constraints choose the size on any cloud."""
    nodes = {"chief": {"size": "m5.large"},
             "worker": {"constraints": {"cpus": 4, "memory": "16g", "gpus": 1, "source": "x.radl: system 'worker'"}}}
    text = to_radl({"chief": 1, "workers": 2, "nodes": nodes})
    radl_parse.parse_radl(text).check()
    assert "cpu.count >= 4 and\n    memory.size >= 16g and\n    gpu.count >= 1" in text
    (tmp_path / "back.radl").write_text(text)
    assert read_back(tmp_path / "back.radl")["nodes"]["worker"] == {
        "size": None, "image": None, "gpus": 1, "cpus": 4, "memory": "16g"}


def test_errors_name_the_field():
    with pytest.raises(AnsibleFilterError, match=r"^to_radl: nodes.worker.image 'ami-0abc': set cloud"):
        to_radl({"workers": 1, "nodes": {"worker": {"image": "ami-0abc"}}})


def galaxy_version():
    with open(os.path.join(REPO, "galaxy.yml")) as handle:
        return next(line.split(":", 1)[1].strip() for line in handle if line.startswith("version:"))


def test_the_im_installs_this_collection_at_its_own_version_by_default():
    templar = Templar(loader=DataLoader(), variables={})
    text = templar.template(trust_as_template("{{ {'chief': 0, 'workers': 2, 'ps': 1} | tfdist.cluster.to_radl }}"))
    app = radl_parse.parse_radl(text).get_system_by_name("worker").getApplications()[0]
    assert (app.getValue("name"), app.getValue("version")) == ("ansible.collections.tfdist.cluster", galaxy_version())
    text = to_radl({"workers": 1}, collection_version="2.0.1")
    assert "version = '2.0.1'" in text


def test_an_installed_collection_takes_its_version_from_manifest_json(tmp_path):
    (tmp_path / "MANIFEST.json").write_text(json.dumps({"collection_info": {"version": "3.1.4"}}))
    assert own_version(str(tmp_path)) == "3.1.4"
    assert own_version(str(tmp_path / "nowhere")) is None


def test_a_version_the_im_cannot_read_names_the_option():
    with pytest.raises(AnsibleFilterError, match=r"^to_radl: collection_version '1.0.0-rc1'"):
        to_radl({"workers": 1}, collection_version="1.0.0-rc1")
