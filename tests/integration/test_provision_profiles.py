"""The cloud profiles (inventories/<cloud>/cloud.yml) against their format, the provision role's `profile` entry point.

Each run loads one profile as the role does (tasks_from: load_profile) and creates nothing: every shipped profile
passes, and a bad one stops the play naming the profile file and the key.
"""

import json
import os

import pytest

from ansible_cli import REPO, run_playbook, tail

PROFILES = os.path.join(REPO, "inventories")
SHIPPED = sorted(name for name in os.listdir(PROFILES) if os.path.isfile(os.path.join(PROFILES, name, "cloud.yml")))
PLAYBOOK = """\
- name: Load a cloud profile as the provision role does
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Load and check it
      ansible.builtin.include_role:
        name: tfdist.cluster.provision
        tasks_from: load_profile
"""


@pytest.fixture
def load(tmp_path):
    """Load profile `cloud` from `profiles_dir`; returns the CompletedProcess."""
    playbook = tmp_path / "load.yml"
    playbook.write_text(PLAYBOOK)

    def run(cloud, profiles_dir=PROFILES):
        # The role's own variables only: a profile reads no playbook variable (tfdist_home, tf_port_base, ...).
        return run_playbook(str(playbook), "provision_cloud=" + cloud, "provision_profiles_dir=" + str(profiles_dir),
                            env={"ANSIBLE_CALLBACK_RESULT_FORMAT": "json"}, timeout=120)
    return run


def failure(result):
    """The message the play stopped with."""
    assert result.returncode != 0, tail(result)
    fatal = [line for line in result.stdout.splitlines() if line.startswith("fatal: ")]
    assert fatal, tail(result)
    return json.loads(fatal[-1].split(" => ", 1)[1])["msg"]


def profile(tmp_path, text):
    folder = tmp_path / "profiles" / "mine"
    folder.mkdir(parents=True)
    (folder / "cloud.yml").write_text(text)
    return tmp_path / "profiles"


def test_the_shipped_profiles_are_the_seven_clouds():
    assert SHIPPED == ["aws", "azure", "docker", "docker-vm", "gce", "local", "openstack"]


@pytest.mark.parametrize("cloud", SHIPPED)
def test_every_shipped_profile_matches_the_format(load, cloud):
    result = load(cloud)

    assert result.returncode == 0, tail(result)


def test_an_unknown_or_misspelt_key_is_named(load, tmp_path):
    profiles = profile(tmp_path, "provision_kind: libcloud\nlibcloud_provider: ec2\nlibcloud_node: {}\n"
                                 "mine_image: ami-1\nlibcloud_nodes:\n  chief: {size: m5.large, image: '{{ mine_image }}'}\n"
                                 "  worker: {size: m5.large, imgae: ami-1}\n")

    message = failure(load("mine", profiles))

    assert message.startswith("cloud: the profile of cloud 'mine' (%s/mine/cloud.yml) is not valid (its format: "
                              "ansible-doc -t role tfdist.cluster.provision -e profile): unknown key(s) " % profiles)
    named = message.split("unknown key(s) ", 1)[1].split(", ")
    # mine_image is the profile's own helper variable (named after it): allowed.
    assert sorted(named) == ["libcloud_node", "libcloud_nodes.worker.imgae"]


def test_a_wrong_value_is_named_with_what_is_allowed(load, tmp_path):
    profiles = profile(tmp_path, "provision_kind: libcloud\nlibcloud_provider: ec2\nlibcloud_nodes: {}\n"
                                 "libcloud_address: sideways\nlibcloud_wait_for_port: ssh\n")

    message = failure(load("mine", profiles))

    assert "value of libcloud_address must be one of: public, private, got: sideways" in message
    assert "argument 'libcloud_wait_for_port' is of type str and we were unable to convert to int" in message


@pytest.mark.parametrize("text, missing", [
    ("libcloud_provider: ec2\n", "missing required arguments: provision_kind"),
    ("provision_kind: cloudy\n", "value of provision_kind must be one of: libcloud, static, got: cloudy"),
    ("provision_kind: libcloud\nlibcloud_nodes: {}\n", "libcloud_provider: required with provision_kind libcloud"),
    ("provision_kind: static\nlocal_port_base: 2222\nlocal_training_home: /tmp\n",
     "local_tensorflow_venv: required with provision_kind static"),
])
def test_what_the_kind_needs_is_required(load, tmp_path, text, missing):
    message = failure(load("mine", profile(tmp_path, text)))

    assert message.endswith("profile): " + missing)


def test_an_unknown_cloud_lists_the_known_ones(load):
    message = failure(load("mars"))

    assert message == "cloud: unknown cloud 'mars'; known clouds: " + ", ".join(SHIPPED)


def test_a_role_with_constraints_instead_of_a_size_is_a_valid_profile(load, tmp_path):
    profiles = profile(tmp_path, "provision_kind: libcloud\nlibcloud_provider: ec2\nlibcloud_nodes:\n"
                                 "  chief: {size: m5.large, image: ami-1}\n"
                                 "  worker: {cpus: 4, memory: 16g, gpus: 1, image: ami-1}\n")

    assert load("mine", profiles).returncode == 0


def test_a_constraint_of_the_wrong_type_is_named(load, tmp_path):
    profiles = profile(tmp_path, "provision_kind: libcloud\nlibcloud_provider: ec2\nlibcloud_nodes:\n"
                                 "  worker: {cpus: four, memory: 16g, image: ami-1}\n")

    message = failure(load("mine", profiles))

    assert "argument 'cpus' is of type str found in 'libcloud_nodes -> worker'" in message
    assert "'four'\" cannot be converted to an int" in message


def test_zones_and_sizes_in_order_of_preference_are_a_valid_profile(load, tmp_path):
    profiles = profile(tmp_path, "provision_kind: libcloud\nlibcloud_provider: ec2\n"
                                 "libcloud_zones: [us-east-1a, us-east-1b]\nlibcloud_spread_zones: false\n"
                                 "libcloud_nodes:\n"
                                 "  chief: {size: m5.large, image: ami-1}\n"
                                 "  worker: {size: [g4dn.xlarge, g5.xlarge], image: ami-1}\n")

    assert load("mine", profiles).returncode == 0
