"""Where libcloud_node sends a role's nodes after a capacity refusal: zones first, then sizes, and the cluster in one
zone unless it may spread (next_place, preference, pin_zones, role_sizes)."""

import pytest
from libcloud.compute.base import Node, NodeLocation

from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import NodeIdentity, TfdistCloudError
from ansible_collections.tfdist.cluster.plugins.modules.libcloud_node import (
    ROUTABLE_REFUSALS,
    next_place,
    pin_zones,
    preference,
    role_sizes,
    validate_roles,
)


def walk(role, zone_count, size_count, spread, placement=None):
    """Every placement the cluster goes through while `role` is refused wherever it goes."""
    placement = placement or {role: (0, 0)}
    steps = [placement]
    while True:
        placement = next_place(placement, role, zone_count, size_count, spread)
        if placement is None:
            return steps
        steps.append(placement)


def test_a_refused_role_tries_its_size_in_every_zone_before_its_next_size():
    assert [step["worker"] for step in walk("worker", 2, 2, spread=True)] == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_one_zone_and_one_size_leave_nowhere_to_go():
    assert next_place({"worker": (0, 0)}, "worker", 1, 1, spread=False) is None


def test_without_spread_the_whole_cluster_follows_the_refused_role_to_its_zone():
    placement = {"chief": (0, 0), "worker": (0, 0), "ps": (1, 0)}

    moved = next_place(placement, "worker", 2, 2, spread=False)

    assert moved == {"chief": (0, 1), "worker": (0, 1), "ps": (1, 1)}
    # Out of zones: the worker's next size, and the cluster back in the first zone with it.
    assert next_place(moved, "worker", 2, 2, spread=False) == {"chief": (0, 0), "worker": (1, 0), "ps": (1, 0)}


def test_with_spread_only_the_refused_role_moves():
    placement = {"chief": (0, 0), "worker": (0, 0)}

    assert next_place(placement, "worker", 2, 1, spread=True) == {"chief": (0, 0), "worker": (0, 1)}


def test_only_the_zone_s_refusals_are_routed_around():
    assert set(ROUTABLE_REFUSALS) == {"capacity", "spot_capacity", "size_unavailable"}


@pytest.mark.parametrize("size, sizes", [
    ("g4dn.xlarge", ["g4dn.xlarge"]),
    (["g4dn.xlarge", "g5.xlarge"], ["g4dn.xlarge", "g5.xlarge"]),
    (None, []),
])
def test_a_size_is_one_size_or_a_list_in_order_of_preference(size, sizes):
    assert role_sizes(size) == sizes


def spec(role="worker", size=None, location=None, count=2):
    return dict(role=role, count=count, size=size, image="ami-1", location=location, constraints=None)


def test_validation_keeps_the_first_size_as_the_role_s_size():
    roles = [spec(size=["g4dn.xlarge", "g5.xlarge"])]

    validate_roles(roles)

    assert (roles[0]["size"], roles[0]["sizes"]) == ("g4dn.xlarge", ["g4dn.xlarge", "g5.xlarge"])


def test_a_size_list_with_something_else_than_names_is_refused_naming_the_option():
    with pytest.raises(TfdistCloudError, match=r"roles\[0\].size must be a size or a list of sizes"):
        validate_roles([spec(size=["g4dn.xlarge", {"name": "g5.xlarge"}])])


def test_the_plan_names_the_first_zone_then_the_other_zones_then_the_other_sizes():
    roles = [spec(size=["g4dn.xlarge", "g5.xlarge"])]
    validate_roles(roles)

    assert preference(roles[0], ["us-east-1a", "us-east-1b"]) == ("us-east-1a", ["us-east-1b", "g5.xlarge"])
    assert preference(roles[0], []) == (None, ["g5.xlarge"])


def zone(name):
    return NodeLocation(name, name, "US", None)


def running(role, zone_name):
    node = Node(id=role + "-1", name="c-%s-0" % role, state="running", public_ips=[], private_ips=[], driver=None,
                extra={"availability": zone_name})
    return node, NodeIdentity("c", role, 0)


def test_nodes_that_run_keep_the_cluster_in_their_zone():
    a, b = zone("us-east-1a"), zone("us-east-1b")
    places = {"worker": (["g4dn.xlarge"], [a, b])}

    assert pin_zones(dict(places), [running("chief", "us-east-1b")], spread=False) == {"worker": (["g4dn.xlarge"], [b])}
    # With spread, only the role's own nodes hold its zone.
    assert pin_zones(dict(places), [running("chief", "us-east-1b")], spread=True) == places
    assert pin_zones(dict(places), [running("worker", "us-east-1b")], spread=True) == {"worker": (["g4dn.xlarge"], [b])}
