"""Records written whole and read whole (module_utils/_json_files.py)."""

import os

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _json_files


def test_json_files_are_written_whole_and_read_back(tmp_path):
    path = str(tmp_path / "status.json")
    _json_files.write_json(path, {"step": 3, "state": "running"}, indent=1)

    assert _json_files.read_json(path) == {"state": "running", "step": 3}
    assert os.listdir(str(tmp_path)) == ["status.json"]  # no temporary file left
    (tmp_path / "half.json").write_text('{"step": ')
    assert _json_files.read_json(str(tmp_path / "half.json")) is None
    assert _json_files.read_json(str(tmp_path / "missing.json")) is None


def test_a_record_replaces_the_file_a_reader_holds_open(tmp_path):
    path = str(tmp_path / "exit.json")
    _json_files.write_json(path, {"returncode": None})
    with open(path) as reader:
        _json_files.write_json(path, {"returncode": 0})
        # The reader still reads the whole old record: the new one is a new file renamed over it.
        assert reader.read() == '{"returncode": null}\n'
    assert _json_files.read_json(path) == {"returncode": 0}


def test_text_files_and_their_removal(tmp_path):
    path = str(tmp_path / "task.pid")
    _json_files.write_text(path, "42\n")
    assert open(path).read() == "42\n" and oct(os.stat(path).st_mode & 0o777) == oct(0o600)

    _json_files.remove(path)
    _json_files.remove(path)  # already gone: no error
    assert not os.path.exists(path)
