"""tfdist.cluster.libcloud_node against a fake libcloud cloud (see tests/unit/conftest.py)."""

import json
import socket

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.tfdist.cluster.plugins.modules import libcloud_node

TAGS = ("tfdist_cluster", "tfdist_role", "tfdist_index")


def roles(**counts):
    return [dict(role=role, count=count, size="Small", image="1") for role, count in counts.items()]


@pytest.fixture
def run(capsys, cloud):
    """Run the module with the given options; returns its JSON result (with `failed` on failure)."""
    def run_module(check_mode=False, diff=False, **options):
        args = dict(provider="fake", cluster="tfdist", wait_timeout=30)
        args.update(options, _ansible_check_mode=check_mode, _ansible_diff=diff)
        cloud.calls.clear()
        with patch_module_args(args), pytest.raises(SystemExit):
            libcloud_node.main()
        return json.loads(capsys.readouterr().out)
    return run_module


def names(nodes):
    return sorted(node["name"] for node in nodes)


def test_present_creates_exact_counts_named_and_tagged(run, cloud):
    cloud.add("web-1")  # not a tfdist node: must be left alone

    result = run(roles=roles(chief=1, worker=3))

    assert result["changed"] is True
    expected = ["tfdist-chief-0", "tfdist-worker-0", "tfdist-worker-1", "tfdist-worker-2"]
    assert names(result["created"]) == expected
    assert cloud.names() == expected + ["web-1"]
    worker1 = next(node for node in cloud.nodes if node.name == "tfdist-worker-1")
    assert {key: worker1.extra["tags"][key] for key in TAGS} == {
        "tfdist_cluster": "tfdist", "tfdist_role": "worker", "tfdist_index": "1"}
    assert [(n["role"], n["index"]) for n in result["nodes"]] == [
        ("chief", 0), ("worker", 0), ("worker", 1), ("worker", 2)]
    for node in result["nodes"]:
        assert node["address"] == node["public_ips"][0]
        assert node["state"] == "running"
        assert (node["size"], node["image"]) == ("1", "1")
    assert result["removed"] == []


def test_second_identical_run_changes_nothing_with_one_list_call(run, cloud):
    first = run(roles=roles(chief=1, worker=2))
    second = run(roles=roles(chief=1, worker=2))

    assert second["changed"] is False
    assert second["created"] == [] and second["removed"] == []
    assert names(second["nodes"]) == names(first["nodes"])
    assert cloud.calls["list_nodes"] == 1


def test_scale_down_removes_highest_indexes(run, cloud):
    run(roles=roles(chief=1, worker=4))

    result = run(roles=roles(chief=1, worker=2))

    assert result["changed"] is True
    assert names(result["removed"]) == ["tfdist-worker-2", "tfdist-worker-3"]
    assert cloud.names() == ["tfdist-chief-0", "tfdist-worker-0", "tfdist-worker-1"]
    assert result["plan"]["worker"] == {"to_create": [], "to_remove": ["tfdist-worker-3", "tfdist-worker-2"],
                                        "spot": False, "price": 4.0, "price_source": "list"}


def test_scale_up_fills_the_lowest_free_index(run, cloud):
    run(roles=roles(worker=3))
    cloud.nodes = [node for node in cloud.nodes if node.name != "tfdist-worker-1"]

    result = run(roles=roles(worker=4))

    assert names(result["created"]) == ["tfdist-worker-1", "tfdist-worker-3"]
    assert [n["index"] for n in result["nodes"]] == [0, 1, 2, 3]


def test_roles_not_listed_are_left_alone(run, cloud):
    run(roles=roles(chief=1, ps=1))

    result = run(roles=roles(chief=1))

    assert result["changed"] is False
    assert "tfdist-ps-0" in cloud.names()


