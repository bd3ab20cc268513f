"""The network, subnet and firewall of a cluster on GCE, and how its nodes are made: GceAccess (_cloud_gce.py) reached
through _libcloud.access_for and node_kwargs as the libcloud_access and libcloud_node modules reach it.

No emulator runs GCE, so the driver is made with create_autospec from libcloud's GCENodeDriver and the methods tfdist
goes through run libcloud's own code, creating nodes included, over a fake GCE project that keeps state and refuses
what GCE refuses (libcloud_fakes.FakeGce). The assertions read the request bodies GCE gets and what they leave: which
network the nodes are on, what reaches them from where, which key and service account they get.
"""


import pytest

from libcloud.compute.drivers.gce import GCENodeDriver, GCENodeImage, GCENodeSize

from ansible_collections.tfdist.cluster.plugins.module_utils._cloud_gce import (
    ALLOW_PRIORITY,
    DENY_PRIORITY,
    SUBNET_RANGE,
    GceAccess,
)
from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import TfdistCloudError, access_for, node_kwargs
from ansible_collections.tfdist.cluster.tests.unit.plugins.module_utils.libcloud_fakes import (
    GCE_REGION,
    GCE_ZONE,
    FakeGce,
    gce_link,
)

CLUSTER = "demo"
NAME = "tfdist-demo"
CONTROLLER = "203.0.113.7/32"
NEW_CONTROLLER = "203.0.113.99/32"
PUBKEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHRmZGlzdC10ZXN0LWtleQ tfdist@controller"
INTERNAL = ("8020", "2222-2229")
NETWORK = gce_link("global/networks/" + NAME)
SUBNET = gce_link("regions/%s/subnetworks/%s" % (GCE_REGION, NAME))
# A network of the user's, with a subnet, other VMs and rules of its own: the default network's, and one at gcloud's
# default priority that lets SSH in from anywhere.
CORP = "corp"
CORP_SUBNET = "corp-europe"
USERS = {"network": CORP, "subnet": CORP_SUBNET}
INTERNET = "198.51.100.20"
CONTROLLER_IP = "203.0.113.7"
CORP_VM = "10.10.0.50"


@pytest.fixture
def gce():
    return FakeGce()


@pytest.fixture
def corp(gce):
    gce.add_network(CORP)
    gce.add_subnet(CORP_SUBNET, CORP, "10.10.0.0/20")
    gce.add_rule("corp-allow-internal", CORP, allowed=[{"IPProtocol": "all"}], sourceRanges=["10.10.0.0/16"],
                 priority=65534)
    gce.add_rule("corp-allow-ssh", CORP, allowed=[{"IPProtocol": "tcp", "ports": ["22"]}],
                 sourceRanges=["0.0.0.0/0"])
    return gce


def gce_access(cloud, ssh=(CONTROLLER,), ports=INTERNAL, public=(), options=None, owner=None):
    return access_for(cloud.driver, CLUSTER, list(ssh), list(ports), "ubuntu", options or {}, list(public),
                      owner=owner)


def create_node(cloud, facts, name="demo-worker-0", create_args=None):
    """A node made as libcloud_node makes it: node_kwargs (then the profile's create_args) to libcloud's create_node.
    Returns the body GCE got."""
    size = GCENodeSize("1", "n2-standard-4", None, None, None, None, cloud.driver,
                       extra={"selfLink": gce_link("zones/%s/machineTypes/n2-standard-4" % GCE_ZONE)})
    image = GCENodeImage("2", "ubuntu-2404", cloud.driver,
                         extra={"selfLink": gce_link("global/images/ubuntu-2404", "ubuntu-os-cloud")})
    cloud.driver.create_node(name, size, image, **dict(node_kwargs(cloud.driver, facts), **(create_args or {})))
    return cloud.requests[-1][2]


def metadata(body):
    return dict((item["key"], item["value"]) for item in body["metadata"]["items"])


# ---------------------------------------------------------------------------------------------------------
# The cluster's own network


