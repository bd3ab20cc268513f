"""The plan line of a role with zones and sizes in order of preference, the lines of what a deploy routed around, and
the RADL write-out of such a role."""

from ansible_collections.tfdist.cluster.plugins.filter.cluster import tf_plan_line, tf_routed_lines
from ansible_collections.tfdist.cluster.plugins.module_utils._radl import dump_cluster, parse_cluster


def test_the_plan_line_names_the_first_zone_then_where_the_nodes_go_on_a_capacity_refusal():
    spec = {"role": "worker", "count": 2, "size": ["g4dn.xlarge", "g5.xlarge"], "image": "ami-1"}
    plan = {"worker": {"to_create": ["demo-worker-0", "demo-worker-1"], "to_remove": [], "spot": False,
                       "zone": "us-east-1a", "fallbacks": ["us-east-1b", "g5.xlarge"]}}

    assert tf_plan_line(spec, plan, []) == (
        "worker: 2 x g4dn.xlarge (ami-1) in us-east-1a (then us-east-1b, g5.xlarge): "
        "create demo-worker-0, demo-worker-1")


def test_a_role_with_one_size_and_no_zones_has_no_zone_in_its_line():
    spec = {"role": "chief", "count": 1, "size": "m5.xlarge", "image": "ami-1"}

    assert tf_plan_line(spec, {"chief": {"to_create": [], "to_remove": []}}, []) == "chief: 1 x m5.xlarge (ami-1)"


def test_a_role_s_sizes_in_order_of_preference_are_written_to_radl_as_the_first():
    text = dump_cluster({"workers": 2, "cloud": "aws", "region": "us-east-1",
                         "nodes": {"worker": {"size": ["g4dn.xlarge", "g5.xlarge"], "image": "ami-0abc", "gpus": 1}}})

    assert parse_cluster(text, "written.radl")["nodes"]["worker"]["size"] == "g4dn.xlarge"


def test_the_routed_lines_name_each_refusal_then_where_the_roles_went():
    result = {"routed": [{"role": "worker", "size": "g4dn.xlarge", "zone": "us-east-1a", "refusal": "capacity",
                          "why": "worker: AWS refused g4dn.xlarge in us-east-1a: no capacity"}],
              "placed": {"worker": {"size": "g4dn.xlarge", "zone": "us-east-1b"},
                         "chief": {"size": "m5.xlarge", "zone": "us-east-1b"}}}

    assert tf_routed_lines(result) == ["routed around: worker: AWS refused g4dn.xlarge in us-east-1a: no capacity",
                                       "placed: chief m5.xlarge in us-east-1b, worker g4dn.xlarge in us-east-1b"]
    assert tf_routed_lines({"routed": [], "placed": {"chief": {"size": "m5.xlarge", "zone": "us-east-1a"}}}) == []
