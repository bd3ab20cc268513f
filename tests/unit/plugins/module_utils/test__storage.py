"""Storage URLs (module_utils/_storage.py) on file:// and plain paths; s3:// and hdfs:// run in tests/e2e."""

import pytest

from ansible_collections.tfdist.cluster.plugins.module_utils._storage import (
    StorageError,
    check,
    download,
    same_content,
    upload,
)


def test_a_missing_file_is_named_by_its_setting(tmp_path):
    with pytest.raises(StorageError, match=r"^tf_data: file://%s/nope.npz does not exist$" % tmp_path):
        check("file://%s/nope.npz" % tmp_path, "tf_data")


def test_a_folder_is_not_a_dataset(tmp_path):
    with pytest.raises(StorageError, match="tf_data: .* is a folder; give a file"):
        check(str(tmp_path), "tf_data")


@pytest.mark.parametrize("url, message", [
    ("ftp://host/data.npz", "unsupported URL scheme 'ftp'"),
    ("s3:///data.npz", "has no bucket"),
    ("hdfs:///data.npz", "has no namenode host"),
])
def test_malformed_urls_are_refused_naming_the_setting(url, message):
    with pytest.raises(StorageError, match="^tf_model_url: .*%s" % message):
        check(url, "tf_model_url", "write")


def test_upload_then_download_gives_the_same_bytes(tmp_path):
    source = tmp_path / "model.keras"
    source.write_bytes(b"\x00weights" * 1000)
    url = "file://%s/store/models/demo/model.keras" % tmp_path

    upload(str(source), url, "tf_model_url")
    assert same_content(str(source), url, "tf_model_url")
    size = download(url, str(tmp_path / "back" / "model.keras"), "tf_model_url")

    assert size == source.stat().st_size
    assert (tmp_path / "back" / "model.keras").read_bytes() == source.read_bytes()
