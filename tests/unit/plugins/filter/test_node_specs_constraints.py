"""tf_node_specs carries sizes or constraints from the cloud profile and a RADL file; tf_plan_line says why."""

from ansible_collections.tfdist.cluster.plugins.filter.cluster import tf_node_specs, tf_plan_line

PROFILE = {"chief": {"size": "m5.xlarge", "image": "ami-1"},
           "worker": {"size": "g4dn.xlarge", "image": "ami-1"},
           "ps": {"cpus": 2, "memory": "8g", "image": "ami-1", "create_args": {"a": 1}}}


def test_profile_constraints_become_the_role_constraints():
    specs = tf_node_specs(PROFILE, {})
    assert specs["ps"] == {"image": "ami-1", "create_args": {"a": 1},
                           "constraints": {"cpus": 2, "memory": "8g", "source": "libcloud_nodes.ps"}}
    assert specs["worker"] == {"size": "g4dn.xlarge", "image": "ami-1"}


def test_radl_constraints_replace_the_profile_size_and_name_the_system():
    radl = {"worker": {"size": None, "image": "ami-2", "gpus": 1, "cpus": 4, "memory": "16g", "system": "wn"},
            "chief": {"size": None, "image": None, "gpus": 0}}
    specs = tf_node_specs(PROFILE, radl, "cluster.radl")
    assert specs["worker"] == {"image": "ami-2", "constraints": {
        "cpus": 4, "memory": "16g", "gpus": 1, "source": "cluster.radl: system 'wn'"}}
    assert specs["chief"] == {"size": "m5.xlarge", "image": "ami-1"}


def test_a_radl_size_wins_over_profile_constraints():
    specs = tf_node_specs(PROFILE, {"ps": {"size": "r5.large", "image": None, "gpus": 0}})
    assert specs["ps"] == {"size": "r5.large", "image": "ami-1", "create_args": {"a": 1}}


def test_a_profile_size_wins_over_its_own_constraints():
    specs = tf_node_specs({"worker": {"size": "g5.xlarge", "gpus": 1, "image": "ami-1"}}, {})
    assert specs["worker"] == {"size": "g5.xlarge", "image": "ami-1"}


def test_baked_images_replace_the_profiles_and_a_radl_image_still_wins():
    baked = {"chief": "ami-baked", "worker": "ami-baked", "evaluator": "ami-baked"}
    specs = tf_node_specs(PROFILE, {"worker": {"size": None, "image": "ami-radl"}}, None, images=baked)
    assert specs["chief"] == {"size": "m5.xlarge", "image": "ami-baked"}
    assert specs["worker"]["image"] == "ami-radl"
    assert specs["ps"]["image"] == "ami-1"  # no image baked for it
    assert "evaluator" not in specs  # a role the profile has no node for gets none from a baked image


def test_plan_line_shows_the_chosen_size_and_why():
    spec = {"role": "worker", "count": 2, "image": "ami-1", "constraints": {"gpus": 1}}
    reason = "g4dn.xlarge: 4 vCPUs, 16 GiB, 1 GPU, $0.526/h: the cheapest of 48 x86_64 sizes with gpu.count >= 1"
    plan = {"worker": {"to_create": ["c-worker-0", "c-worker-1"], "to_remove": [], "size": "g4dn.xlarge",
                       "size_reason": reason}}
    assert tf_plan_line(spec, plan, []) == (
        "worker: 2 x g4dn.xlarge (ami-1): create c-worker-0, c-worker-1; size " + reason)
