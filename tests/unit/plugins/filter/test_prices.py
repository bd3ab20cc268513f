"""The whole price: where each role's price comes from (the profile's price_per_hour over libcloud's list, or the
newer list the user fetched), the plan's cost line, and a plan against tf_budget (the refusal, what it cannot
check, and the deadline a budget gives a running job)."""

import json
import os
import subprocess
import sys

import pytest
from libcloud.compute.providers import get_driver

from ansible_collections.tfdist.cluster.plugins.filter.cluster import tf_budget_check, tf_node_specs, tf_plan_line
from ansible_collections.tfdist.cluster.plugins.module_utils._provider import TfdistCloudError
from ansible_collections.tfdist.cluster.plugins.module_utils._sizes import (
    budget_check, budget_seconds, cluster_cost, role_price)


@pytest.fixture(scope="module")
def ec2_sizes():
    driver = get_driver("ec2")("key", "secret", region="us-east-1")
    return dict((size.id, size) for size in driver.list_sizes())


def test_the_profiles_price_wins_over_libclouds_list(ec2_sizes):
    assert role_price(ec2_sizes["m5.large"]) == (0.096, "list")
    assert role_price(ec2_sizes["m5.large"], 0.1) == (0.1, "profile")


def test_a_size_libcloud_has_no_price_for_is_priced_by_the_profile(ec2_sizes):
    # libcloud 3.9's list has no us-east-1 price for m5.xlarge, tfdist's default chief on aws.
    assert role_price(ec2_sizes["m5.xlarge"]) == (None, None)
    assert role_price(ec2_sizes["m5.xlarge"], "0.192") == (0.192, "profile")


@pytest.mark.parametrize("price", [0, -1, "cheap", True])
def test_a_price_that_is_no_positive_number_names_its_field(ec2_sizes, price):
    refused = r"^roles\[0\].price_per_hour: must be a price in dollars an hour, more than 0, got "
    with pytest.raises(TfdistCloudError, match=refused):
        role_price(ec2_sizes["m5.large"], price, "roles[0].price_per_hour")


def test_the_cost_line_says_which_sizes_are_priced_by_the_profile_and_names_those_still_unknown():
    cost = cluster_cost([
        {"role": "chief", "count": 1, "size": "m5.xlarge", "price": 0.192, "price_source": "profile", "spot": False},
        {"role": "worker", "count": 2, "size": "g4dn.xlarge", "price": 0.526, "price_source": "list", "spot": False},
        {"role": "ps", "count": 1, "size": "x9.odd", "price": None, "price_source": None, "spot": False},
    ])
    assert cost["per_hour"] == pytest.approx(1.244) and cost["unpriced"] == ["x9.odd"]
    assert cost["summary"] == ("cost: $1.244/h for 4 nodes at list prices, chief nodes priced by the profile, "
                               "not counting x9.odd (no price known)")


def test_the_plan_line_names_the_source_of_a_price_only_when_it_is_not_libclouds_list():
    role = {"role": "chief", "count": 1, "size": "m5.xlarge", "image": "ami-1"}
    profile = {"chief": {"to_create": ["c-chief-0"], "to_remove": [], "price": 0.192, "price_source": "profile"}}
    listed = {"chief": dict(profile["chief"], price_source="list")}
    assert tf_plan_line(role, profile, []) == "chief: 1 x m5.xlarge (ami-1), $0.192/h each (profile): create c-chief-0"
    assert tf_plan_line(role, listed, []) == "chief: 1 x m5.xlarge (ami-1), $0.192/h each: create c-chief-0"


def test_a_radl_file_giving_a_role_another_size_drops_the_profiles_price():
    profile = {"chief": {"size": "m5.xlarge", "image": "ami-1", "price_per_hour": 0.192},
               "worker": {"size": "g4dn.xlarge", "image": "ami-1", "price_per_hour": 0.5}}
    specs = tf_node_specs(profile, {"worker": {"size": "g5.xlarge"}, "chief": {"size": "m5.xlarge"}})
    assert specs["chief"]["price_per_hour"] == 0.192
    assert "price_per_hour" not in specs["worker"]
    assert "price_per_hour" not in tf_node_specs(profile, {"chief": {"cpus": 8}})["chief"]


