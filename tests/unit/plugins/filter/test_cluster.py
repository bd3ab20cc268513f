"""The cluster model: inventory hosts -> TF tasks -> TF_CONFIG cluster spec."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.tfdist.cluster.plugins.filter.cluster import (
    tf_cluster_spec,
    tf_config,
    tf_count_error,
    tf_default,
    tf_flags,
    tf_launch_order,
    tf_launches,
    tf_leader,
    tf_task_folders,
    tf_task_layout,
    tf_tasks,
)
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._cluster import coordinated


def test_layout_has_one_chief_and_indexes_each_type_from_zero():
    layout = tf_task_layout(2, 1, 1)
    assert [(t["type"], t["index"]) for t in layout] == [
        ("chief", 0), ("worker", 0), ("worker", 1), ("ps", 0), ("evaluator", 0)]
    assert all("port" not in t for t in layout)


def test_layout_on_one_node_gives_consecutive_ports():
    layout = tf_task_layout("2", "1", 0, port_base="5000")
    assert [t["port"] for t in layout] == [5000, 5001, 5002, 5003]


def test_one_node_hosting_every_task():
    hostvars = {"local": {"tfdist_private_ip": "127.0.0.1", "tfdist_tasks": tf_task_layout(2, 1, port_base=2222)}}
    tasks = tf_tasks(hostvars, ["local"])
    assert [t["name"] for t in tasks] == ["chief-0", "worker-0", "worker-1", "ps-0"]
    assert tf_cluster_spec(tasks) == {
        "chief": ["127.0.0.1:2222"],
        "worker": ["127.0.0.1:2223", "127.0.0.1:2224"],
        "ps": ["127.0.0.1:2225"],
    }


def test_one_task_per_node_from_tags_uses_private_addresses():
    hostvars = {
        "c-worker-1": {"tfdist_role": "worker", "tfdist_index": 1, "tfdist_private_ip": "10.0.0.3", "ansible_host": "1.2.3.4"},
        "c-chief-0": {"tfdist_role": "chief", "tfdist_index": 0, "tfdist_private_ip": "10.0.0.1"},
        "c-worker-0": {"tfdist_role": "worker", "tfdist_index": 0, "ansible_host": "10.0.0.2"},
        "c-ps-0": {"tfdist_role": "ps", "tfdist_index": 0, "tfdist_private_ip": "10.0.0.4"},
        "c-evaluator-0": {"tfdist_role": "evaluator", "tfdist_index": 0, "tfdist_private_ip": "10.0.0.5"},
    }
    tasks = tf_tasks(hostvars, list(hostvars), 2222)
    spec = tf_cluster_spec(tasks)
    assert spec == {"chief": ["10.0.0.1:2222"], "worker": ["10.0.0.2:2222", "10.0.0.3:2222"], "ps": ["10.0.0.4:2222"]}
    assert [t["name"] for t in tf_launch_order(tasks)] == ["ps-0", "worker-0", "worker-1", "evaluator-0", "chief-0"]


def test_task_folders_are_where_the_launch_puts_each_task():
    hostvars = {"local": {"tfdist_private_ip": "127.0.0.1", "tfdist_tasks": tf_task_layout(2, 1, port_base=2222)}}
    tasks = tf_tasks(hostvars, ["local"])
    folders = tf_task_folders(tasks, "/var/lib/tfdist/demo")
    assert folders == [{"name": name, "dir": "/var/lib/tfdist/demo/tasks/" + name}
                       for name in ("chief-0", "worker-0", "worker-1", "ps-0")]
    launched = tf_launches(tasks, "/var/lib/tfdist/demo", "demo", tf_cluster_spec(tasks), tasks[0], "python")
    assert {launch["dir"] for launch in launched} == {folder["dir"] for folder in folders}
    # Destroy knows only the folders it finds: their names give the same folders.
    assert tf_task_folders([t["name"] for t in tasks], "/var/lib/tfdist/demo") == folders


@pytest.mark.parametrize("ps, expected", [
    # A parameter_server job: its ps and workers only serve, and stop as soon as the chief announces the end.
    (1, {"ps-0": 0, "worker-0": 0, "worker-1": 0, "evaluator-0": None, "chief-0": None}),
    # Without ps (multi_worker_mirrored) a worker ends its own loop: it keeps the grace, as the evaluator does.
    (0, {"worker-0": None, "worker-1": None, "evaluator-0": None, "chief-0": None}),
])
def test_only_the_tasks_that_serve_stop_at_the_announced_end(ps, expected):
    hostvars = {"local": {"tfdist_private_ip": "127.0.0.1", "tfdist_tasks": tf_task_layout(2, ps, 1, port_base=2222)}}
    tasks = tf_tasks(hostvars, ["local"])
    launched = tf_launches(tasks, "/w", "demo", tf_cluster_spec(tasks), tf_leader(tasks), "python")
    assert {launch["name"].split("/")[1]: launch["end_grace"] for launch in launched} == expected


@pytest.mark.parametrize(
    "hostvars, message",
    [
        ({"a": {"tfdist_role": "ps", "tfdist_index": 0}}, "without a chief needs a worker 0 to lead it; found ps-0"),
        ({"a": {"tfdist_tasks": [{"type": "chief", "index": 0, "port": 1}, {"type": "chief", "index": 1, "port": 2}]}},
         "one chief or none, found 2"),
        ({"a": {"tfdist_role": "chief", "tfdist_index": 0},
          "b": {"tfdist_role": "worker", "tfdist_index": 1}}, "worker task indexes must be 0..0"),
        ({"a": {"tfdist_role": "chief", "tfdist_index": 0},
          "b": {"tfdist_role": "chief", "tfdist_index": 0}}, "chief-0 is defined twice"),
        ({"a": {"tfdist_role": "janitor", "tfdist_index": 0}}, "unknown TF task type 'janitor'"),
        ({"a": {"ansible_host": "x"}}, "neither tfdist_tasks nor tfdist_role"),
        ({"a": {"tfdist_tasks": [{"type": "chief", "index": 0, "port": 1}, {"type": "ps", "index": 0, "port": 1}]}},
         "share one address and port"),
    ],
)
def test_inconsistent_clusters_are_refused(hostvars, message):
    with pytest.raises(AnsibleFilterError, match=message):
        tf_tasks(hostvars, list(hostvars))


def test_node_specs_take_radl_sizes_and_images_over_the_profile():
    from ansible_collections.tfdist.cluster.plugins.filter.cluster import tf_node_specs

    profile = {"chief": {"size": "m5.xlarge", "image": "ami-1"}, "worker": {"size": "g4dn.xlarge", "image": "ami-1"}}
    radl = {"worker": {"size": "p3.2xlarge", "image": None, "gpus": 1}, "ps": {"size": "m5.large", "image": "ami-2"}}

    assert tf_node_specs(profile, radl) == {
        "chief": {"size": "m5.xlarge", "image": "ami-1"},
        "worker": {"size": "p3.2xlarge", "image": "ami-1"},
        "ps": {"size": "m5.large", "image": "ami-2"},
    }


def test_plan_line_says_what_deploy_would_create_and_what_runs():
    from ansible_collections.tfdist.cluster.plugins.filter.cluster import tf_plan_line

    spec = {"role": "worker", "count": 3, "size": "g4dn.xlarge", "image": "ami-1"}
    plan = {"worker": {"to_create": ["c-worker-2"], "to_remove": []}}
    nodes = [{"name": "c-worker-0", "role": "worker"}, {"name": "c-worker-1", "role": "worker"},
             {"name": "c-chief-0", "role": "chief"}]

    assert tf_plan_line(spec, plan, nodes) == (
        "worker: 3 x g4dn.xlarge (ami-1): running c-worker-0, c-worker-1; create c-worker-2")


def test_role_nodes_cover_every_role_of_the_layout():
    from ansible_collections.tfdist.cluster.plugins.filter.cluster import tf_role_nodes

    nodes = tf_role_nodes(tf_task_layout(2, 1), {"worker": {"size": "g4", "create_args": {"a": 2}}}, {"a": 1, "b": 1})
    assert [(n["role"], n["count"]) for n in nodes] == [("chief", 1), ("worker", 2), ("ps", 1), ("evaluator", 0)]
    assert nodes[1]["size"] == "g4" and nodes[1]["create_args"] == {"a": 2, "b": 1}  # the role's own args win


@pytest.mark.parametrize("name, error", [
    ("demo-1", ""),
    ("Bad_Name!", "cluster_name: 'Bad_Name!' is not a valid cluster name: use lowercase letters"),
    ("x" * 41, "cluster_name: '%s' is not a valid cluster name" % ("x" * 41)),
])
def test_cluster_names_follow_one_rule(name, error):
    from ansible_collections.tfdist.cluster.plugins.filter.cluster import tf_cluster_name_error

    assert tf_cluster_name_error(name).startswith(error) and bool(error) == bool(tf_cluster_name_error(name))


CLASSIC = [{"type": "worker", "index": 0, "name": "worker-0", "host": "a", "address": "10.0.0.1", "port": 2222},
           {"type": "worker", "index": 1, "name": "worker-1", "host": "b", "address": "10.0.0.2", "port": 2222},
           {"type": "ps", "index": 0, "name": "ps-0", "host": "c", "address": "10.0.0.3", "port": 2222}]


def test_a_cluster_without_a_chief_is_led_by_worker_0_and_flags_name_no_chief():
    spec = tf_cluster_spec(CLASSIC)
    assert spec == {"worker": ["10.0.0.1:2222", "10.0.0.2:2222"], "ps": ["10.0.0.3:2222"]}
    assert tf_leader(CLASSIC)["name"] == "worker-0"
    assert tf_flags(CLASSIC[1], spec, "flags") == [
        "--ps_hosts=10.0.0.3:2222", "--worker_hosts=10.0.0.1:2222,10.0.0.2:2222", "--job_name=worker", "--task_index=1"]
    assert tf_config(CLASSIC[0], spec) == {"cluster": spec, "task": {"type": "worker", "index": 0}}


def test_estimator_era_scripts_get_a_master_instead_of_a_chief():
    chief = {"type": "chief", "index": 0}
    spec = {"chief": ["10.0.0.9:2222"], "worker": ["10.0.0.1:2222"]}
    assert tf_config(chief, spec, "master") == {
        "cluster": {"master": ["10.0.0.9:2222"], "worker": ["10.0.0.1:2222"]}, "task": {"type": "master", "index": 0}}
    assert "--master_host=10.0.0.9:2222" in tf_flags(chief, spec, "flags", "master")
    with pytest.raises(AnsibleFilterError, match="chief name: 'boss'"):
        tf_config(chief, spec, "boss")


@pytest.mark.parametrize(
    "counts, strategy, message",
    [
        ({"chief": 2, "workers": 2}, None, "tf_chief: a cluster has one chief or none"),
        ({"chief": 0, "workers": 0, "ps": 1}, None, "tf_workers: a cluster without a chief (tf_chief=0) needs"),
        ({"chief": 0, "workers": 1, "ps": 1}, "parameter_server", "tf_workers: the parameter_server strategy without"),
        ({"chief": 1, "workers": 0, "ps": 1}, "parameter_server", "tf_workers: the parameter_server strategy needs"),
        ({"chief": 1, "workers": 2, "ps": 0}, "parameter_server", "tf_ps: the parameter_server strategy needs"),
        ({"chief": "x", "workers": 2}, None, "tf_chief: must be a whole number"),
        ({"chief": 0, "workers": 2, "ps": 1}, "parameter_server", ""),
        ({"chief": 0, "workers": 1}, "multi_worker_mirrored", ""),
    ],
)
def test_task_counts_are_checked_by_one_rule(counts, strategy, message):
    error = tf_count_error(counts, strategy)
    assert error.startswith(message) and bool(error) == bool(message)


def test_parameter_server_without_a_chief_is_coordinated_by_worker_0():
    spec = tf_cluster_spec(CLASSIC)
    view = {"chief": ["10.0.0.1:2222"], "worker": ["10.0.0.2:2222"], "ps": ["10.0.0.3:2222"]}
    assert coordinated(spec, "worker", 0) == (view, "chief", 0)
    assert coordinated(spec, "worker", 1) == (view, "worker", 0)
    assert coordinated(spec, "ps", 0) == (view, "ps", 0)
    with_chief = dict(spec, chief=["10.0.0.9:2222"])
    assert coordinated(with_chief, "worker", 1) == (with_chief, "worker", 1)


def test_a_shared_default_unknown_by_name_is_refused_naming_the_known_ones():
    assert tf_default("internal_ports") == ["2222", "8020", "9864", "9866", "9867", "9870"]
    with pytest.raises(AnsibleFilterError, match="no default named 'prot' [(]known: port, hdfs_ports, "):
        tf_default("prot")
