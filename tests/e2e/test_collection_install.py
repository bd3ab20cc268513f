"""The built collection installs from its tarball and runs by FQCN from a collections path."""

import glob
import json
import os
import subprocess
import tarfile
import uuid

from conftest import BIN, REPO, free_port_block, tf_processes


def run(cmd, cwd, env):
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def test_built_collection_deploys_by_fqcn(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")

    built = run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(tmp_path), REPO],
                cwd=str(tmp_path), env=env)
    assert built.returncode == 0, built.stdout + built.stderr
    tarball = glob.glob(str(tmp_path / "tfdist-cluster-*.tar.gz"))[0]
    with tarfile.open(tarball) as archive:
        names = archive.getnames()
    assert "roles/training/templates/train.py.j2" in names
    assert not [n for n in names if n.startswith((".venv", ".collections", "artifacts", ".cache"))]

    collections = tmp_path / "collections"
    installed = run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "--force", tarball, "-p", str(collections)],
                    cwd=str(tmp_path), env=env)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    # A user's own project folder: no ansible.cfg of ours, the inventory folder named with -i.
    home = tmp_path / "project"
    (home / "inventories" / "clusters").mkdir(parents=True)
    env.update(ANSIBLE_COLLECTIONS_PATH=str(collections), TFDIST_HOME=str(home), ANSIBLE_HOST_KEY_CHECKING="False")
    name = f"f{uuid.uuid4().hex[:8]}"
    common = ["-i", str(home / "inventories" / "clusters"), "-e", f"cluster_name={name}"]
    deploy = run([os.path.join(BIN, "ansible-playbook"), "tfdist.cluster.deploy", *common,
                  "-e", "tf_train_steps=100", "-e", f"tf_port_base={free_port_block(4)}"], cwd=str(home), env=env)
    try:
        assert deploy.returncode == 0, deploy.stdout[-5000:]
        with open(home / "artifacts" / name / "summary.json") as handle:
            assert json.load(handle)["steps"] == 100
        assert (home / "artifacts" / name / "model" / "model.keras").stat().st_size > 0
    finally:
        destroy = run([os.path.join(BIN, "ansible-playbook"), "tfdist.cluster.destroy", *common], cwd=str(home), env=env)
    assert destroy.returncode == 0, destroy.stdout[-3000:]
    assert not (home / "inventories" / "clusters" / f"{name}.local.yml").exists()
    assert tf_processes(str(home / ".cache" / "run" / name)) == []
