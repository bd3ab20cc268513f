"""tfdist.cluster.ssh_public_key lookup: the public half of a private key (tf_ssh_key), as the cloud's key pair gets it,
with real keys made by ssh-keygen."""

import subprocess

import pytest
from ansible.errors import AnsibleLookupError
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import lookup_loader


@pytest.fixture
def lookup():
    return lookup_loader.get("tfdist.cluster.ssh_public_key", loader=DataLoader())


def new_key(path, passphrase=""):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", "machine-credential", "-f",
                    str(path)], check=True)
    return path


def test_the_public_half_is_the_line_ssh_keygen_wrote_beside_the_key(lookup, tmp_path):
    key = new_key(tmp_path / "machine")

    assert lookup.run([str(key)], variables={}) == [(tmp_path / "machine.pub").read_text().strip()]


def test_a_key_with_a_passphrase_is_refused_naming_it(lookup, tmp_path):
    key = new_key(tmp_path / "locked", passphrase="secret words")

    with pytest.raises(AnsibleLookupError, match="ssh_public_key: %s is not a private key ssh can use without a "
                                                 "passphrase" % key):
        lookup.run([str(key)], variables={})
