"""Spot capacity and the cluster's hourly cost: which clouds can, what the plan says (filters and the rules they use)."""

import pytest

from ansible_collections.tfdist.cluster.plugins.filter.cluster import tf_plan_line, tf_role_nodes, tf_task_layout
from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import spot_error
from ansible_collections.tfdist.cluster.plugins.module_utils._radl import dump_cluster, parse_cluster
from ansible_collections.tfdist.cluster.plugins.module_utils._sizes import cluster_cost


@pytest.mark.parametrize("provider", ["ec2", "gce"])
def test_ec2_and_gce_drivers_can_ask_for_spot(provider):
    assert spot_error(provider, "tf_spot") == ""


@pytest.mark.parametrize("provider", ["azure_arm", "openstack", "docker", "dummy"])
def test_other_clouds_are_refused_naming_the_field(provider):
    error = spot_error(provider, "tf_spot", "somecloud")
    assert error.startswith("tf_spot: cloud=somecloud has no spot capacity (libcloud's %s driver" % provider)
    assert error.endswith("spot nodes run on ec2 (spot), gce (preemptible)")


def test_local_has_no_spot_capacity():
    assert spot_error("", "tf_spot", "local").startswith(
        "tf_spot: cloud=local has no spot capacity (it runs on this machine")


def test_cost_sums_list_prices_and_the_spot_share():
    cost = cluster_cost([
        {"role": "chief", "count": 1, "size": "m5.xlarge", "price": 0.192, "spot": False},
        {"role": "worker", "count": 4, "size": "g4dn.xlarge", "price": 0.526, "spot": True},
        {"role": "ps", "count": 1, "size": "m5.large", "price": 0.096, "spot": False},
        {"role": "evaluator", "count": 0, "size": "x", "price": None, "spot": True},
    ])
    assert cost["per_hour"] == pytest.approx(2.392) and cost["spot_per_hour"] == pytest.approx(2.104)
    assert (cost["nodes"], cost["spot_nodes"], cost["unpriced"]) == (6, 4, [])
    assert cost["summary"] == ("cost: $2.392/h for 6 nodes at list prices; "
                               "spot: 4 of 6 nodes (88% of the price), billed at the lower spot price")


def test_cost_names_sizes_without_a_price():
    cost = cluster_cost([{"role": "worker", "count": 2, "size": "Standard_D4s_v5", "price": None, "spot": False}])
    assert cost["summary"] == "cost: $0/h for 2 nodes at list prices, not counting Standard_D4s_v5 (no price known)"


def test_spot_roles_and_the_plan_line():
    layout = tf_task_layout(2, 1)
    nodes = tf_role_nodes(layout, {"worker": {"size": "g4dn.xlarge", "image": "ami-1", "spot": True}})
    assert [(n["role"], n["spot"]) for n in nodes] == [
        ("chief", False), ("worker", True), ("ps", False), ("evaluator", False)]
    assert all(n["spot"] for n in tf_role_nodes(layout, {}, spot="true"))

    plan = {"worker": {"to_create": ["c-worker-0", "c-worker-1"], "to_remove": [], "spot": True, "price": 0.526}}
    assert tf_plan_line(nodes[1], plan, []) == (
        "worker: 2 x g4dn.xlarge (ami-1), spot, $0.526/h each: create c-worker-0, c-worker-1")


RADL = """\
system chief ( instance_type = 'm5.large' and disk.0.image.url = 'aws://us-east-1/ami-1' )
system worker ( instance_type = 'g4dn.xlarge' and spot = 'yes' and disk.0.image.url = 'aws://us-east-1/ami-1' )
system ps ( instance_type = 'm5.large' and disk.0.image.url = 'aws://us-east-1/ami-1' )
deploy chief 1
deploy worker 2
deploy ps 1
"""


def test_radl_spot_yes_reads_and_writes_back():
    shape = parse_cluster(RADL, "x.radl")
    assert shape["nodes"]["worker"].get("spot") is True and not shape["nodes"]["ps"].get("spot")
    written = dump_cluster(dict(shape, chief=1))
    assert written.count("spot = 'yes'") == 1
    assert parse_cluster(written, "back.radl")["nodes"]["worker"]["spot"] is True
