"""What tfdist does with any cloud (module_utils/_libcloud.py): driver factory, credentials, tags and node dicts,
with the per-cloud declarations of the _cloud_*.py files as the registry (_clouds.py) holds them."""

import pytest
from libcloud.compute.base import Node, NodeLocation
from libcloud.compute.drivers.dummy import DummyNodeDriver

from ansible_collections.tfdist.cluster.plugins.module_utils import _clouds, _libcloud
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._cluster import ClusterError, validate_cluster_name
from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import (
    TfdistCloudError,
    get_driver,
    list_cluster_nodes,
    node_identity,
    node_to_dict,
    pick_address,
    register_driver,
    tag_create_kwargs,
)
from ansible_collections.tfdist.cluster.plugins.module_utils._provider import CloudProvider

AWS_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "AWS_REGION")


@pytest.fixture
def no_aws_env(monkeypatch):
    for name in AWS_ENV:
        monkeypatch.delenv(name, raising=False)


def test_unknown_provider_lists_the_known_ones(cloud):
    with pytest.raises(TfdistCloudError) as error:
        get_driver("nosuchcloud")

    message = str(error.value)
    assert message.startswith("Unknown provider 'nosuchcloud'; known providers: ")
    known = message.split("known providers: ")[1].split(", ")
    assert {"ec2", "gce", "azure_arm", "openstack", "dummy", "fake"} <= set(known)


def test_ec2_without_credentials_names_the_env_vars(no_aws_env):
    with pytest.raises(TfdistCloudError) as error:
        get_driver("ec2", region="eu-west-1")

    assert str(error.value) == (
        "Missing credentials for provider 'ec2': set credentials.access_key (or env AWS_ACCESS_KEY_ID); "
        "credentials.secret_key (or env AWS_SECRET_ACCESS_KEY)")


