"""tfdist.cluster.state_home: the clusters an earlier tfdist kept in the installed collection move to the state home,
their inventory sources pointing at their keys' new place; nothing of the state home is overwritten."""

import os

from ansible_collections.tfdist.cluster.plugins.action.state_home import move_state

OWNER = "1f3a2b4c5d6e7f8091a2b3c4d5e6f708"


def old_state(old):
    """What tfdist 0.4 left in the collection's folder for one live cluster `demo`."""
    (old / ".cache" / "keys").mkdir(parents=True)
    (old / "inventories" / "clusters").mkdir(parents=True)
    (old / ".cache" / "controller-id").write_text(OWNER + "\n")
    (old / ".cache" / "keys" / "demo").write_text("PRIVATE\n")
    (old / ".cache" / "keys" / "demo.pub").write_text("ssh-ed25519 AAAA tfdist-demo\n")
    (old / "inventories" / "clusters" / "demo.libcloud.yml").write_text(
        f"plugin: tfdist.cluster.libcloud\ncompose:\n  ansible_ssh_private_key_file: \"'{old}/.cache/keys/demo'\"\n")
    # A cloud=local cluster's job folder, where its TF tasks run: not state, it stays.
    (old / "inventories" / "clusters" / "local.local.yml").write_text(f"training_home: {old}/.cache/run\n")
    (old / "inventories" / "clusters" / ".demo.regions.yml").write_text("regions: [us-east-1]\n")
    (old / "inventories" / "clusters" / "README.md").write_text("shipped with the collection\n")


def test_an_earlier_tfdists_clusters_move_and_find_their_keys(tmp_path):
    old, home = tmp_path / "collection", tmp_path / "home"
    old_state(old)
    result = move_state(str(home), str(old))
    assert result["changed"] and "demo" in result["warnings"][0]
    assert sorted(result["moved"]) == sorted([
        ".cache/controller-id", ".cache/keys/demo", ".cache/keys/demo.pub", "inventories/clusters/demo.libcloud.yml",
        "inventories/clusters/local.local.yml", "inventories/clusters/.demo.regions.yml"])
    source = (home / "inventories" / "clusters" / "demo.libcloud.yml").read_text()
    assert f"'{home}/.cache/keys/demo'" in source and str(old) not in source
    assert (home / "inventories" / "clusters" / "local.local.yml").read_text() == f"training_home: {old}/.cache/run\n"
    assert (home / ".cache" / "controller-id").read_text() == OWNER + "\n"
    assert (home / ".cache" / "keys" / "demo").read_text() == "PRIVATE\n"
    assert oct(os.stat(home / "inventories" / "clusters" / "demo.libcloud.yml").st_mode & 0o777) == "0o600"
    assert not (old / ".cache" / "keys" / "demo").exists()
    assert (old / "inventories" / "clusters" / "README.md").exists()  # the collection's own file stays
    # The next run finds nothing more to move.
    assert move_state(str(home), str(old)) == {"changed": False, "moved": [], "home": str(home)}


def test_a_home_with_another_controller_id_takes_nothing_and_the_clusters_are_named(tmp_path):
    old, home = tmp_path / "collection", tmp_path / "home"
    old_state(old)
    (home / ".cache").mkdir(parents=True)
    (home / ".cache" / "controller-id").write_text("9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b\n")
    result = move_state(str(home), str(old))
    assert not result["changed"] and result["moved"] == []
    assert "clusters demo" in result["warnings"][0] and f"TFDIST_HOME={old}" in result["warnings"][0]
    assert (old / ".cache" / "keys" / "demo").exists()


def test_check_mode_says_what_would_move_and_moves_nothing(tmp_path):
    old, home = tmp_path / "collection", tmp_path / "home"
    old_state(old)
    assert move_state(str(home), str(old), check_mode=True)["changed"]
    assert (old / ".cache" / "keys" / "demo").exists() and not home.exists()


def test_the_home_itself_is_no_old_place(tmp_path):
    old_state(tmp_path)
    assert move_state(str(tmp_path), str(tmp_path))["changed"] is False
