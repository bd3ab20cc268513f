"""The controller's wheelhouse: the tags a node's pip accepts, the folder's name, one download per requirement set.

pip here is a small stand-in program (a real process) that records its command line and writes one wheel per
requirement into --dest, as `pip download` does; the real pip download is tests/integration/test_tensorflow_wheelhouse.py.
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
import tarfile
import threading

import pytest

from ansible_collections.tfdist.cluster.plugins.module_utils import _wheelhouse

NODE = {"python_version": "3.11", "implementation": "cpython", "platform": "linux-x86_64", "glibc": "2.36"}
TF = "tensorflow-cpu==2.21.0"
FOLDER = "tensorflow-cpu-2.21.0-cp311-manylinux_2_36_x86_64"

FAKE_PIP = """
import json, os, sys, time
args = sys.argv[1:]
with open(os.environ["FAKE_PIP_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
if os.environ.get("FAKE_PIP_FAIL"):
    sys.exit("ERROR: No matching distribution found for " + args[-1])
time.sleep(float(os.environ.get("FAKE_PIP_SECONDS", "0")))
dest = args[args.index("--dest") + 1]
for requirement in [arg for arg in args if "==" in arg]:
    name, version = requirement.split("==")
    with open(os.path.join(dest, "%s-%s-py3-none-any.whl" % (name.split("[")[0].replace("-", "_"), version)), "w") as wheel:
        wheel.write(requirement)
"""


@pytest.fixture
def pip(tmp_path, monkeypatch):
    """The stand-in pip's command; pip.calls() lists the command lines it ran."""
    program = tmp_path / "fake_pip.py"
    program.write_text(FAKE_PIP)
    log = tmp_path / "pip.log"
    monkeypatch.setenv("FAKE_PIP_LOG", str(log))

    class Pip(list):
        @staticmethod
        def calls():
            return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    return Pip([sys.executable, str(program)])


def archived(path):
    with tarfile.open(path) as tar:
        return sorted(tar.getnames())


def test_the_tags_are_those_pip_itself_accepts_on_this_machine():
    packaging_tags = pytest.importorskip("packaging.tags")
    glibc = os.confstr("CS_GNU_LIBC_VERSION").partition(" ")[2] if hasattr(os, "confstr") else ""
    if not glibc:
        pytest.skip("this machine has no glibc")
    pips = [tag for tag in packaging_tags.platform_tags() if not tag.startswith("musllinux")]
    assert _wheelhouse.platform_tags(sysconfig.get_platform(), glibc) == pips


def test_the_tags_of_another_node_newest_glibc_first_with_the_legacy_aliases():
    tags = _wheelhouse.platform_tags("linux-x86_64", "2.39")
    assert tags[:3] == ["linux_x86_64", "manylinux_2_39_x86_64", "manylinux_2_38_x86_64"]
    assert tags[tags.index("manylinux_2_17_x86_64") + 1] == "manylinux2014_x86_64"
    assert tags[-2:] == ["manylinux_2_5_x86_64", "manylinux1_x86_64"]
    arm = _wheelhouse.platform_tags("linux-aarch64", "2.31")
    assert arm[:2] == ["linux_aarch64", "manylinux_2_31_aarch64"]
    assert arm[-2:] == ["manylinux_2_17_aarch64", "manylinux2014_aarch64"] and "manylinux2010_aarch64" not in arm


@pytest.mark.parametrize(("node", "message"), [
    (dict(NODE, glibc=None), "a node with glibc is needed"),
    (dict(NODE, implementation="pypy"), "a CPython node is needed (its Python is pypy)"),
    (dict(NODE, platform="macosx-14.0-arm64"), "a Linux node is needed (its Python says macosx-14.0-arm64)"),
])
def test_a_node_whose_wheels_cannot_be_chosen_is_refused_saying_why(node, message):
    with pytest.raises(_wheelhouse.WheelhouseError, match="^%s" % message.replace("(", r"\(").replace(")", r"\)")):
        _wheelhouse.folder_name(TF, node)


def test_the_folder_is_named_after_the_pinned_release_and_the_nodes_best_tag():
    assert _wheelhouse.folder_name(TF, NODE) == FOLDER
    gpu = _wheelhouse.folder_name("tensorflow[and-cuda]==2.21.0", dict(NODE, python_version="3.12", glibc="2.39"))
    assert gpu == "tensorflow-and-cuda-2.21.0-cp312-manylinux_2_39_x86_64"


def test_the_first_call_downloads_for_the_nodes_platform_and_the_next_runs_no_pip(tmp_path, pip):
    bundle = tmp_path / "ca.pem"
    bundle.write_text("PEM")
    first = _wheelhouse.ensure(str(tmp_path / "wh"), [TF, "fsspec==2025.1.0"], NODE, pip, str(bundle))
    folder = tmp_path / "wh" / FOLDER
    assert first["changed"] and first["path"] == str(folder) and first["archive"] == str(folder) + ".tar"
    assert first["downloaded"] == first["wheels"] == ["fsspec-2025.1.0-py3-none-any.whl",
                                                      "tensorflow_cpu-2.21.0-py3-none-any.whl"]
    assert archived(first["archive"]) == first["wheels"]
    [args] = pip.calls()
    pairs = set(zip(args, args[1:]))
    assert args[0] == "download" and "--only-binary=:all:" in args and args[-2:] == [TF, "fsspec==2025.1.0"]
    assert {("--python-version", "3.11"), ("--abi", "cp311"), ("--implementation", "cp"), ("--cert", str(bundle)),
            ("--platform", "manylinux_2_36_x86_64"), ("--platform", "manylinux2014_x86_64"),
            ("--dest", str(folder))} <= pairs

    # The same set (another node, the next deploy; its extra packages in any order): nothing to download, no pip.
    again = _wheelhouse.ensure(str(tmp_path / "wh"), [TF, "fsspec==2025.1.0"], NODE, pip)
    assert not again["changed"] and again["downloaded"] == [] and again["wheels"] == first["wheels"]
    assert len(pip.calls()) == 1


def test_another_set_for_the_same_release_is_added_and_the_archive_packed_again(tmp_path, pip):
    _wheelhouse.ensure(str(tmp_path), [TF], NODE, pip)
    more = _wheelhouse.ensure(str(tmp_path), [TF, "tensorboard==2.20.0"], NODE, pip)
    assert more["changed"] and more["downloaded"] == ["tensorboard-2.20.0-py3-none-any.whl"]
    assert archived(more["archive"]) == ["tensorboard-2.20.0-py3-none-any.whl", "tensorflow_cpu-2.21.0-py3-none-any.whl"]
    # Each set is held now, and another platform is another folder.
    assert not _wheelhouse.ensure(str(tmp_path), [TF], NODE, pip)["changed"]
    other = _wheelhouse.ensure(str(tmp_path), [TF], dict(NODE, python_version="3.13"), pip)
    assert other["changed"] and os.path.basename(other["path"]) == "tensorflow-cpu-2.21.0-cp313-manylinux_2_36_x86_64"
    assert len(pip.calls()) == 3


def test_a_lost_archive_is_packed_again_without_pip(tmp_path, pip):
    first = _wheelhouse.ensure(str(tmp_path), [TF], NODE, pip)
    os.remove(first["archive"])
    again = _wheelhouse.ensure(str(tmp_path), [TF], NODE, pip)
    assert again["changed"] and again["downloaded"] == [] and archived(again["archive"]) == first["wheels"]
    assert len(pip.calls()) == 1


def test_check_mode_says_what_would_change_and_downloads_nothing(tmp_path, pip):
    planned = _wheelhouse.ensure(str(tmp_path), [TF], NODE, pip, check_mode=True)
    assert planned["changed"] and not os.path.exists(planned["archive"]) and pip.calls() == []


def test_nodes_at_once_share_one_download(tmp_path, pip, monkeypatch):
    monkeypatch.setenv("FAKE_PIP_SECONDS", "1")  # the first download lasts while the others ask
    results = []

    def node():
        results.append(_wheelhouse.ensure(str(tmp_path), [TF], NODE, pip))

    threads = [threading.Thread(target=node) for node_number in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(pip.calls()) == 1
    assert sorted(result["changed"] for result in results) == [False, False, True]


def test_a_failed_download_shows_pips_words_and_records_nothing(tmp_path, pip, monkeypatch):
    monkeypatch.setenv("FAKE_PIP_FAIL", "1")
    with pytest.raises(_wheelhouse.WheelhouseError, match="pip download failed .*\n.*No matching distribution found for %s"
                       % TF.replace(".", r"\.")):
        _wheelhouse.ensure(str(tmp_path), [TF], NODE, pip)
    monkeypatch.delenv("FAKE_PIP_FAIL")
    assert _wheelhouse.ensure(str(tmp_path), [TF], NODE, pip)["downloaded"]  # the next call tries again


def test_a_missing_ca_bundle_is_named(tmp_path, pip):
    with pytest.raises(_wheelhouse.WheelhouseError, match="^ca_bundle: no such file on the controller: /no/such.pem"):
        _wheelhouse.ensure(str(tmp_path), [TF], NODE, pip, "/no/such.pem")
    assert pip.calls() == []


def test_a_no_deps_requirement_is_downloaded_alone_and_recorded_apart(tmp_path, pip):
    first = _wheelhouse.ensure(str(tmp_path), [TF], NODE, pip, no_deps=["tf-keras==2.21.0"])
    assert first["wheels"] == ["tensorflow_cpu-2.21.0-py3-none-any.whl", "tf_keras-2.21.0-py3-none-any.whl"]
    tf_call, keras_call = pip.calls()
    assert "--no-deps" not in tf_call and tf_call[-1] == TF
    assert "--no-deps" in keras_call and keras_call[-1] == "tf-keras==2.21.0"
    # Held now; the same requirement with its dependencies is another set.
    assert not _wheelhouse.ensure(str(tmp_path), [TF], NODE, pip, no_deps=["tf-keras==2.21.0"])["changed"]
    assert _wheelhouse.ensure(str(tmp_path), [TF, "tf-keras==2.21.0"], NODE, pip, check_mode=True)["changed"]