def test_missing_credential_error_never_shows_a_given_secret(no_aws_env, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3cr3t-value")

    with pytest.raises(TfdistCloudError) as error:
        get_driver("ec2")

    assert "AWS_ACCESS_KEY_ID" in str(error.value)
    assert "AWS_SECRET_ACCESS_KEY" not in str(error.value)
    assert "s3cr3t-value" not in str(error.value)


def test_openstack_without_credentials_names_each_env_var(monkeypatch):
    for name in ("OS_USERNAME", "OS_PASSWORD", "OS_AUTH_URL", "OS_PROJECT_NAME", "OS_TENANT_NAME"):
        monkeypatch.delenv(name, raising=False)

    with pytest.raises(TfdistCloudError) as error:
        get_driver("openstack", credentials={"username": "alice"})

    message = str(error.value)
    for expected in ("OS_PASSWORD", "OS_AUTH_URL", "OS_PROJECT_NAME / OS_TENANT_NAME"):
        assert expected in message
    assert "OS_USERNAME" not in message


def test_unknown_credentials_key_lists_the_accepted_ones(no_aws_env):
    with pytest.raises(TfdistCloudError) as error:
        get_driver("ec2", credentials={"access_key_id": "AKIA-secret-ish"})

    assert "access_key_id" in str(error.value)
    assert "accepted keys: access_key, secret_key, session_token" in str(error.value)
    assert "AKIA-secret-ish" not in str(error.value)


def test_ec2_from_env_with_driver_options_for_an_emulated_endpoint(no_aws_env, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")

    driver = get_driver("ec2", driver_options=dict(host="127.0.0.1", port=5000, secure=False, signature_version="4"))

    assert (driver.key, driver.secret, driver.region_name) == ("AKIAENV", "env-secret", "eu-west-1")
    assert (driver.connection.host, driver.connection.port, driver.secure) == ("127.0.0.1", 5000, False)
    assert driver.signature_version == "4"


def test_explicit_credentials_and_region_win_over_env(no_aws_env, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAENV")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")

    driver = get_driver("ec2", region="us-west-2", credentials=dict(access_key="AKIAARG", secret_key="arg-secret"))

    assert (driver.key, driver.secret, driver.region_name) == ("AKIAARG", "arg-secret", "us-west-2")


def test_registered_driver_by_import_path():
    register_driver("dotted", "libcloud.compute.drivers.dummy.DummyNodeDriver")

    driver = get_driver("dotted", credentials={"creds": 3})

    assert isinstance(driver, DummyNodeDriver)
    assert len(driver.list_nodes()) == 3


@pytest.mark.parametrize("name", ["tfdist", "a", "team-7-run", "x" * 40])
def test_valid_cluster_names(name):
    assert validate_cluster_name(name) == name


@pytest.mark.parametrize("name", ["", "7up", "Upper", "under_score", "trailing.dot", "x" * 41, None])
def test_invalid_cluster_names_name_the_field(name):
    with pytest.raises(ClusterError, match=r"^clusters\[0\]: "):
        validate_cluster_name(name, field="clusters[0]")


def test_tags_go_in_the_create_argument_of_each_cloud(cloud):
    tags = {"tfdist_cluster": "c"}
    assert tag_create_kwargs(type("EC2", (), {"type": "ec2"})(), tags) == {"ex_metadata": tags}
    assert tag_create_kwargs(type("GCE", (), {"type": "gce"})(), tags) == {"ex_labels": tags}
    assert tag_create_kwargs(type("Azure", (), {"type": "azure_arm"})(), tags) == {"ex_tags": tags}
    assert tag_create_kwargs(get_driver("fake"), tags, {"ex_metadata": {"owner": "me"}}) == {
        "ex_metadata": {"owner": "me", "tfdist_cluster": "c"}}
    assert tag_create_kwargs(get_driver("dummy"), tags) == {}


def test_node_identity_from_tags_ignores_untagged_and_malformed_nodes(cloud):
    cloud.add("tfdist-worker-3", {"tfdist_cluster": "tfdist", "tfdist_role": "worker", "tfdist_index": "3"})
    cloud.add("named-like-worker-1")  # name fits the pattern, but this driver keeps tags and it has none
    cloud.add("bad-role", {"tfdist_cluster": "tfdist", "tfdist_role": "master", "tfdist_index": "0"})
    cloud.add("bad-cluster", {"tfdist_cluster": "{{ evil }}", "tfdist_role": "ps", "tfdist_index": "0"})

    found = list_cluster_nodes(get_driver("fake"))

    assert [(node.name, identity) for node, identity in found] == [("tfdist-worker-3", ("tfdist", "worker", 3))]


def test_node_identity_from_the_name_when_the_driver_keeps_no_tags():
    driver = DummyNodeDriver(0)  # its own nodes are named dummy-1 and dummy-2
    node = Node("9", "my-big-run-evaluator-12", "running", [], [], driver)

    assert node_identity(node) == ("my-big-run", "evaluator", 12)
    assert [node_identity(n) for n in driver.list_nodes()] == [None, None]


def test_node_to_dict_is_json_safe():
    driver = DummyNodeDriver(0)
    extra = {"tags": {"k": "v"}, "zone": NodeLocation(1, "z", "US", driver), "ids": [1, object()], "instance_type": "m5"}
    node = Node("i-1", "c-ps-0", "running", ["203.0.113.1"], ["10.0.0.1"], driver, extra=extra)

    assert node_to_dict(node, "private") == {
        "id": "i-1", "name": "c-ps-0", "cluster": "c", "role": "ps", "index": 0, "state": "running",
        "public_ips": ["203.0.113.1"], "private_ips": ["10.0.0.1"], "address": "10.0.0.1",
        "size": "m5", "image": None, "spot": False, "owner": None,
        "extra": {"tags": {"k": "v"}, "ids": [1], "instance_type": "m5"},
    }


def test_pick_address_prefers_the_kind_asked_then_falls_back():
    assert pick_address(["1.1.1.1"], ["10.0.0.1"], "public") == "1.1.1.1"
    assert pick_address(["1.1.1.1"], ["10.0.0.1"], "private") == "10.0.0.1"
    assert pick_address([], ["10.0.0.1"], "public") == "10.0.0.1"
    assert pick_address([], [], "public") is None


def batched(driver, connect, requests):
    return ["batched %s" % "+".join(request["name"] for request in requests)] * len(requests)


def test_create_nodes_uses_the_batch_create_of_the_cloud(cloud, monkeypatch):
    monkeypatch.setitem(_clouds.PROVIDERS, "dummy", CloudProvider("dummy", batch_create=batched))
    same_shape = [{"name": "a", "size": "s"}, {"name": "b", "size": "s"}]

    assert _libcloud.create_nodes(get_driver("fake"), lambda: get_driver("fake"), same_shape) == ["batched a+b"] * 2


def test_create_nodes_makes_one_batch_per_role_and_every_batch_at_once(cloud, monkeypatch):
    monkeypatch.setitem(_clouds.PROVIDERS, "dummy", CloudProvider("dummy", batch_create=batched))
    driver = get_driver("fake")
    size, image = driver.list_sizes()[0], driver.list_images()[0]
    requests = [{"name": name, "size": size, "image": image, "ex_metadata": {"tfdist_role": name.split("-", maxsplit=1)[0]}}
                for name in ("worker-0", "ps-0", "worker-1", "ps-1", "chief-0")]

    results = _libcloud.create_nodes(driver, lambda: get_driver("fake"), requests)

    # A role's nodes share a batch (one call makes them, with that role's tags); a lone node is created as it is.
    assert results[:4] == ["batched worker-0+worker-1", "batched ps-0+ps-1"] * 2
    assert results[4].name == "chief-0"


def test_create_nodes_does_not_batch_requests_of_different_shapes(cloud, monkeypatch):
    monkeypatch.setitem(_clouds.PROVIDERS, "dummy", CloudProvider("dummy", batch_create=batched))
    driver = get_driver("fake")
    requests = [{"name": "c-worker-0", "size": driver.list_sizes()[0], "image": driver.list_images()[0]},
                {"name": "c-worker-1", "size": driver.list_sizes()[1], "image": driver.list_images()[0]}]

    results = _libcloud.create_nodes(driver, lambda: get_driver("fake"), requests)

    assert "batched" not in results
    assert [node.name for node in results] == ["c-worker-0", "c-worker-1"]


def test_a_node_of_the_cluster_without_a_valid_index_still_belongs_to_it(cloud):
    # What an interrupted batch create of tfdist before 0.5.0 left: tagged with cluster and role, index not yet set.
    cloud.add("tfdist-worker-pending", {"tfdist_cluster": "tfdist", "tfdist_role": "worker", "tfdist_index": "pending"})

    found = list_cluster_nodes(get_driver("fake"), "tfdist")

    assert [identity for node, identity in found] == [("tfdist", "worker", None)]


def test_a_node_made_in_a_run_of_indexes_is_the_runs_first_index_plus_its_launch_index(cloud):
    run = {"tfdist_cluster": "tfdist", "tfdist_role": "worker", "tfdist_first_index": "4"}
    cloud.add("tfdist-worker-4-6", run, extra={"tags": run, "launch_index": 2})
    # Its own index wins (a lone node, every node made before 0.5.0); a run's node whose place is unknown has none.
    lone = dict(run, tfdist_index="9")
    cloud.add("tfdist-worker-9", lone, extra={"tags": lone, "launch_index": 0})
    cloud.add("tfdist-worker-4-6", run)

    found = list_cluster_nodes(get_driver("fake"), "tfdist")

    assert [identity for node, identity in found] == [
        ("tfdist", "worker", 6), ("tfdist", "worker", 9), ("tfdist", "worker", None)]


def test_unknown_region_is_refused_naming_the_field_before_any_call():
    with pytest.raises(TfdistCloudError, match="region: unknown region 'mars-north-1' for provider 'ec2'"):
        get_driver("ec2", region="mars-north-1", credentials={"access_key": "a", "secret_key": "b"})


def test_refused_credentials_name_the_credentials_and_their_variables():
    from libcloud.common.types import InvalidCredsError

    message = _libcloud.explain_error("ec2", InvalidCredsError("AuthFailure: not validated"))

    assert message.startswith("credentials: the ec2 provider refused them: AuthFailure")
    assert "AWS_ACCESS_KEY_ID" in message and "AWS_SECRET_ACCESS_KEY" in message
    assert _libcloud.explain_error("ec2", RuntimeError("boom")) == "ec2 provider error: boom"