def test_present_makes_the_clusters_network_its_subnet_and_rules_on_it_only(gce):
    gce.add_network("default", auto=True)  # the project's default network: not the cluster's
    access = gce_access(gce, public=["6006"])

    facts = access.present(PUBKEY)

    method, path, network = gce.requests[0]
    assert (method, path) == ("POST", "/global/networks")
    assert network["name"] == NAME and network["autoCreateSubnetworks"] is False  # custom mode: no subnet anywhere
    method, path, subnet = gce.requests[1]
    assert (method, path) == ("POST", "/regions/%s/subnetworks" % GCE_REGION)
    assert subnet["name"] == NAME and subnet["ipCidrRange"] == SUBNET_RANGE == "10.42.0.0/20"
    assert subnet["network"] == NETWORK and subnet["region"] == gce_link("regions/" + GCE_REGION)
    bodies = dict((body["name"], body) for method, path, body in gce.requests[2:])
    assert [(method, path) for method, path, body in gce.requests[2:]] == [("POST", "/global/firewalls")] * 2
    ssh, internal = bodies[NAME + "-ssh"], bodies[NAME + "-internal"]
    assert ssh["allowed"] == [{"IPProtocol": "tcp", "ports": ["22", "6006"]}]
    assert ssh["sourceRanges"] == [CONTROLLER] and "sourceTags" not in ssh
    # The internal ports from the cluster's nodes only: by the network tag that only they carry.
    assert internal["allowed"] == [{"IPProtocol": "tcp", "ports": ["2222-2229", "8020"]}]
    assert internal["sourceTags"] == [NAME] and "sourceRanges" not in internal
    for rule in (ssh, internal):
        assert (rule["network"], rule["direction"], rule["priority"]) == (NETWORK, "INGRESS", ALLOW_PRIORITY)
        assert rule["targetTags"] == [NAME]
    # Alone on its network, the cluster needs no deny rule: GCE lets nothing else in.
    assert sorted(gce.firewalls) == [NAME + "-internal", NAME + "-ssh"]
    assert (facts["network"], facts["subnet"], facts["public_key"]) == (NETWORK, SUBNET, PUBKEY)
    assert access.changes == ["network " + NAME, "subnet %s (10.42.0.0/20 in %s)" % (NAME, GCE_REGION),
                              "firewall %s-internal" % NAME, "firewall %s-ssh" % NAME]


def test_the_subnet_range_is_the_profiles_when_it_names_one(gce):
    gce_access(gce, options={"subnet_range": "192.168.8.0/24"}).present(PUBKEY)

    assert gce.subnets[(GCE_REGION, NAME)]["ipCidrRange"] == "192.168.8.0/24"


def test_a_second_present_changes_nothing(gce):
    first = gce_access(gce, public=["6006"]).present(PUBKEY)
    made = len(gce.requests)

    access = gce_access(gce, public=["6006"])
    facts = access.present(PUBKEY)

    assert access.changes == [] and len(gce.requests) == made
    assert facts == first


def test_what_reaches_a_node_only_ssh_from_the_controller_and_internal_ports_from_the_cluster(gce):
    create_node(gce, gce_access(gce).present(PUBKEY))
    create_node(gce, gce_access(gce).present(PUBKEY), name="demo-worker-1")

    assert gce.admits("demo-worker-0", 22, CONTROLLER_IP)
    assert not gce.admits("demo-worker-0", 22, INTERNET)
    assert not gce.admits("demo-worker-0", 2222, CONTROLLER_IP)  # the TF port is not public
    assert gce.admits("demo-worker-0", 2222, "10.42.0.3", source_tags=[NAME])  # from the other node
    assert not gce.admits("demo-worker-0", 9870, "10.42.0.3", source_tags=[NAME])  # not an internal port