def test_check_mode_plans_and_changes_nothing(run, cloud):
    run(roles=roles(worker=2))

    result = run(check_mode=True, diff=True, roles=roles(chief=1, worker=1))

    assert result["changed"] is True
    assert result["plan"] == {"chief": {"to_create": ["tfdist-chief-0"], "to_remove": [], "spot": False, "price": 4.0,
                                        "price_source": "list"},
                              "worker": {"to_create": [], "to_remove": ["tfdist-worker-1"], "spot": False, "price": 4.0,
                                         "price_source": "list"}}
    assert result["cost"]["summary"] == "cost: $8/h for 2 nodes at list prices"
    assert result["created"] == [] and result["removed"] == []
    assert cloud.names() == ["tfdist-worker-0", "tfdist-worker-1"]
    assert names(result["nodes"]) == ["tfdist-worker-0", "tfdist-worker-1"]
    assert result["diff"] == {"before": {"nodes": ["tfdist-worker-0", "tfdist-worker-1"]},
                              "after": {"nodes": ["tfdist-chief-0", "tfdist-worker-0"]}}


def test_a_roles_price_per_hour_wins_over_the_list_price_and_the_plan_says_so(run, cloud):
    priced = [dict(roles(chief=1)[0], price_per_hour=0.5), roles(worker=2)[0]]

    result = run(check_mode=True, roles=priced)

    assert (result["plan"]["chief"]["price"], result["plan"]["chief"]["price_source"]) == (0.5, "profile")
    assert (result["plan"]["worker"]["price"], result["plan"]["worker"]["price_source"]) == (4.0, "list")
    assert result["cost"]["per_hour"] == 8.5
    assert result["cost"]["summary"] == "cost: $8.5/h for 3 nodes at list prices, chief nodes priced by the profile"


def test_a_price_per_hour_of_0_is_refused_naming_the_role(run, cloud):
    result = run(check_mode=True, roles=[dict(roles(chief=1)[0], price_per_hour=0)])

    assert result["failed"] is True
    assert result["msg"].startswith("roles[0].price_per_hour (chief nodes): must be a price in dollars an hour")


def test_absent_removes_every_node_of_the_cluster_only(run, cloud):
    run(roles=roles(chief=1, worker=2, evaluator=1))
    run(cluster="other", roles=roles(worker=1))

    result = run(state="absent")

    assert result["changed"] is True
    assert names(result["removed"]) == ["tfdist-chief-0", "tfdist-evaluator-0", "tfdist-worker-0", "tfdist-worker-1"]
    assert result["nodes"] == []
    assert cloud.names() == ["other-worker-0"]
    assert run(state="absent")["changed"] is False


@pytest.mark.parametrize("cluster", ["Tfdist", "1st", "has_underscore", "x" * 41])
def test_invalid_cluster_name_names_the_field_and_creates_nothing(run, cloud, cluster):
    result = run(cluster=cluster, roles=roles(worker=1))

    assert result["failed"] is True
    assert result["msg"].startswith("cluster: %r is not a valid cluster name" % cluster)
    assert cloud.nodes == []


def test_negative_count_names_the_field_and_creates_nothing(run, cloud):
    result = run(roles=roles(chief=1, worker=-1))

    assert result["failed"] is True
    assert "roles[1].count" in result["msg"]
    assert cloud.nodes == []


@pytest.mark.parametrize("field", ["size", "image"])
def test_unknown_size_or_image_fails_before_creating_anything(run, cloud, field):
    specs = roles(chief=1, worker=2)
    specs[1][field] = "no-such-thing"

    result = run(roles=specs)

    assert result["failed"] is True
    assert "roles[1].%s (worker nodes): no item with id or name 'no-such-thing'" % field in result["msg"]
    assert cloud.nodes == []


def test_user_data_for_a_cloud_that_takes_none_fails_before_creating_anything(run, cloud):
    result = run(roles=roles(worker=1), user_data={"user": "debian", "public_key": "ssh-ed25519 AAAA tfdist-demo"})

    assert result["failed"] is True
    assert result["msg"].startswith("user_data: tfdist gives user-data to nodes on docker, ec2, gce, openstack only")
    assert cloud.nodes == []


def test_failed_create_destroys_what_the_run_created(run, cloud):
    cloud.fail_names = {"tfdist-worker-1"}

    result = run(roles=roles(chief=1, worker=3))

    assert result["failed"] is True
    assert "Failed to create tfdist-worker-1 (role worker, index 1): quota exceeded" in result["msg"]
    assert result["refusal"] == "unknown"  # a plain exception: no code of a cloud's says what it is
    assert "Destroyed the 3 node(s) this run had created" in result["msg"]
    assert cloud.nodes == []


