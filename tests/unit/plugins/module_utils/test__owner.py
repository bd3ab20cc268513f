"""Whose a cluster is (module_utils/_owner.py) and how names carry it (_access.py): the controller id made once, the
rule for marked and unmarked resources, names that two controllers' clusters of one name never share."""

import os
import stat
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from ansible_collections.tfdist.cluster.plugins.module_utils._access import (
    access_cluster,
    access_name,
    access_parts,
    name_owner,
)
from ansible_collections.tfdist.cluster.plugins.module_utils._owner import (
    OWNER_RE,
    controller_id,
    is_own,
    key_id,
    public_key,
    show,
)

OWNER = "1f3a2b4c5d6e7f8091a2b3c4d5e6f708"
OTHER = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b"


def test_the_controller_id_is_made_once_random_and_private(tmp_path):
    path = str(tmp_path / "home" / ".cache" / "controller-id")

    first = controller_id(path)

    assert len(first) == 32 and int(first, 16) >= 0
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert controller_id(path) == first
    assert controller_id(str(tmp_path / "elsewhere" / "controller-id")) != first  # another tfdist home, another id


def test_runs_that_start_at_once_share_one_id(tmp_path):
    path = str(tmp_path / "controller-id")
    with ThreadPoolExecutor(8) as pool:
        ids = set(pool.map(lambda _: controller_id(path), range(16)))
    assert len(ids) == 1
    assert os.listdir(tmp_path) == ["controller-id"]  # no file left beside it


def test_one_key_gives_one_owner_whoever_holds_it(tmp_path):
    # Two execution environments given one machine credential are one controller: the second destroys what the
    # first made. Another key is another owner; the key's comment does not count.
    for name in ("a", "b"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(tmp_path / name)],
                       check=True)
    first = key_id(public_key(str(tmp_path / "a")))
    assert OWNER_RE.match(first)
    assert key_id(public_key(str(tmp_path / "a")) + " another comment") == first
    assert key_id(public_key(str(tmp_path / "b"))) != first
    with pytest.raises(ValueError, match="is not a private key ssh can use without a passphrase"):
        public_key(str(tmp_path / "a.pub.missing"))


def test_a_damaged_id_file_is_named(tmp_path):
    path = tmp_path / "controller-id"
    path.write_text("not an id\n")
    with pytest.raises(ValueError, match="controller-id: not a tfdist controller id"):
        controller_id(str(path))


@pytest.mark.parametrize("mark, own_unmarked, expected", [
    (OWNER, False, True),          # its own tag
    (OWNER[:6], False, True),      # its own part of a name
    (OTHER, True, False),          # another controller's, whatever this one holds
    (OTHER[:6], True, False),
    (None, False, False),          # no mark, no inventory source here: whose is unknown
    (None, True, True),            # no mark, but this controller holds the cluster's inventory source
])
def test_what_is_this_controllers(mark, own_unmarked, expected):
    assert is_own(mark, OWNER, own_unmarked) is expected


def test_without_an_owner_everything_is_the_callers_as_before_marks():
    assert is_own(OTHER, None, False) and is_own(None, None, False)


def test_names_carry_the_owners_part_and_read_back():
    name = access_name("demo", OWNER)

    assert name == "tfdist-demo-1f3a2b"
    assert access_name("demo", OTHER) != name
    assert access_parts(name) == ("demo", "1f3a2b")
    assert access_parts(access_name("my-demo-2", OWNER) + "-ssh", "-ssh") == ("my-demo-2", "1f3a2b")
    assert access_cluster(name) == "demo"
    assert show(OWNER) == "owner 1f3a2b..."


def test_a_name_made_before_owners_reads_as_unmarked():
    assert access_name("demo") == "tfdist-demo"
    assert access_parts("tfdist-demo") == ("demo", None)
    assert access_parts("tfdist-Bad_Name") == (None, None)
    assert access_parts("web") == (None, None)


@pytest.mark.parametrize("name, owner", [
    ("tfdist-demo-1f3a2b", "1f3a2b"),
    ("tfdist-demo-1f3a2b-internal", "1f3a2b"),  # GCE's firewall rules add their own suffix
    ("tfdist-demo", None),
    ("tfdist-demo-ssh", None),
    ("demo-worker-0-nic", None),
])
def test_the_owners_part_is_read_whatever_a_cloud_adds(name, owner):
    assert name_owner(name) == owner
