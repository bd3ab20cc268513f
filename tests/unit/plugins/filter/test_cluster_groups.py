"""The layout of a cluster from inventory groups named after the TF roles (a consumer's own inventory)."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.tfdist.cluster.plugins.filter.cluster import tf_cluster_spec, tf_leader, tf_tasks


def names(tasks):
    return [(t["name"], t["host"]) for t in tasks]


def test_plain_static_inventory_with_ps_and_worker_groups_indexes_in_host_order():
    # What a consumer writes: no tfdist group, no tfdist host variables; worker 0 leads (no chief).
    groups = {"all": ["w-b", "w-a", "p"], "ungrouped": [], "worker": ["w-b", "w-a"], "ps": ["p"]}
    hostvars = {"w-b": {"ansible_host": "10.0.0.2"}, "w-a": {"ansible_host": "10.0.0.3"}, "p": {}}
    tasks = tf_tasks(hostvars, groups=groups, cluster_group="tfdist_consumer", default_port=2300)
    assert names(tasks) == [("worker-0", "w-b"), ("worker-1", "w-a"), ("ps-0", "p")]
    assert tf_cluster_spec(tasks) == {"worker": ["10.0.0.2:2300", "10.0.0.3:2300"], "ps": ["p:2300"]}
    assert tf_leader(tasks)["host"] == "w-b"


def test_cluster_group_chooses_the_hosts_and_role_groups_their_tasks():
    # Only the cluster's hosts count: a worker of another cluster does not shift the indexes.
    groups = {"tfdist_demo": ["c", "w1"], "chief": ["c"], "worker": ["other", "w1"]}
    hostvars = {"c": {}, "w1": {}, "other": {}}
    tasks = tf_tasks(hostvars, groups=groups, cluster_group="tfdist_demo")
    assert names(tasks) == [("chief-0", "c"), ("worker-0", "w1")]
    # The old call (hosts given, no groups) still works from host variables alone.
    assert names(tf_tasks({"x": {"tfdist_role": "worker"}}, ["x"])) == [("worker-0", "x")]


def test_host_variables_win_over_groups():
    groups = {"worker": ["a", "b"], "ps": ["a"]}
    hostvars = {"a": {"tfdist_role": "worker", "tfdist_index": 1}, "b": {}}
    tasks = tf_tasks(hostvars, groups=groups)
    # a is worker-1 by its variables (not ps-0 by its group); b is the first worker without variables.
    assert names(tasks) == [("worker-0", "b"), ("worker-1", "a")]


def test_custom_group_names_as_the_infrastructure_manager_names_systems():
    groups = {"front": ["m"], "wn": ["n1", "n2"], "ps": ["not-a-ps-here"]}
    hostvars = {"m": {}, "n1": {}, "n2": {}, "not-a-ps-here": {}}
    tasks = tf_tasks(hostvars, groups=groups, role_groups={"chief": "front", "worker": "wn", "ps": "params"})
    assert names(tasks) == [("chief-0", "m"), ("worker-0", "n1"), ("worker-1", "n2")]


def test_a_host_in_two_role_groups_runs_two_tasks_on_two_ports():
    groups = {"worker": ["solo"], "ps": ["solo"]}
    tasks = tf_tasks({"solo": {"ansible_host": "10.1.1.1"}}, groups=groups, default_port=2222)
    assert [(t["name"], t["port"]) for t in tasks] == [("worker-0", 2222), ("ps-0", 2223)]


def test_consumer_inventory_with_none_of_the_role_groups_names_the_groups_looked_for():
    # The case: host box in a group trainers, the role used alone (cluster name consumer).
    groups = {"all": ["box"], "ungrouped": [], "trainers": ["box"]}
    with pytest.raises(AnsibleFilterError) as error:
        tf_tasks({"box": {}}, groups=groups, cluster_group="tfdist_consumer")
    message = str(error.value)
    assert "none of the inventory groups tfdist_consumer, chief, worker, ps, evaluator has hosts" in message
    assert "tfdist_role" in message


def test_a_cluster_host_in_no_role_group_names_the_groups_looked_for():
    groups = {"trainers": ["box", "w"], "worker": ["w"]}
    with pytest.raises(AnsibleFilterError) as error:
        tf_tasks({"box": {}, "w": {}}, groups=groups, cluster_group="trainers", role_groups={"ps": "params"})
    assert "host box is in none of the inventory groups chief, worker, params, evaluator" in str(error.value)
    assert "neither tfdist_tasks nor tfdist_role" in str(error.value)


def test_unknown_role_in_role_groups_is_refused():
    with pytest.raises(AnsibleFilterError, match="'trainer' is not a TF task type"):
        tf_tasks({}, groups={"worker": []}, role_groups={"trainer": "trainers"})


def test_two_chief_hosts_are_refused():
    with pytest.raises(AnsibleFilterError, match="one chief or none"):
        tf_tasks({"a": {}, "b": {}}, groups={"chief": ["a", "b"], "worker": []})


def test_an_infrastructure_manager_inventory_talks_on_the_private_network():
    """The IM names groups after the RADL systems and hosts IP_N, with ansible_host public and IM_NODE_PRIVATE_IP."""
    hostvars = {"54.1.1.1_0": {"ansible_host": "54.1.1.1", "IM_NODE_PRIVATE_IP": "10.0.0.1"},
                "54.1.1.2_1": {"ansible_host": "54.1.1.2", "IM_NODE_PRIVATE_IP": "10.0.0.2"},
                "10.0.0.3_2": {"ansible_host": "10.0.0.3", "IM_NODE_PRIVATE_IP": "10.0.0.3"}}
    groups = {"all": list(hostvars), "ps": ["10.0.0.3_2"], "worker": ["54.1.1.1_0", "54.1.1.2_1"]}
    found = tf_tasks(hostvars, groups=groups, default_port=2222)
    assert [(t["name"], t["address"]) for t in found] == [
        ("worker-0", "10.0.0.1"), ("worker-1", "10.0.0.2"), ("ps-0", "10.0.0.3")]