def test_a_radl_file_s_sizes_in_order_of_preference_keep_the_profile_s_price_only_when_they_are_the_profile_s():
    sizes = ["g4dn.xlarge", "g5.xlarge"]
    profile = {"worker": {"size": sizes, "image": "ami-1", "price_per_hour": 0.5}}
    assert tf_node_specs(profile, {"worker": {"size": list(sizes)}})["worker"] == dict(profile["worker"])
    moved = tf_node_specs(profile, {"worker": {"size": ["g5.xlarge", "g4dn.xlarge"]}})["worker"]
    assert moved == {"size": ["g5.xlarge", "g4dn.xlarge"], "image": "ami-1"}
    one = {"worker": {"size": "g4dn.xlarge", "image": "ami-1", "price_per_hour": 0.5}}
    assert "price_per_hour" not in tf_node_specs(one, {"worker": {"size": sizes}})["worker"]


def test_updated_price_list_fetched_with_libcloud_is_read_instead_of_the_bundled_one(tmp_path):
    """download_pricing_file() writes ~/.libcloud/pricing.json; libcloud reads it in place of its own list."""
    (tmp_path / ".libcloud").mkdir()
    (tmp_path / ".libcloud" / "pricing.json").write_text(json.dumps(
        {"updated": 1, "compute": {"ec2_linux": {"m5.xlarge": {"us-east-1": 0.192}}}, "storage": {}}))
    script = (
        "from libcloud.compute.providers import get_driver\n"
        "from ansible_collections.tfdist.cluster.plugins.module_utils._sizes import cluster_cost, role_price\n"
        "size = [s for s in get_driver('ec2')('k', 's', region='us-east-1').list_sizes() if s.id == 'm5.xlarge'][0]\n"
        "price, source = role_price(size)\n"
        "print(price, source)\n"
        "print(cluster_cost([dict(role='chief', count=1, size=size.id, price=price, price_source=source,"
        " spot=False)])['summary'])\n")
    run = subprocess.run([sys.executable, "-c", script], env=dict(os.environ, HOME=str(tmp_path), PYTHONPATH=os.pathsep.join(sys.path)),
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        "0.192 list", "cost: $0.192/h for 1 node at list prices of %s/.libcloud/pricing.json" % tmp_path]


PRICED = {"per_hour": 3.42, "unpriced": []}


def test_a_plan_over_the_budget_is_refused_naming_both_figures():
    error, warning = budget_check(PRICED, 5.0, 2.0, "tf_budget", "tf_deadline", "2h")
    assert error == "tf_budget: the plan costs $3.42/h; with tf_deadline=2h that is $6.84, over the budget of $5.00"
    assert warning == ""
    assert budget_check(PRICED, 6.84, 2.0) == ("", "")  # exactly the budget is within it


def test_known_prices_alone_over_the_budget_are_refused_and_say_what_they_leave_out():
    error, dummy = budget_check({"per_hour": 3.42, "unpriced": ["m5.xlarge"]}, 5.0, 2.0, "tf_budget", "tf_deadline",
                                "2h")
    assert error.startswith("tf_budget: the plan costs $3.42/h (not counting m5.xlarge: no price known); "
                            "with tf_deadline=2h that is $6.84, over the budget of $5.00")


def test_what_cannot_be_checked_is_a_warning_not_a_refusal():
    error, warning = budget_check({"per_hour": 0.5, "unpriced": ["m5.xlarge", "x9.odd"]}, 5.0, 2.0, "tf_budget")
    assert error == ""
    assert warning.startswith("tf_budget: cannot check the plan against the budget of $5.00: no price is known for "
                              "m5.xlarge, x9.odd")
    error, warning = budget_check(PRICED, 5.0, None, "tf_budget", "tf_deadline")
    assert error == "" and "without tf_deadline" in warning and "$3.42/h" in warning


def test_the_filter_reads_the_deadline_and_does_nothing_without_a_budget_or_a_cost():
    assert tf_budget_check(PRICED, "5", "90m", ["tf_budget", "tf_deadline"])["error"] == (
        "tf_budget: the plan costs $3.42/h; with tf_deadline=90m that is $5.13, over the budget of $5.00")
    assert tf_budget_check(PRICED, "", "90m") == {"error": "", "warning": ""}
    assert tf_budget_check(None, "5", "90m") == {"error": "", "warning": ""}  # cloud=local: this machine is free


def test_a_budget_gives_a_running_job_a_deadline():
    assert budget_seconds(5.0, 2.5) == 7200.0
    assert budget_seconds(5.0, 0) is None and budget_seconds(0, 2.5) is None
