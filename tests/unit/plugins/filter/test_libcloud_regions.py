"""The regions the audit sweeps (libcloud_regions) and one audit result made of a libcloud_audit task looped over
regions (libcloud_audit_regions), as the provision role's audit and destroy read it."""

from ansible_collections.tfdist.cluster.plugins.filter.libcloud import libcloud_audit_regions, libcloud_regions


def test_every_ec2_region_is_known_offline_gce_looks_everywhere_at_once_and_openstack_says_it_cannot_list():
    ec2 = libcloud_regions("ec2")
    assert {"us-east-1", "eu-west-1", "ap-southeast-2"} <= set(ec2["regions"]) and ec2["unchecked"] == ""
    assert ec2["regions"] == sorted(ec2["regions"])
    assert libcloud_regions("gce") == {"regions": [], "unchecked": ""}  # the audit lists every zone in one look
    assert libcloud_regions("openstack") == {
        "regions": [], "unchecked": "other regions of openstack: libcloud's driver cannot list them"}


def audit(region, resources=(), orphans=(), unchecked=(), untouched=()):
    """A libcloud_audit result as a looped task registers it (its region as the item)."""
    return {"item": region, "changed": False, "clusters": sorted(set(r[1] for r in resources)),
            "orphans": list(orphans),
            "resources": [{"kind": "volume", "id": ident, "cluster": cluster, "description": "volume %s" % ident}
                          for ident, cluster in resources],
            "report": ["%s: volume %s" % (cluster, ident) for ident, cluster in resources],
            "unchecked": list(unchecked), "untouched": list(untouched), "images": []}


def test_one_region_reads_as_the_modules_own_result():
    merged = libcloud_audit_regions([audit("us-east-1", [("vol-1", "demo")], orphans=["demo"])])
    assert merged["regions"] == ["us-east-1"] and merged["orphan_regions"] == {"demo": ["us-east-1"]}
    assert [r["description"] for r in merged["resources"]] == ["volume vol-1"]
    assert merged["report"] == ["demo: volume vol-1"] and merged["orphans"] == ["demo"]


def test_several_regions_name_their_region_in_each_resource_and_line():
    merged = libcloud_audit_regions([
        audit("us-east-1", [("vol-1", "demo")], unchecked=["baked images: denied"]),
        audit("eu-west-1", [("vol-2", "demo"), ("vol-3", "old")], orphans=["old"],
              untouched=["cluster x on aws belongs to another controller (1f3a): not touched"]),
        {"item": "ap-south-1", "skipped": True}])
    assert merged["regions"] == ["us-east-1", "eu-west-1"]
    assert [(r["description"], r["region"]) for r in merged["resources"]] == [
        ("volume vol-1 in us-east-1", "us-east-1"), ("volume vol-2 in eu-west-1", "eu-west-1"),
        ("volume vol-3 in eu-west-1", "eu-west-1")]
    assert merged["report"] == ["us-east-1: demo: volume vol-1", "eu-west-1: demo: volume vol-2",
                                "eu-west-1: old: volume vol-3"]
    assert merged["unchecked"] == ["us-east-1: baked images: denied"]
    assert merged["untouched"] == ["eu-west-1: cluster x on aws belongs to another controller (1f3a): not touched"]
    assert merged["clusters"] == ["demo", "old"] and merged["orphan_regions"] == {"old": ["eu-west-1"]}
