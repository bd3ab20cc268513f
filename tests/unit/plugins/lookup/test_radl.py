"""tfdist.cluster.radl lookup: one cluster shape per RADL file, errors that say where."""

import os
import re

import pytest
from ansible.errors import AnsibleLookupError
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import lookup_loader
from ansible.template import Templar, trust_as_template

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
CLASSIC = os.path.join(REPO, "radl", "ps1-workers2.radl")


@pytest.fixture
def lookup():
    return lookup_loader.get("tfdist.cluster.radl", loader=DataLoader())


def template(expression, **variables):
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template("{{ %s }}" % expression))


def test_one_shape_per_file(lookup):
    shapes = lookup.run([CLASSIC, os.path.join(REPO, "radl", "docker-small.radl")], variables={})
    assert [(s["source"], s["workers"], s["ps"], s["cloud"]) for s in shapes] == [
        (CLASSIC, 2, 1, None), (os.path.join(REPO, "radl", "docker-small.radl"), 2, 1, "docker")]


def test_lookup_gives_the_dict_and_query_a_list():
    shape = template("lookup('tfdist.cluster.radl', path)", path=CLASSIC)
    assert shape["nodes"]["worker"] == {"size": "g4dn.xlarge", "image": None, "gpus": 1}
    assert template("query('tfdist.cluster.radl', path)", path=CLASSIC) == [shape]


def test_a_relative_path_is_read_from_the_current_directory(lookup, monkeypatch):
    monkeypatch.chdir(REPO)
    [shape] = lookup.run(["radl/aws-gpu-workers.radl"], variables={})
    assert shape["source"] == os.path.join(REPO, "radl", "aws-gpu-workers.radl")
    assert (shape["cloud"], shape["region"]) == ("aws", "us-east-1")


def test_a_relative_path_is_first_looked_for_in_the_play_files(lookup, tmp_path, monkeypatch):
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "mine.radl").write_text("system chief ()\nsystem worker ()\ndeploy worker 5\n")
    monkeypatch.chdir(REPO)
    [shape] = lookup.run(["mine.radl"], variables={"ansible_search_path": [str(tmp_path)]})
    assert (shape["source"], shape["workers"]) == (str(tmp_path / "files" / "mine.radl"), 5)


def test_errors_keep_the_file_and_line(lookup, tmp_path):
    path = tmp_path / "bad.radl"
    path.write_text("system chief ()\nsystem worker ()\ndeploy workers 2\n")
    with pytest.raises(AnsibleLookupError) as info:
        lookup.run([str(path)], variables={})
    assert str(info.value) == "%s: line 3: deploy 'workers': no system named 'workers' (systems: chief, worker)" % path


def test_a_missing_file(lookup, tmp_path):
    with pytest.raises(AnsibleLookupError, match="^radl: %s: no such file$" % re.escape(str(tmp_path / "nope.radl"))):
        lookup.run([str(tmp_path / "nope.radl")], variables={})
