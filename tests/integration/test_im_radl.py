"""The RADL that tfdist writes back (the to_radl filter) is one the Infrastructure Manager itself accepts and deploys.

Checked with the IM's own code (im 2.0.0), which lives in its own virtualenv (`make im-venv`, tests/im/): the script
tests/im/im_check.py runs there, reads the RADL with the IM's parser, has InfrastructureManager.EstimateResouces with a
Dummy cloud estimate it, lists the collections the IM would install and turns every configure into the playbook the IM
would run (its header, its recipe merge, its "all" wrapper). Those playbooks then pass `ansible-playbook
--syntax-check` with the collection as Galaxy gets it (built and installed into a collections path of its own), so
every role they name resolves. Contextualization itself cannot run here: the IM's master set-up downloads from outside
the package registries.
"""

import json
import os
import shutil
import subprocess

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_cli import REPO, run, tail
from docker_engine import unavailable

IM_VENV = os.path.join(REPO, ".cache", "im-venv")
IM_BIN = os.path.join(IM_VENV, "bin")
IM_CHECK = os.path.join(REPO, "tests", "im", "im_check.py")
TIMEOUT = 300


@pytest.fixture(autouse=True)
def im_venv():
    """The IM's own virtualenv: a developer without it skips these tests; under CI they fail (make test builds it)."""
    if not os.path.exists(os.path.join(IM_BIN, "python")):
        unavailable("the IM's virtualenv is missing: make im-venv")


SHAPES = {
    # The classic cluster: 1 ps + 2 workers and no chief (worker 0 leads).
    "classic": {"chief": 0, "workers": 2, "ps": 1},
    # A chief, GPU workers, a ps and an evaluator on AWS, with HDFS.
    "chief": {"chief": 1, "workers": 3, "ps": 1, "evaluators": 1, "hdfs": True, "cloud": "aws", "region": "us-east-1",
              "ports": [22, 6006],
              "nodes": {"worker": {"size": "g5.xlarge", "image": "ami-0f9e8d7c6b5a43210", "gpus": 1},
                        "chief": {"size": "m6i.large", "image": "ami-0a1b2c3d4e5f60718"}}},
}


