"""How a set of files is named by its checksums, and the look that tells whether a folder holds them as written."""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _files

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
    assert not _files.in_place(str(tmp_path), digests)
    write_all(tmp_path)
    assert _files.in_place(str(tmp_path), digests, folders=["", "sub"], only=True)
    assert not _files.in_place(str(tmp_path), digests, folders=["missing"])
    os.chmod(tmp_path / "a.py", 0o644)  # readable by all: not as written
    assert not _files.in_place(str(tmp_path), digests)
    os.chmod(tmp_path / "a.py", _files.FILE_MODE)
    (tmp_path / "sub" / "b.py").write_bytes(b"x = 3\n")
    assert not _files.in_place(str(tmp_path), digests)


def test_only_allows_python_caches_and_nothing_else(tmp_path):
    write_all(tmp_path)
    digests = _files.read_checksums(_files.checksums(FILES))
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"")
    assert _files.in_place(str(tmp_path), digests, only=True)
    (tmp_path / "sub" / "stray.py").write_bytes(b"")
    assert _files.stale_entries(str(tmp_path), digests) == ["sub/stray.py"]
    assert not _files.in_place(str(tmp_path), digests, only=True) and _files.in_place(str(tmp_path), digests)


def modes(root):
    """{path relative to root: its mode bits} of everything under root (root itself as '.')."""
    found = {".": stat.S_IMODE(os.stat(root).st_mode)}
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            path = os.path.join(folder, name)
            found[os.path.relpath(path, root)] = stat.S_IMODE(os.stat(path).st_mode)
    return found


def test_what_is_written_and_every_folder_made_for_it_are_the_users_alone(tmp_path):
    old_umask = os.umask(0o022)  # as a module run over SSH has it: Python's makedirs would make 0755 folders
    try:
        _files.write_file(str(tmp_path / "job" / "tasks" / "chief-0" / "train.py"), b"print(1)\n")
        _files.lay_down(str(tmp_path / "lib" / "tfdist"), FILES)
        _files.make_folder(str(tmp_path / "job" / "data"))
    finally:
        os.umask(old_umask)
    found = modes(tmp_path / "job")
    found.update(("lib/" + path, mode) for path, mode in modes(tmp_path / "lib").items())
    assert found == {".": 0o700, "tasks": 0o700, "tasks/chief-0": 0o700, "tasks/chief-0/train.py": 0o600,
                     "data": 0o700, "lib/.": 0o700, "lib/tfdist": 0o700, "lib/tfdist/a.py": 0o600,
                     "lib/tfdist/sub": 0o700, "lib/tfdist/sub/b.py": 0o600}


def test_a_folder_that_exists_keeps_its_mode(tmp_path):
    # The user's own folders above the job's (a home, a project folder) are not tfdist's to change.
    os.chmod(tmp_path, 0o755)
    _files.make_folder(str(tmp_path / "job"))
    _files.make_folder(str(tmp_path / "job"))
    assert modes(tmp_path) == {".": 0o755, "job": 0o700}
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(FileExistsError):
        _files.make_folder(str(tmp_path / "file" / "job"))
