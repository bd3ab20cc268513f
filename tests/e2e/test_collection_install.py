"""The built collection as a Galaxy user gets it: installed from its tarball, run by FQCN from a project folder with
none of our configuration, no -i and no TFDIST_HOME. Its state lives in ~/.tfdist, its results in the project folder,
and nothing of a cluster is ever written inside the installed collection, which an upgrade replaces."""

import glob
import json
import os
import tarfile
import uuid

import pytest
from ansible_cli import REPO, run, run_playbook, tail
from processes import free_port_block, tf_processes


@pytest.fixture(scope="module")
def galaxy(tmp_path_factory):
    """The tarball, installed into a collections path; the user's home and project folder."""
    root = tmp_path_factory.mktemp("galaxy")
    # A user's own machine: none of our ansible.cfg or ANSIBLE_* settings (config=None).
    built = run("ansible-galaxy", "collection", "build", "--output-path", root, REPO, config=None, cwd=root)
    assert built.returncode == 0, tail(built)
    tarball = glob.glob(str(root / "tfdist-cluster-*.tar.gz"))[0]
    with tarfile.open(tarball) as archive:
        names = archive.getnames()
    assert "roles/training/templates/train.py.j2" in names
    assert not [n for n in names if n.startswith((".venv", ".collections", "artifacts", ".cache"))]
    collections = root / "collections"
    user_home, project = root / "home", root / "project"
    user_home.mkdir()
    project.mkdir()
    env = {"ANSIBLE_COLLECTIONS_PATH": str(collections), "HOME": str(user_home), "ANSIBLE_HOST_KEY_CHECKING": "False"}

    def install():
        # --force: an upgrade (or a reinstall) replaces the collection's folder, and everything in it.
        installed = run("ansible-galaxy", "collection", "install", "--force", tarball, "-p", collections, env=env,
                        config=None, cwd=root)
        assert installed.returncode == 0, tail(installed)

    install()
    return {"install": install, "env": env, "home": user_home, "project": project,
            "collection": collections / "ansible_collections" / "tfdist" / "cluster"}


def user_run(galaxy, playbook, *extra_vars, env=None):
    """The user's command, in their project folder."""
    return run_playbook(playbook, *extra_vars, env=dict(galaxy["env"], **(env or {})), config=None,
                        cwd=galaxy["project"])


def state_in(folder):
    """What of a cluster's state (keys, inventory sources, caches) and results a folder holds."""
    return sorted(os.path.relpath(path, folder)
                  for pattern in (".cache/**", "inventories/clusters/*.yml", "artifacts/**", "images/*.yml")
                  for path in glob.glob(str(folder / pattern), recursive=True) if os.path.isfile(path))


def test_a_galaxy_users_cluster_survives_an_upgrade_and_is_destroyed(galaxy):
    name = f"g{uuid.uuid4().hex[:8]}"
    deploy = user_run(galaxy, "tfdist.cluster.deploy", f"cluster_name={name}", "tf_train_steps=100",
                      f"tf_port_base={free_port_block(4)}")
    state = galaxy["home"] / ".tfdist"
    try:
        assert deploy.returncode == 0, tail(deploy)
        # Results in the folder the command ran in; state in ~/.tfdist; nothing in the collection.
        artifacts = galaxy["project"] / "artifacts" / name
        with open(artifacts / "summary.json") as handle:
            assert json.load(handle)["steps"] == 100
        assert (artifacts / "model" / "model.keras").stat().st_size > 0
        assert (state / "inventories" / "clusters" / f"{name}.local.yml").is_file()
        assert state_in(galaxy["collection"]) == []

        galaxy["install"]()  # the upgrade
    finally:
        destroy = user_run(galaxy, "tfdist.cluster.destroy", f"cluster_name={name}")
    assert destroy.returncode == 0, tail(destroy)
    assert f"{name}-local" in destroy.stdout  # it found the cluster's host through its inventory source
    assert not (state / "inventories" / "clusters" / f"{name}.local.yml").exists()
    assert tf_processes(str(state / ".cache" / "run" / name)) == []
    assert state_in(galaxy["collection"]) == []


def test_a_cluster_an_earlier_tfdist_kept_in_the_collection_is_moved_then_destroyed(galaxy, tmp_path):
    # tfdist before 0.5.0 kept its state in the playbooks' parent folder: the installed collection. Its user upgrades
    # and runs the new one for the first time (a home of their own, with no ~/.tfdist yet).
    name = f"o{uuid.uuid4().hex[:8]}"
    old, user = galaxy["collection"], {"HOME": str(tmp_path)}
    deploy = user_run(galaxy, "tfdist.cluster.deploy", f"cluster_name={name}", "tf_train_steps=50",
                      f"tf_port_base={free_port_block(4)}", env=dict(user, TFDIST_HOME=str(old)))
    try:
        assert deploy.returncode == 0, tail(deploy)
        assert (old / "inventories" / "clusters" / f"{name}.local.yml").is_file()

        destroy = user_run(galaxy, "tfdist.cluster.destroy", f"cluster_name={name}", env=user)
        assert destroy.returncode == 0, tail(destroy)
        assert f"moved the state of clusters {name}" in " ".join((destroy.stdout + destroy.stderr).split())
        assert not (tmp_path / ".tfdist" / "inventories" / "clusters" / f"{name}.local.yml").exists()
        # Its TF tasks ran, and their job folder stays, where it was: destroy found and removed it there (with the
        # holder of its network namespace, which ends with the folder).
        assert not (old / ".cache" / "run" / name).exists()
        assert tf_processes(str(old / ".cache" / "run" / name)) == []
        assert [path for path in state_in(old) if name in path] == []
    finally:
        if (old / "inventories" / "clusters" / f"{name}.local.yml").exists():
            user_run(galaxy, "tfdist.cluster.destroy", f"cluster_name={name}", env=dict(user, TFDIST_HOME=str(old)))