def test_a_node_is_made_on_the_clusters_subnet_with_its_key_only_and_no_service_account(gce):
    facts = gce_access(gce).present(PUBKEY)

    body = create_node(gce, facts)

    assert gce.requests[-1][:2] == ("POST", "/zones/%s/instances" % GCE_ZONE)
    nic = body["networkInterfaces"][0]
    assert (nic["network"], nic["subnetwork"]) == (NETWORK, SUBNET)
    assert body["tags"] == {"items": [NAME]}
    assert metadata(body) == {"ssh-keys": "ubuntu:" + PUBKEY, "block-project-ssh-keys": "true"}
    # libcloud gives a node the project's default service account unless told otherwise; tfdist tells it none.
    assert body["serviceAccounts"] == []


def test_libcloud_alone_would_give_the_node_the_default_service_account(gce):
    facts = gce_access(gce).present(PUBKEY)
    kwargs = node_kwargs(gce.driver, facts)
    del kwargs["ex_service_accounts"]

    gce.driver.create_node("demo-worker-0", GCENodeSize("1", "n2", None, None, None, None, gce.driver,
                                                        extra={"selfLink": gce_link("machineTypes/n2")}),
                           GCENodeImage("2", "u", gce.driver, extra={"selfLink": gce_link("global/images/u")}),
                           **kwargs)

    # Why node_kwargs passes an empty list: what the request would carry without it.
    assert [account["email"] for account in gce.requests[-1][2]["serviceAccounts"]] == ["default"]


def test_a_service_account_the_profile_names_goes_to_the_nodes(gce):
    account = "trainer@tfdist-test.iam.gserviceaccount.com"
    facts = gce_access(gce, options={"service_account": account}).present(PUBKEY)

    body = create_node(gce, facts)

    assert body["serviceAccounts"] == [{"email": account,
                                        "scopes": ["https://www.googleapis.com/auth/cloud-platform"]}]


def test_user_data_keeps_the_key_and_the_block_of_project_keys(gce):
    from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import user_data_kwargs
    facts = gce_access(gce).present(PUBKEY)
    kwargs = node_kwargs(gce.driver, facts)
    # As libcloud_node hands a node its user-data (libcloud_user_data: true in the gce profile).
    kwargs.update(user_data_kwargs(gce.driver, {"user": "ubuntu", "public_key": PUBKEY}, kwargs))

    body = create_node(gce, facts, create_args=kwargs)

    assert set(metadata(body)) == {"ssh-keys", "block-project-ssh-keys", "user-data"}
    assert metadata(body)["block-project-ssh-keys"] == "true"


def test_destroy_removes_the_nodes_then_rules_then_subnet_then_network(gce, clock):
    facts = gce_access(gce).present(PUBKEY)
    create_node(gce, facts)
    del gce.requests[:]

    gce.driver.destroy_node(gce.node("demo-worker-0"))
    # GCE refuses to delete the subnet while it still deletes the node: retried.
    gce.in_use["/regions/%s/subnetworks/%s" % (GCE_REGION, NAME)] = 2
    access = gce_access(gce)
    access.absent()

    deletes = [path for method, path, body in gce.requests if method == "DELETE"]
    assert deletes == (["/zones/%s/instances/demo-worker-0" % GCE_ZONE,
                        "/global/firewalls/%s-internal" % NAME, "/global/firewalls/%s-ssh" % NAME]
                       + ["/regions/%s/subnetworks/%s" % (GCE_REGION, NAME)] * 3 + ["/global/networks/" + NAME])
    assert len(clock.sleeps) == 2
    assert gce.networks == {} and gce.subnets == {} and gce.firewalls == {}
    assert access.changes == ["firewall %s-internal" % NAME, "firewall %s-ssh" % NAME,
                              "subnet %s (%s)" % (NAME, GCE_REGION), "network " + NAME]


def test_destroy_gives_up_naming_the_subnet_when_a_node_stays(gce, clock):
    create_node(gce, gce_access(gce).present(PUBKEY))

    with pytest.raises(TfdistCloudError, match="could not remove subnet %s in %s: .*resourceInUse"
                       % (NAME, GCE_REGION)):
        gce_access(gce).absent()

    assert NAME in gce.networks  # still there, with the node on it


