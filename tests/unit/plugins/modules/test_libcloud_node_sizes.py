"""libcloud_node's roles[].constraints against the fake cloud (libcloud's dummy sizes: Small 128 MiB $4,
Medium 512 MiB $8, Big 4096 MiB $32, XXL Big 8192 MiB $64; see tests/unit/conftest.py)."""

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.tfdist.cluster.plugins.modules import libcloud_node


@pytest.fixture
def run(capsys, cloud):
    def run_module(check_mode=False, **options):
        args = dict(provider="fake", cluster="tfdist", wait_timeout=30)
        args.update(options, _ansible_check_mode=check_mode)
        with patch_module_args(args), pytest.raises(SystemExit):
            libcloud_node.main()
        return json.loads(capsys.readouterr().out)
    return run_module


def worker(count=2, **node):
    return [dict(dict(role="worker", count=count, image="1"), **node)]


def test_check_mode_plans_the_cheapest_fitting_size_and_says_why(run, cloud):
    result = run(check_mode=True, roles=worker(constraints={"memory": "500mi"}))

    assert cloud.names() == []
    assert result["plan"]["worker"] == {
        "to_create": ["tfdist-worker-0", "tfdist-worker-1"], "to_remove": [], "size": "2",
        "size_reason": "Medium: vCPUs unknown, 0.5 GiB, GPUs unknown, $8/h: the cheapest of 3 x86_64 sizes "
                       "with memory.size >= 500mi", "spot": False, "price": 8.0, "price_source": "list"}


def test_nodes_get_the_chosen_size_and_a_rerun_still_shows_it(run, cloud):
    result = run(roles=worker(constraints={"memory": "1gi"}))

    assert [node["size"] for node in result["created"]] == ["3", "3"]  # Big, 4096 MiB
    again = run(roles=worker(constraints={"memory": "1gi"}))
    assert again["changed"] is False and again["plan"]["worker"]["size"] == "3"


def test_an_explicit_size_wins_over_constraints(run, cloud):
    result = run(roles=worker(size="1", constraints={"memory": "1gi"}))
    assert [node["size"] for node in result["created"]] == ["1", "1"]
    assert "size" not in result["plan"]["worker"]


@pytest.mark.parametrize("check_mode", [True, False])
def test_no_size_fits_error_names_the_system_and_creates_nothing(run, cloud, check_mode):
    result = run(check_mode=check_mode, roles=worker(
        constraints={"memory": "100gi", "source": "cluster.radl: system 'wn'"}))

    assert result["failed"] is True
    assert result["msg"] == ("cluster.radl: system 'wn': no dummy size meets memory.size >= 100gi: memory.size >= 100gi "
                             "is more than any of the 4 x86_64 sizes has (the most: 8 GiB, XXL Big)")
    assert cloud.names() == []


def test_constraints_without_source_name_the_role_option(run, cloud):
    result = run(roles=[dict(role="chief", count=1, size="1", image="1"),
                        dict(role="worker", count=1, image="1", constraints={"memory": "64gi"})])
    assert result["msg"].startswith("roles[1].constraints (worker nodes): no dummy size meets memory.size >= 64gi")
    assert cloud.names() == []


def test_bad_memory_is_refused_before_anything(run, cloud):
    result = run(roles=worker(constraints={"memory": "16", "source": "libcloud_nodes.worker"}))
    assert result["msg"].startswith("libcloud_nodes.worker.memory: '16' is no memory size")
    assert cloud.names() == []


def test_a_role_without_size_or_constraints_cannot_get_nodes(run, cloud):
    result = run(roles=worker())
    assert result["msg"] == "roles[0].size (or roles[0].constraints) is required to create worker nodes"