def galaxy_version():
    with open(os.path.join(REPO, "galaxy.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)["version"]


def plain_env(**extra):
    """This machine's environment without any ANSIBLE_* setting of the repository (ansible.cfg, its collections)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def collections(tmp_path_factory):
    """A collections path holding tfdist.cluster as Galaxy would install it: built, then installed from the tarball."""
    tmp = tmp_path_factory.mktemp("im-collection")
    built = run("ansible-galaxy", "collection", "build", "--output-path", tmp, REPO, config=None, cwd=tmp)
    assert built.returncode == 0, tail(built)
    [tarball] = [name for name in os.listdir(tmp) if name.endswith(".tar.gz")]
    path = tmp / "collections"
    installed = run("ansible-galaxy", "collection", "install", "--force", tmp / tarball, "-p", path, config=None,
                    cwd=tmp)
    assert installed.returncode == 0, tail(installed)
    with open(path / "ansible_collections" / "tfdist" / "cluster" / "MANIFEST.json", encoding="utf-8") as handle:
        assert json.load(handle)["collection_info"]["version"] == galaxy_version()
    return path


def write_radl(shape, path):
    """The RADL text of `shape`, written by the to_radl filter as a playbook calls it (its default version)."""
    templar = Templar(loader=DataLoader(), variables={"shape": shape})
    text = templar.template(trust_as_template("{{ shape | tfdist.cluster.to_radl }}"))
    path.write_text(text)
    return text


def im_check(radl, out_dir):
    """What the IM's own code makes of the RADL file (tests/im/im_check.py, in the IM's virtualenv)."""
    done = subprocess.run([os.path.join(IM_BIN, "python"), IM_CHECK, str(radl), str(out_dir)], capture_output=True,
                          text=True, timeout=TIMEOUT, env=plain_env(), check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout)


def syntax_check(playbooks, inventory, collections, cwd):
    """ansible-playbook --syntax-check, the IM's ansible, on the playbooks the IM builds, with only the built collection."""
    env = plain_env(ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_HOME=str(cwd / ".ansible"),
                    ANSIBLE_ROLES_PATH=str(cwd / "no-roles"))
    return subprocess.run([os.path.join(IM_BIN, "ansible-playbook"), "--syntax-check", "-i", str(inventory),
                           "-e", "IM_HOST=all"] + [str(p) for p in playbooks],
                          capture_output=True, text=True, timeout=TIMEOUT, env=env, cwd=str(cwd), check=False)


def im_inventory(result, path):
    """An inventory as the IM names it: one group per RADL system, all of them in allnowindows."""
    lines = []
    for system, count in result["deploys"].items():
        lines += ["[%s]" % system] + ["%s-%d ansible_host=127.0.0.1" % (system, i) for i in range(count)] + [""]
    lines += ["[allnowindows:children]"] + list(result["deploys"]) + [""]
    path.write_text("\n".join(lines))
    return path


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_im_deploys_the_written_radl_and_its_configures_are_plays_of_the_built_collection(
        name, collections, tmp_path):
    shape = SHAPES[name]
    radl = tmp_path / "cluster.radl"
    write_radl(shape, radl)
    result = im_check(radl, tmp_path / "ctxt")

    # The IM's estimate (its dry run) has exactly the VMs of the cluster, the leader's on the public network.
    chief = shape["chief"]
    vms = chief + shape["workers"] + shape.get("ps", 0) + shape.get("evaluators", 0)
    assert result["estimated_vms"] == vms, result["estimate"]
    assert result["public_vms"] == (1 if chief else shape["workers"])
    gpus = {role: (shape.get("nodes", {}).get(role) or {}).get("gpus", 0) for role in ("chief", "worker")}
    assert result["gpu_vms"] == (shape["workers"] if gpus["worker"] else 0) + (chief if gpus["chief"] else 0)
    assert ("chief" in result["systems"]) == bool(chief)

    # The IM installs this collection at this version with ansible-galaxy on its master.
    assert result["ansible_collections"] == ["tfdist.cluster,%s" % galaxy_version()]
    assert result["warnings"] == []

    # Steps in order: tensorflow everywhere, hdfs on the leader and workers when asked, training everywhere.
    systems = result["systems"]
    hdfs_on = [s for s in systems if s in ("chief", "worker")] if shape.get("hdfs") else []
    assert result["steps"] == ([[s, "tensorflow", 1] for s in systems] + [[s, "hdfs", 2] for s in hdfs_on]
                               + [[s, "training", 3] for s in systems])

    # Every configure became plays (a mapping would have been dropped): the IM's hosts, the tfdist role by FQCN.
    assert len(result["playbooks"]) == len(result["steps"])
    for book in result["playbooks"]:
        plays = book["plays"]
        assert plays and all(play["hosts"] == "{{IM_HOST}}" for play in plays), book
        assert [r["role"] for play in plays for r in play["roles"]] == ["tfdist.cluster." + book["configure"]], book

    inventory = im_inventory(result, tmp_path / "hosts")
    checked = syntax_check([b["all"] for b in result["playbooks"]], inventory, collections, tmp_path)
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]


def test_the_syntax_check_fails_on_a_role_the_built_collection_lacks(collections, tmp_path):
    # What makes the check above worth something: a role name that does not resolve is an error.
    radl = tmp_path / "cluster.radl"
    write_radl(SHAPES["classic"], radl)
    result = im_check(radl, tmp_path / "ctxt")
    book = next(b for b in result["playbooks"] if b["configure"] == "training")
    with open(book["playbook"], encoding="utf-8") as handle:
        text = handle.read()
    with open(book["playbook"], "w", encoding="utf-8") as handle:
        handle.write(text.replace("tfdist.cluster.training", "tfdist.cluster.no_such_role"))
    checked = syntax_check([book["all"]], im_inventory(result, tmp_path / "hosts"), collections, tmp_path)
    assert checked.returncode != 0
    assert "no_such_role" in checked.stdout + checked.stderr
    shutil.rmtree(tmp_path / "ctxt")