def test_absent_without_anything_left_does_nothing(gce):
    access = gce_access(gce)
    access.absent()

    assert access.changes == [] and gce.requests == []


# ---------------------------------------------------------------------------------------------------------
# A network of the user's


def test_on_the_users_network_a_deny_rule_below_tfdists_rules_keeps_the_users_rules_off_the_nodes(corp):
    gce = corp
    access = gce_access(gce, options=USERS)

    facts = access.present(PUBKEY)

    assert [(method, path) for method, path, body in gce.requests] == [("POST", "/global/firewalls")] * 3
    corp_link = gce_link("global/networks/" + CORP)
    deny = gce.requests[0][2]
    assert deny["name"] == NAME + "-deny"
    assert deny["denied"] == [{"IPProtocol": "all"}] and "allowed" not in deny
    assert (deny["sourceRanges"], deny["targetTags"], deny["direction"]) == (["0.0.0.0/0"], [NAME], "INGRESS")
    assert (deny["network"], deny["priority"]) == (corp_link, DENY_PRIORITY)
    for method, path, body in gce.requests[1:]:
        assert (body["network"], body["priority"], body["targetTags"]) == (corp_link, ALLOW_PRIORITY, [NAME])
    # Right below: the deny rule comes after tfdist's rules and before every rule of the user's but one at 0.
    assert ALLOW_PRIORITY < DENY_PRIORITY == ALLOW_PRIORITY + 1
    assert (facts["network"], facts["subnet"]) == (corp_link, gce_link("regions/%s/subnetworks/%s"
                                                                       % (GCE_REGION, CORP_SUBNET)))

    create_node(gce, facts)
    assert gce.admits("demo-worker-0", 22, CONTROLLER_IP)
    assert not gce.admits("demo-worker-0", 22, INTERNET)  # corp-allow-ssh, at priority 1000, no longer applies
    assert not gce.admits("demo-worker-0", 2222, CORP_VM)  # nor corp-allow-internal
    assert gce.admits("demo-worker-0", 2222, "10.10.0.51", source_tags=[NAME])
    assert gce.networks.keys() == {CORP} and gce.subnets.keys() == {(GCE_REGION, CORP_SUBNET)}


def test_without_the_deny_rule_the_users_rules_would_reach_the_node(corp):
    gce = corp
    create_node(gce, gce_access(gce, options=USERS).present(PUBKEY))

    del gce.firewalls[NAME + "-deny"]

    # What the deny rule is for: the user's rule lets the internet in.
    assert gce.admits("demo-worker-0", 22, INTERNET)


def test_the_users_network_stays_on_destroy(corp):
    gce = corp
    create_node(gce, gce_access(gce, options=USERS).present(PUBKEY))
    gce.driver.destroy_node(gce.node("demo-worker-0"))
    del gce.requests[:]

    access = gce_access(gce, options=USERS)
    access.absent()

    assert [(method, path) for method, path, body in gce.requests] == [
        ("DELETE", "/global/firewalls/%s-%s" % (NAME, suffix)) for suffix in ("deny", "internal", "ssh")]
    assert sorted(gce.firewalls) == ["corp-allow-internal", "corp-allow-ssh"]
    assert gce.networks.keys() == {CORP} and gce.subnets.keys() == {(GCE_REGION, CORP_SUBNET)}


def test_a_network_the_profile_names_must_exist(gce):
    with pytest.raises(TfdistCloudError, match="network: project tfdist-test has no network corp"):
        gce_access(gce, options=USERS).present(PUBKEY)

    gce.add_network(CORP)
    with pytest.raises(TfdistCloudError, match="subnet: network corp has no subnet corp-europe in region europe-west4"):
        gce_access(gce, options=USERS).present(PUBKEY)
    assert gce.requests == []


