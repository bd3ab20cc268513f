"""Storage URLs (module_utils/_storage.py) on file://, http:// and plain paths; s3:// and hdfs:// run in tests/e2e."""

import functools
import http.server
import os
import stat
import threading

import pytest

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._storage import (
    StorageError,
    check,
    classify,
    download,
    same_content,
    storage_plan,
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
    # A copy brought here (a dataset the controller stages, a model) is its user's alone, as the job's own files.
    assert stat.S_IMODE(os.stat(tmp_path / "back" / "model.keras").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "back").st_mode) == 0o700


def test_an_http_dataset_is_downloaded_and_a_missing_one_named(tmp_path):
    served = tmp_path / "www"
    served.mkdir()
    (served / "digits.npz").write_bytes(b"\x93NUMPY" * 500)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = "http://127.0.0.1:%d" % server.server_address[1]
    try:
        size = download(base + "/digits.npz", str(tmp_path / "data" / "digits.npz"), "tf_data")
        assert size == 3000 and (tmp_path / "data" / "digits.npz").read_bytes() == (served / "digits.npz").read_bytes()
        with pytest.raises(StorageError, match="^tf_data: http://.*/nope.npz"):
            download(base + "/nope.npz", str(tmp_path / "data" / "nope.npz"), "tf_data")
        assert not (tmp_path / "data" / "nope.npz").exists()
    finally:
        server.shutdown()
        server.server_close()


# ---------------------------------------------------------------- the policy: what a setting means


@pytest.mark.parametrize("value, kind, url, path", [
    ("builtin:digits", "builtin", "builtin:digits", "digits"),
    ("data/x.npz", "local", "/home/me/data/x.npz", "/home/me/data/x.npz"),
    ("/abs/x.csv", "local", "/abs/x.csv", "/abs/x.csv"),
    ("file:///abs/x%20y.npz", "local", "file:///abs/x%20y.npz", "/abs/x y.npz"),
    ("https://example.org/x.npz", "http", "https://example.org/x.npz", ""),
    ("s3://bucket/x.npz", "storage", "s3://bucket/x.npz", ""),
    ("hdfs://nn:8020/x.npz", "storage", "hdfs://nn:8020/x.npz", ""),
    ("hdfs:///datasets/x.npz", "storage", "hdfs://10.0.0.5:8020/datasets/x.npz", ""),
    ("ftp://host/x", "unknown", "ftp://host/x", ""),
    ("", "empty", "", ""),
])
def test_classify_says_what_a_value_is(value, kind, url, path):
    info = classify(value, "tf_data", cwd="/home/me", hdfs_uri="hdfs://10.0.0.5:8020")
    assert (info["kind"], info["url"], info["path"]) == (kind, url, path)
    assert info["on_cluster"] == value.startswith("hdfs:///")


def plan(**settings):
    args = dict(tf_data="builtin:digits", tf_stage_data="", tf_model_url="", tf_checkpoint_url="", tf_hdfs=False,
                cwd="/home/me", cache_dir="/home/me/.cache/data", hdfs_uri="hdfs://10.0.0.5:8020")
    args.update(settings)
    return storage_plan(**args)


def test_a_local_dataset_for_a_bucket_is_staged_by_the_controller():
    stage = plan(tf_data="s3://b/sets/d.npz", tf_stage_data="d.npz")["stage"]
    assert stage["on_controller"] and not stage["on_chief"]
    assert not plan()["stage"]["on_controller"]  # nothing to stage


def test_the_controller_checks_the_bucket_it_reads_or_stages_to_and_the_folders_it_writes():
    job = plan(tf_data="s3://b/sets/d.npz", tf_model_url="s3://b/m/, file:///srv/models")
    assert job["controller_checks"] == [{"field": "tf_data", "url": "s3://b/sets/d.npz", "check": "read"},
                                        {"field": "tf_model_url", "url": "s3://b/m", "check": "write"},
                                        {"field": "tf_model_url", "url": "file:///srv/models", "check": "write"}]
    staged = plan(tf_data="s3://b/sets/d.npz", tf_stage_data="d.npz")["controller_checks"]
    assert staged == [{"field": "tf_data", "url": "s3://b/sets/d.npz", "check": "write"}]
    assert plan(tf_data="https://h/d.npz")["controller_checks"] == []  # the nodes read it


def test_a_bucket_dataset_is_read_by_the_controller_and_staged():
    data = plan(tf_data="s3://b/sets/d.npz")["data"]
    assert data["reader"] == "controller"
    assert data["staged"].startswith("/home/me/.cache/data/") and data["staged"].endswith("-d.npz")
    assert data["node_value"] == data["staged"]  # nodes get a copy, never the bucket
    assert plan(tf_data="s3://b/sets/d.npz")["node_packages"] == []


def test_the_cluster_hdfs_is_read_and_written_by_the_nodes():
    job = plan(tf_data="hdfs:///d.npz", tf_stage_data="d.npz", tf_model_url="hdfs:///m, s3://b/m/",
               tf_checkpoint_url="s3://b/ck", tf_hdfs=True)
    assert job["errors"] == []
    assert job["data"]["reader"] == "nodes" and job["data"]["node_value"] == "hdfs://10.0.0.5:8020/d.npz"
    assert job["stage"]["on_chief"] and job["stage"]["path"] == "/home/me/d.npz"
    assert not job["stage"]["on_controller"]
    assert job["chief_model_url"] == "hdfs://10.0.0.5:8020/m"
    assert job["controller_model_urls"] == ["s3://b/m"]
    assert [c["field"] for c in job["chief_checks"]] == ["tf_data", "tf_checkpoint_url", "tf_model_url"]
    assert job["controller_checks"] == [{"field": "tf_model_url", "url": "s3://b/m", "check": "write"}]
    assert job["node_packages"] == ["fsspec==2026.9.0", "s3fs==2026.9.0"]


@pytest.mark.parametrize("settings, message", [
    ({"tf_data": "hdfs:///d.npz"}, "tf_data: hdfs:///d.npz is on the cluster HDFS (hdfs:/// names no NameNode): "
                                   "add -e tf_hdfs=true, or name the NameNode (hdfs://HOST:PORT/PATH)"),
    ({"tf_checkpoint_url": "hdfs:///", "tf_hdfs": True}, "tf_checkpoint_url: hdfs:/// names no file or folder"),
    ({"tf_checkpoint_url": "ftp://h/c"}, "tf_checkpoint_url: ftp://h/c must be a file://, hdfs://, webhdfs:// or s3:// folder URL"),
    ({"tf_model_url": "hdfs:///a,hdfs:///b", "tf_hdfs": True}, "tf_model_url: give at most one folder on the cluster HDFS"),
    ({"tf_stage_data": "d.npz", "tf_data": "x.npz"}, "tf_stage_data: d.npz is copied to tf_data, which must then be"),
    ({"tf_data": "gopher://h/x"}, "tf_data: gopher://h/x: unsupported URL scheme 'gopher'"),
])
def test_settings_that_cannot_work_are_named(settings, message):
    errors = plan(**settings)["errors"]
    assert len(errors) == 1 and errors[0].startswith(message)


def test_a_plain_job_needs_nothing_on_the_nodes():
    job = plan()
    assert (job["errors"], job["node_packages"], job["chief_checks"], job["controller_checks"], job["data"]["reader"]) == (
        [], [], [], [], "copy")
