"""tfdist.cluster.controller_file: the controller's files of a deploy (inventory sources, RADL), written by the
controller's own process only when they differ, with their folders, never half-written."""

import json
import os
import stat

from ansible_cli import run, tail


def write(path, content, *options, mode=None):
    args = {"path": str(path), "content": content}
    if mode is not None:
        args["mode"] = mode
    return run("ansible", "localhost", *options, "-m", "tfdist.cluster.controller_file", "-a", json.dumps(args))


def test_written_once_with_its_folders_and_mode(tmp_path):
    path = tmp_path / "clusters" / "deep" / "demo.local.yml"
    first = write(path, "all: {}\n")
    assert first.returncode == 0 and "CHANGED" in first.stdout, tail(first)
    # The file and every folder made for it are this user's alone.
    assert path.read_text() == "all: {}\n" and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path.parent.parent).st_mode) == 0o700

    again = write(path, "all: {}\n", mode="0600")
    assert again.returncode == 0 and "SUCCESS" in again.stdout and "CHANGED" not in again.stdout, tail(again)

    # Only the mode differs: rewritten too.
    loose = write(path, "all: {}\n", mode="0644")
    assert "CHANGED" in loose.stdout and stat.S_IMODE(os.stat(path).st_mode) == 0o644, tail(loose)


def test_check_mode_shows_the_change_and_writes_nothing(tmp_path):
    path = tmp_path / "demo.radl"
    path.write_text("system chief ()\n")
    planned = write(path, "system worker ()\n", "--check", "--diff")
    assert planned.returncode == 0 and "CHANGED" in planned.stdout, tail(planned)
    assert "-system chief ()" in planned.stdout and "+system worker ()" in planned.stdout, tail(planned)
    assert path.read_text() == "system chief ()\n"


def test_bad_arguments_are_named_and_nothing_is_written(tmp_path):
    relative = write("clusters/demo.yml", "x")
    assert relative.returncode != 0 and "path: must be absolute" in relative.stdout, tail(relative)
    bad_mode = write(tmp_path / "x.yml", "x", mode="rw-r--r--")
    assert bad_mode.returncode != 0 and "mode: must be octal" in bad_mode.stdout, tail(bad_mode)
    missing = run("ansible", "localhost", "-m", "tfdist.cluster.controller_file",
                  "-a", json.dumps({"path": str(tmp_path / "y.yml")}))
    assert missing.returncode != 0 and "content" in missing.stdout, tail(missing)
    assert os.listdir(tmp_path) == []