def test_an_auto_mode_network_of_the_users_without_a_subnet(gce):
    gce.add_network(CORP, auto=True)

    facts = gce_access(gce, options={"network": CORP}).present(PUBKEY)

    assert facts["subnet"] is None
    assert node_kwargs(gce.driver, facts)["ex_network"] == gce_link("global/networks/" + CORP)
    assert "ex_subnetwork" not in node_kwargs(gce.driver, facts)


# ---------------------------------------------------------------------------------------------------------
# Rules that changed


def test_a_new_controller_address_replaces_the_old_one_and_keeps_the_priority(corp):
    gce = corp
    gce_access(gce, options=USERS).present(PUBKEY)
    internal = dict(gce.firewalls[NAME + "-internal"])
    del gce.requests[:]

    access = gce_access(gce, ssh=[NEW_CONTROLLER], options=USERS)
    access.present(PUBKEY)

    assert access.changes == ["firewall %s-ssh rules" % NAME]
    [(method, path, body)] = gce.requests
    assert (method, path) == ("PUT", "/global/firewalls/%s-ssh" % NAME)
    # A PUT resets what it does not carry: the priority goes with it.
    assert body["priority"] == ALLOW_PRIORITY and body["sourceRanges"] == [NEW_CONTROLLER]
    assert gce.firewalls[NAME + "-ssh"]["priority"] == ALLOW_PRIORITY
    assert gce.firewalls[NAME + "-internal"] == internal


def test_hand_made_changes_to_the_rules_are_undone(corp):
    gce = corp
    gce_access(gce, options=USERS).present(PUBKEY)
    gce.firewalls[NAME + "-ssh"].update(sourceRanges=[CONTROLLER, "0.0.0.0/0"])
    gce.firewalls[NAME + "-internal"].update(sourceRanges=["10.0.0.0/8"], allowed=[{"IPProtocol": "all"}])
    gce.firewalls[NAME + "-deny"].update(disabled=True, priority=1000)

    access = gce_access(gce, options=USERS)
    access.present(PUBKEY)

    assert sorted(access.changes) == ["firewall %s-%s rules" % (NAME, suffix) for suffix in ("deny", "internal", "ssh")]
    ssh, internal, deny = (gce.firewalls[NAME + suffix] for suffix in ("-ssh", "-internal", "-deny"))
    assert ssh["sourceRanges"] == [CONTROLLER]
    assert "sourceRanges" not in internal and internal["allowed"][0]["ports"] == ["2222-2229", "8020"]
    assert (deny["disabled"], deny["priority"]) == (False, DENY_PRIORITY)


def test_moving_to_the_users_network_moves_the_rules(gce, corp):
    gce_access(gce).present(PUBKEY)

    access = gce_access(gce, options=USERS)
    access.present(PUBKEY)

    corp_link = gce_link("global/networks/" + CORP)
    assert {rule["network"] for name, rule in gce.firewalls.items() if name.startswith(NAME)} == {corp_link}
    assert ("DELETE", "/global/firewalls/%s-ssh" % NAME, None) in gce.requests  # GCE moves no rule
    # The cluster's own network is removed by destroy, which finds it by name.
    assert ("network", NAME, CLUSTER) in [(kind, name, cluster) for kind, ident, name, cluster, mark
                                          in GceAccess.found(gce.driver, {})]


def test_no_internal_ports_opens_no_port_between_nodes(gce):
    gce_access(gce, ports=[]).present(PUBKEY)

    # No internal rule at all (GCE reads an empty port list as every port), and the SSH rule names its ports.
    assert sorted(gce.firewalls) == [NAME + "-ssh"]
    assert gce.firewalls[NAME + "-ssh"]["allowed"] == [{"IPProtocol": "tcp", "ports": ["22"]}]


# ---------------------------------------------------------------------------------------------------------
# Check mode, the owner, the audit


