"""How a set of files is named by its checksums, and the look that tells whether a folder holds them as written."""

from __future__ import annotations

import os

from ansible_collections.tfdist.cluster.plugins.module_utils import _files

FILES = {"a.py": b"print(1)\n", "sub/b.py": b"x = 2\n"}


def write_all(root):
    for path, content in FILES.items():
        _files.write_file(str(root / path), content)


def test_a_checksums_text_reads_back_and_matches_sha256sum():
    text = _files.checksums(FILES)
    assert text.splitlines()[0] == "%s  a.py" % _files.digest(FILES["a.py"])
    assert _files.read_checksums(text) == {path: _files.digest(content) for path, content in FILES.items()}


def test_a_folder_holds_the_files_only_as_written(tmp_path):
    digests = _files.read_checksums(_files.checksums(FILES))
    assert not _files.holds(str(tmp_path), digests)
    write_all(tmp_path)
    assert _files.holds(str(tmp_path), digests, folders=["", "sub"], only=True)
    assert not _files.holds(str(tmp_path), digests, folders=["missing"])
    os.chmod(tmp_path / "a.py", 0o600)
    assert not _files.holds(str(tmp_path), digests)
    os.chmod(tmp_path / "a.py", _files.FILE_MODE)
    (tmp_path / "sub" / "b.py").write_bytes(b"x = 3\n")
    assert not _files.holds(str(tmp_path), digests)


def test_only_allows_python_caches_and_nothing_else(tmp_path):
    write_all(tmp_path)
    digests = _files.read_checksums(_files.checksums(FILES))
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"")
    assert _files.holds(str(tmp_path), digests, only=True)
    (tmp_path / "sub" / "stray.py").write_bytes(b"")
    assert _files.stale_entries(str(tmp_path), digests) == ["sub/stray.py"]
    assert not _files.holds(str(tmp_path), digests, only=True) and _files.holds(str(tmp_path), digests)
