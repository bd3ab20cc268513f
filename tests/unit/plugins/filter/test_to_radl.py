"""tfdist.cluster.to_radl filter: RADL text that reads back, through the lookup, to the same cluster."""

import os

import pytest
from ansible.errors import AnsibleFilterError
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import lookup_loader
from ansible.template import Templar, trust_as_template
from radl import radl_parse

from ansible_collections.tfdist.cluster.plugins.filter.radl import to_radl

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
SHAPE_KEYS = ("workers", "ps", "evaluators", "nodes", "cloud", "region", "endpoint", "ports")


def read_back(path):
    [shape] = lookup_loader.get("tfdist.cluster.radl", loader=DataLoader()).run([str(path)], variables={})
    return {key: shape[key] for key in SHAPE_KEYS}


@pytest.mark.parametrize("name", ["ps1-workers2.radl", "aws-gpu-workers.radl", "docker-small.radl"])
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
        "workers": 3, "ps": 0, "evaluators": 1,
        "nodes": {"chief": {"size": None, "image": None, "gpus": 0},
                  "worker": {"size": None, "image": None, "gpus": 2},
                  "evaluator": {"size": "small", "image": None, "gpus": 0}},
        "cloud": None, "region": None, "endpoint": None,
        "ports": [22],  # SSH by default, Ansible's way in
    }


def test_errors_name_the_field():
    with pytest.raises(AnsibleFilterError, match=r"^to_radl: nodes.worker.image 'ami-0abc': set cloud"):
        to_radl({"workers": 1, "nodes": {"worker": {"image": "ami-0abc"}}})