def test_driver_that_ignores_node_names_is_refused(run, cloud):
    result = run(provider="dummy", roles=roles(worker=1))  # libcloud's own DummyNodeDriver names nodes dummy-N

    assert result["failed"] is True
    assert "Failed to create tfdist-worker-0 (role worker, index 0): the driver named it 'dummy-3'" in result["msg"]


def test_driver_without_tags_is_read_back_by_node_name(run, cloud):
    first = run(provider="fake_untagged", roles=roles(chief=1, worker=2))
    second = run(provider="fake_untagged", roles=roles(chief=1, worker=1))

    assert [(n["role"], n["index"]) for n in first["nodes"]] == [("chief", 0), ("worker", 0), ("worker", 1)]
    assert names(second["removed"]) == ["tfdist-worker-1"]


def test_wait_for_port_succeeds_when_the_port_answers(run, cloud):
    with socket.create_server(("", 0)) as server:
        result = run(roles=roles(worker=2), wait_for_port=server.getsockname()[1])

    assert result["changed"] is True
    assert len(result["created"]) == 2


def test_wait_for_port_times_out_naming_the_nodes(run, cloud, monkeypatch):
    monkeypatch.setattr(libcloud_node, "PORT_POLL", 0.1)
    with socket.create_server(("127.0.0.1", 0)) as server:
        closed_port = server.getsockname()[1]

    result = run(roles=roles(worker=1), wait_for_port=closed_port, wait_timeout=1)

    assert result["failed"] is True
    assert "waiting for port %d on tfdist-worker-0" % closed_port in result["msg"]
    assert names(result["created"]) == ["tfdist-worker-0"]


def test_pending_nodes_are_waited_for_even_when_nothing_changes(run, cloud, monkeypatch):
    monkeypatch.setattr(libcloud_node, "WAIT_PERIOD", 0.1)
    run(roles=roles(worker=1))
    cloud.nodes[0].state = "pending"  # as left by an interrupted run
    planned = run(check_mode=True, roles=roles(worker=1))
    assert planned["changed"] is False and planned["nothing_to_do"] is False

    result = run(roles=roles(worker=1), wait_timeout=1)

    assert result["failed"] is True
    assert result["msg"].startswith("Nodes tfdist-worker-0 did not reach running with a public address")


def test_stopped_node_of_the_cluster_is_started_not_duplicated(run, cloud):
    run(roles=roles(chief=1, worker=2))
    stopped = next(node for node in cloud.nodes if node.name == "tfdist-worker-1")
    stopped.state = "stopped"

    planned = run(check_mode=True, roles=roles(chief=1, worker=2))
    assert planned["changed"] is True and names(planned["started"]) == ["tfdist-worker-1"]
    assert planned["nothing_to_do"] is False
    assert stopped.state == "stopped" and cloud.calls["start_node"] == 0

    result = run(roles=roles(chief=1, worker=2))
    assert result["changed"] is True
    assert names(result["started"]) == ["tfdist-worker-1"] and result["created"] == []
    assert stopped.state == "running"
    assert cloud.names() == ["tfdist-chief-0", "tfdist-worker-0", "tfdist-worker-1"]
    assert run(roles=roles(chief=1, worker=2))["changed"] is False
    assert run(check_mode=True, roles=roles(chief=1, worker=2))["nothing_to_do"] is True


def test_nodes_without_an_index_are_replaced_not_kept(run, cloud):
    # As an interrupted run of tfdist before 0.5.0 left them (it tagged a batch's nodes `pending` until numbered).
    cloud.add("tfdist-worker-pending", {"tfdist_cluster": "tfdist", "tfdist_role": "worker", "tfdist_index": "pending"})
    cloud.add("tfdist-worker-pending", {"tfdist_cluster": "tfdist", "tfdist_role": "worker", "tfdist_index": "pending"})

    result = run(roles=roles(chief=1, worker=2))

    assert result["changed"] is True
    assert cloud.names() == ["tfdist-chief-0", "tfdist-worker-0", "tfdist-worker-1"]
    assert sorted(node["name"] for node in result["removed"]) == ["tfdist-worker-pending"] * 2
