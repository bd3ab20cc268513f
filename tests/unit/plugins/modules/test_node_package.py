"""tfdist.cluster.node_package: the node-side package tfdist, laid down idempotently, importable on its own."""

import json
import os
import subprocess
import sys

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.tfdist.cluster.plugins.module_utils import _package
from ansible_collections.tfdist.cluster.plugins.modules import node_package

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), *[".."] * 4))
PACKAGE_FOLDER = os.path.join(REPO, "plugins", "module_utils", "tfdist")


@pytest.fixture
def run(capsys, tmp_path):
    def run_module(check_mode=False, **options):
        args = dict(dest=str(tmp_path / "lib"), **options)
        with patch_module_args(dict(args, _ansible_check_mode=check_mode)), pytest.raises(SystemExit):
            node_package.main()
        return json.loads(capsys.readouterr().out)
    return run_module


def test_the_package_is_its_folder_every_file_and_nothing_else():
    """A module_utils file goes to the nodes by living in module_utils/tfdist/, and only then."""
    on_disk = sorted(os.path.relpath(os.path.join(folder, name), PACKAGE_FOLDER)
                     for folder, _dirs, names in os.walk(PACKAGE_FOLDER) for name in names if name.endswith(".py"))
    files = _package.package_files()
    assert sorted(set(files) - {"SHA256SUMS"}) == on_disk
    for path in on_disk:
        with open(os.path.join(PACKAGE_FOLDER, path), "rb") as f:
            assert files[path] == f.read(), path


def test_a_loader_without_get_data_ships_the_same_package(monkeypatch):
    """Mitogen's importer has get_source but no get_data: the files and their checksums must not change."""
    expected = _package.package_files()
    monkeypatch.setattr(_package.pkgutil, "get_data", lambda package, resource: None)
    assert _package.package_files() == expected


def test_the_package_is_written_once_and_runs_without_the_collection(run, tmp_path):
    first = run()
    assert first["changed"] is True and first["written"] == first["files"] and first["removed"] == []
    assert first["package_dir"] == str(tmp_path / "lib" / "tfdist")

    second = run()
    assert second["changed"] is False and second["written"] == [] and second["digest"] == first["digest"]

    # A plain interpreter with only the lib folder on its path: the package stands on its own.
    out = subprocess.run([sys.executable, "-I", "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                          "sys.argv = ['tfdist.train', '--help']; import runpy; "
                          "runpy.run_module('tfdist.train.job', run_name='__main__')", str(tmp_path / "lib")],
                         capture_output=True, text=True, timeout=60, check=False)
    assert "--checkpoint_every" in out.stdout, out.stderr


def test_changed_files_modes_and_stale_files_are_put_right(run, tmp_path):
    run()
    package = tmp_path / "lib" / "tfdist"
    (package / "train" / "cli.py").write_text("# edited on the node\n")
    os.chmod(package / "_storage.py", 0o644)  # readable by all: put right
    (package / "train" / "old_module.py").write_text("")
    (package / "gone").mkdir()
    (package / "gone" / "x.py").write_text("")
    (package / "train" / "__pycache__").mkdir()
    (package / "train" / "__pycache__" / "cli.cpython-311.pyc").write_bytes(b"")

    planned = run(check_mode=True)
    assert planned["changed"] is True
    assert (package / "train" / "old_module.py").exists()  # check mode changes nothing

    fixed = run()
    assert fixed["written"] == ["_storage.py", "train/cli.py"]
    assert fixed["removed"] == planned["removed"] == ["gone", "train/old_module.py"]
    assert (package / "train" / "__pycache__").exists()  # Python's own
    assert os.stat(package / "_storage.py").st_mode & 0o777 == 0o600  # its user's alone
    assert run()["changed"] is False


def test_check_mode_on_a_new_host_writes_nothing(run, tmp_path):
    planned = run(check_mode=True)
    assert planned["changed"] is True and planned["written"] == planned["files"]
    assert not (tmp_path / "lib").exists()
