"""Checkpoint names in a CheckpointManager state file, and the copy of the checkpoints at a file:// URL."""

import os

import pytest

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist.train import checkpoints

STATE = '''model_checkpoint_path: "ckpt-300"
all_model_checkpoint_paths: "ckpt-200"
all_model_checkpoint_paths: "ckpt-250"
all_model_checkpoint_paths: "/abs/path/ckpt-300"
all_model_checkpoint_timestamps: 1700000000.0
last_preserved_timestamp: 1699999999.0
'''


def test_checkpoint_names_are_the_prefixes_listed_in_the_state_file():
    assert checkpoints.checkpoint_names(STATE) == ["ckpt-200", "ckpt-250", "ckpt-300"]
    assert checkpoints.checkpoint_names("") == []


def write_checkpoint(folder, steps):
    folder.mkdir(exist_ok=True)
    for step in steps:
        (folder / ("ckpt-%d.index" % step)).write_text("index %d" % step)
        (folder / ("ckpt-%d.data-00000-of-00001" % step)).write_text("data %d" % step)
    names = ['all_model_checkpoint_paths: "ckpt-%d"' % s for s in steps]
    (folder / "checkpoint").write_text('model_checkpoint_path: "ckpt-%d"\n%s\n' % (steps[-1], "\n".join(names)))


def test_the_mirror_copies_rotates_and_brings_checkpoints_back(tmp_path):
    local, remote = tmp_path / "checkpoints", tmp_path / "store"
    url = "file://%s" % remote
    write_checkpoint(local, [50, 100])
    remote.mkdir()

    mirror = checkpoints.CheckpointMirror(url, str(local))
    mirror.sync()
    assert sorted(os.listdir(remote)) == sorted(os.listdir(local))

    for name in os.listdir(local):
        os.remove(local / name)
    write_checkpoint(local, [100, 150])  # ckpt-50 rotated out
    mirror.sync()
    assert sorted(os.listdir(remote)) == sorted(os.listdir(local))

    fresh = tmp_path / "new-cluster"
    checkpoints.CheckpointMirror(url, str(fresh)).fetch()
    assert sorted(os.listdir(fresh)) == sorted(os.listdir(local))
    assert (fresh / "checkpoint").read_text() == (local / "checkpoint").read_text()


def test_a_url_the_policy_refuses_names_the_flag():
    with pytest.raises(SystemExit, match="^--checkpoint_url: 'ftp://x/y': unsupported URL scheme"):
        checkpoints.CheckpointMirror("ftp://x/y", "/tmp")
