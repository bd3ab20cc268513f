"""The user-data a node gets (_user_data.cloud_config), its host key, where each cloud takes it
(_libcloud.user_data_kwargs), and that it never comes back in a node's data (without_user_data)."""

from types import SimpleNamespace

import pytest
import yaml

from ansible_collections.tfdist.cluster.plugins.module_utils._host_keys import new_host_key
from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import user_data_kwargs
from ansible_collections.tfdist.cluster.plugins.module_utils._provider import TfdistCloudError
from ansible_collections.tfdist.cluster.plugins.module_utils._user_data import cloud_config, without_user_data

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG4rT3vTt99Ox5kndS4HmgTrKBT8SKzhK4rhGkEVGlCI tfdist-demo"
LOGIN = {"user": "debian", "public_key": KEY + "\n"}


def test_the_cloud_config_makes_the_login_user_with_the_key_and_sudo_and_keeps_root_out():
    text = cloud_config("debian", KEY + "\n")

    assert text.startswith("#cloud-config\n")  # what tells cloud-init the user-data is a cloud-config
    config = yaml.safe_load(text)  # cloud-init reads it as YAML
    assert config == {
        "users": [{"name": "debian", "shell": "/bin/bash", "lock_passwd": True, "sudo": "ALL=(ALL) NOPASSWD:ALL",
                   "ssh_authorized_keys": [KEY]}],
        "disable_root": True,
    }


def test_with_a_host_key_the_node_gets_that_key_alone():
    host_key = new_host_key("demo-worker-0")

    config = yaml.safe_load(cloud_config("debian", KEY, host_key=host_key))

    # cloud-init writes these as /etc/ssh/ssh_host_ed25519_key{,.pub}, after deleting the image's own host keys,
    # and generates no other type.
    assert config["ssh_keys"] == {"ed25519_private": host_key.private, "ed25519_public": host_key.public}
    assert config["ssh_keys"]["ed25519_private"].startswith("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    assert config["ssh_keys"]["ed25519_public"].startswith("ssh-ed25519 ")
    assert config["ssh_deletekeys"] is True and "ssh_genkeytypes" not in config  # ([] fails cloud-init's schema)
    assert config["users"][0]["ssh_authorized_keys"] == [KEY]  # the login stays as it was


@pytest.mark.parametrize("user, key, message", [
    ("root", KEY, "user_data.user: the login user must be a user of its own, not 'root'"),
    ("", KEY, "user_data.user: the login user must be a user of its own, not ''"),
    ("debian", "", "user_data.public_key: one OpenSSH public key line, got ''"),
    ("debian", KEY + "\n" + KEY, "user_data.public_key: one OpenSSH public key line"),
])
def test_a_root_or_empty_login_or_a_bad_key_is_refused_naming_the_field(user, key, message):
    with pytest.raises(TfdistCloudError) as error:
        cloud_config(user, key)

    assert str(error.value).startswith(message)


@pytest.mark.parametrize("provider, arg", [("ec2", "ex_userdata"), ("openstack", "ex_userdata"), ("docker", "ex_userdata")])
def test_ec2_openstack_and_docker_take_the_cloud_config_as_user_data(provider, arg):
    kwargs = user_data_kwargs(SimpleNamespace(type=provider), LOGIN, {"ex_keyname": "tfdist-demo"})

    assert kwargs == {arg: cloud_config("debian", KEY)}


def test_gce_takes_it_in_the_metadata_next_to_the_ssh_keys():
    access_kwargs = {"ex_tags": ["tfdist-demo"], "ex_metadata": {"ssh-keys": "tfdist:" + KEY}}

    kwargs = user_data_kwargs(SimpleNamespace(type="gce"), LOGIN, access_kwargs)

    assert kwargs == {"ex_metadata": {"ssh-keys": "tfdist:" + KEY, "user-data": cloud_config("debian", KEY)}}
    assert access_kwargs["ex_metadata"] == {"ssh-keys": "tfdist:" + KEY}  # merged into a copy


def test_a_cloud_that_cannot_take_user_data_is_named_with_those_that_can():
    with pytest.raises(TfdistCloudError) as error:
        user_data_kwargs(SimpleNamespace(type="azure_arm"), LOGIN, {})

    assert str(error.value) == ("user_data: tfdist gives user-data to nodes on docker, ec2, gce, openstack only, "
                                "not on provider azure_arm")


def test_a_cloud_takes_the_host_key_with_the_rest_of_the_user_data():
    host_key = new_host_key("demo-worker-0")

    kwargs = user_data_kwargs(SimpleNamespace(type="ec2"), LOGIN, {}, host_key=host_key)

    assert yaml.safe_load(kwargs["ex_userdata"])["ssh_keys"]["ed25519_public"] == host_key.public


def test_node_data_comes_back_without_the_user_data():
    """GCE hands a node's metadata back, user-data included: its private host key must not reach a result or an
    inventory."""
    secret = cloud_config("debian", KEY, host_key=new_host_key("demo-worker-0"))
    extra = {"metadata": {"fingerprint": "abc", "items": [{"key": "ssh-keys", "value": "tfdist:" + KEY},
                                                          {"key": "user-data", "value": secret}]},
             "user_data": secret, "tags": {"tfdist_cluster": "demo"}}

    assert without_user_data(extra) == {"metadata": {"fingerprint": "abc",
                                                     "items": [{"key": "ssh-keys", "value": "tfdist:" + KEY}]},
                                        "tags": {"tfdist_cluster": "demo"}}
    assert "ed25519_private" in extra["user_data"]  # a copy: the driver's node is left as it was