def test_check_mode_lists_the_plan_and_changes_nothing(gce):
    access = gce_access(gce)
    facts = access.present(PUBKEY, check_mode=True)
    assert access.changes == ["network " + NAME, "subnet %s (10.42.0.0/20 in %s)" % (NAME, GCE_REGION),
                              "firewall %s-internal" % NAME, "firewall %s-ssh" % NAME]
    assert (facts["network"], facts["subnet"]) == (None, None) and gce.requests == []

    gce_access(gce).present(PUBKEY)
    del gce.requests[:]
    access = gce_access(gce, ssh=[NEW_CONTROLLER])
    access.present(PUBKEY, check_mode=True)
    assert access.changes == ["firewall %s-ssh rules" % NAME]

    access = gce_access(gce)
    access.absent(check_mode=True)
    assert access.changes == ["firewall %s-internal" % NAME, "firewall %s-ssh" % NAME,
                              "subnet %s (%s)" % (NAME, GCE_REGION), "network " + NAME]
    assert gce.requests == []


def test_what_tfdist_makes_carries_the_owners_mark(corp):
    gce = corp
    owner = "1f3a2b4c5d6e7f8091a2b3c4d5e6f708"
    access = gce_access(gce, owner=owner)
    access.present(PUBKEY)
    gce_access(gce, owner=owner, options=USERS).present(PUBKEY)

    made = [body for method, path, body in gce.requests if method == "POST"]
    assert len(made) == 2 + 2 + 3  # own network, subnet, its rules; then the rules on the user's network
    for body in made:
        assert body["description"] == "tfdist cluster demo (tfdist_owner=%s)" % owner, body["name"]
        assert body["name"].startswith(access.name)


@pytest.mark.parametrize("own_unmarked", [True, False])
def test_destroy_removes_rules_made_before_owners_were_marked_where_they_are_this_controllers(gce, own_unmarked):
    gce.add_network("default", auto=True)
    for suffix in ("-ssh", "-internal"):  # as tfdist 0.4 made them, on the default network
        gce.add_rule(NAME + suffix, "default", allowed=[{"IPProtocol": "tcp", "ports": ["22"]}], targetTags=[NAME],
                     sourceRanges=[CONTROLLER])
    owner = "1f3a2b4c5d6e7f8091a2b3c4d5e6f708"
    gce_access(gce, owner=owner).present(PUBKEY)

    access_for(gce.driver, CLUSTER, [CONTROLLER], list(INTERNAL), "ubuntu", {}, owner=owner,
               own_unmarked=own_unmarked).absent()

    assert sorted(gce.firewalls) == ([] if own_unmarked else [NAME + "-internal", NAME + "-ssh"])
    assert list(gce.networks) == ["default"]


def test_audit_finds_every_clusters_network_subnet_and_rules_not_the_users(corp):
    gce = corp
    gce.add_network("default", auto=True)
    gce.add_rule("default-allow-ssh", "default", allowed=[{"IPProtocol": "tcp", "ports": ["22"]}],
                 sourceRanges=["0.0.0.0/0"], priority=65534)
    gce_access(gce).present(PUBKEY)
    owner = "1f3a2b4c5d6e7f8091a2b3c4d5e6f708"
    owned = access_for(gce.driver, "demo-2", [CONTROLLER], list(INTERNAL), "ubuntu", USERS, owner=owner)
    owned.present(PUBKEY)

    found = sorted((cluster, kind, name, mark) for kind, ident, name, cluster, mark
                   in GceAccess.found(gce.driver, {}))

    assert found == [
        (CLUSTER, "firewall rule", NAME + "-internal", None), (CLUSTER, "firewall rule", NAME + "-ssh", None),
        (CLUSTER, "network", NAME, None), (CLUSTER, "subnet", NAME, None)] + [
        ("demo-2", "firewall rule", owned.name + suffix, owner) for suffix in ("-deny", "-internal", "-ssh")]


def test_node_kwargs_are_create_nodes(gce):
    kwargs = node_kwargs(gce.driver, gce_access(gce).present(PUBKEY))

    import inspect
    inspect.signature(GCENodeDriver.create_node).bind(None, "demo-worker-0", "size", "image", **kwargs)
