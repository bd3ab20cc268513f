"""The built collection installs from its tarball and runs by FQCN from a collections path."""

import glob
import json
import tarfile
import uuid

from ansible_cli import REPO, run, run_playbook, tail
from processes import free_port_block, tf_processes


def test_built_collection_deploys_by_fqcn(tmp_path):
    # A user's own machine: none of our ansible.cfg or ANSIBLE_* settings (config=None).
    built = run("ansible-galaxy", "collection", "build", "--output-path", tmp_path, REPO, config=None, cwd=tmp_path)
    assert built.returncode == 0, tail(built)
    tarball = glob.glob(str(tmp_path / "tfdist-cluster-*.tar.gz"))[0]
    with tarfile.open(tarball) as archive:
        names = archive.getnames()
    assert "roles/training/templates/train.py.j2" in names
    assert "plugins/callback/concise.py" in names
    assert not [n for n in names if n.startswith((".venv", ".collections", "artifacts", ".cache"))]

    collections = tmp_path / "collections"
    installed = run("ansible-galaxy", "collection", "install", "--force", tarball, "-p", collections, config=None,
                    cwd=tmp_path)
    assert installed.returncode == 0, tail(installed)

    # A user's own project folder: no ansible.cfg of ours, the inventory folder named with -i.
    home = tmp_path / "project"
    (home / "inventories" / "clusters").mkdir(parents=True)
    env = {"ANSIBLE_COLLECTIONS_PATH": str(collections), "TFDIST_HOME": str(home), "ANSIBLE_HOST_KEY_CHECKING": "False"}
    name = f"f{uuid.uuid4().hex[:8]}"
    user_run = dict(args=["-i", home / "inventories" / "clusters"], env=env, config=None, cwd=home)
    deploy = run_playbook("tfdist.cluster.deploy", f"cluster_name={name}", "tf_train_steps=100",
                          f"tf_port_base={free_port_block(4)}", **user_run)
    try:
        assert deploy.returncode == 0, tail(deploy)
        with open(home / "artifacts" / name / "summary.json") as handle:
            assert json.load(handle)["steps"] == 100
        assert (home / "artifacts" / name / "model" / "model.keras").stat().st_size > 0
    finally:
        destroy = run_playbook("tfdist.cluster.destroy", f"cluster_name={name}", **user_run)
    assert destroy.returncode == 0, tail(destroy)
    assert not (home / "inventories" / "clusters" / f"{name}.local.yml").exists()
    assert tf_processes(str(home / ".cache" / "run" / name)) == []
