"""Baking an image on GCE: GceImages (_cloud_gce.py) as the libcloud_image module uses it.

No emulator runs GCE, so the driver is made with create_autospec from libcloud's GCENodeDriver (a call with a
signature the real driver does not have fails) and the methods baking goes through run libcloud's own code: listing
the node and its boot disk, stopping it, creating, listing and deleting images. They run over a fake GCE endpoint
that keeps state the way GCE does: instances, disks and the images of each project, refusing what GCE refuses (an
image of a disk a running instance uses, a label value with a dot, a name taken). The assertions read that state.
"""

import copy
import itertools
import re
from unittest.mock import create_autospec

import pytest

from libcloud.common.google import InvalidRequestError, ResourceExistsError, ResourceNotFoundError
from libcloud.compute.drivers.gce import GCEConnection, GCENodeDriver, GCEZone

from ansible_collections.tfdist.cluster.plugins.module_utils._cloud_gce import GceImages
from ansible_collections.tfdist.cluster.plugins.module_utils._images import (
    TAG_CUDA,
    TAG_IMAGE,
    TAG_TENSORFLOW,
    is_baked,
    to_dict,
)
from ansible_collections.tfdist.cluster.tests.unit.plugins.module_utils.libcloud_fakes import response, run_real, sent

PROJECT = "tfdist-test"
ZONE = "europe-west4-a"
NODE = "tfdist-demo-chief-0"
IMAGE = "tfdist-gce-tf-2-21"
FOREIGN = "ubuntu-2404-custom"
TAGS = {TAG_IMAGE: IMAGE, TAG_TENSORFLOW: "2.21.0", TAG_CUDA: "12.8"}
# GCE's rules: an image name like a node's, a label value of lowercase letters, digits, _ and -, 63 at most.
GCE_NAME_RE = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
GCE_LABEL_VALUE_RE = re.compile(r"^[a-z0-9_-]{0,63}$")


def link(path, project=PROJECT):
    return "https://www.googleapis.com/compute/v1/projects/%s/%s" % (project, path)


class GceCloud:
    """GCE's instances, disks and /global/images of each project, keeping state; the driver runs libcloud's code."""

    def __init__(self):
        self.instances = {}  # name -> instance JSON
        self.disks = {}  # name -> disk JSON (one zone)
        self.images = {PROJECT: {}, "ubuntu-os-cloud": {}}  # project -> name -> image JSON
        self.changes = []  # (method, action) of every call that changes something, in order
        self._ids = itertools.count(1001)
        driver = create_autospec(GCENodeDriver, instance=True)
        driver.type = "gce"
        driver.project = PROJECT
        zone = GCEZone(next(self._ids), ZONE, "UP", [], None, driver, extra={"selfLink": link("zones/" + ZONE)})
        driver.zone, driver.zone_dict, driver._ex_volume_dict = zone, {ZONE: zone}, {}
        # What autospec makes of class attributes is a mock: the real tables.
        driver.IMAGE_PROJECTS, driver.NODE_STATE_MAP = GCENodeDriver.IMAGE_PROJECTS, GCENodeDriver.NODE_STATE_MAP
        driver.connection = create_autospec(GCEConnection, instance=True)
        driver.connection.request_path = "/compute/v1/projects/%s" % PROJECT
        driver.connection.request.side_effect = self._request
        driver.connection.async_request.side_effect = self._request  # GCE's operation is done when it answers
        run_real(driver.connection, GCEConnection, "paginated_request", "request_aggregated_items",
                 "_merge_response_items")
        run_real(driver, GCENodeDriver,
                 "list_nodes", "_set_zone", "_to_node", "ex_get_zone", "ex_get_volume", "_ex_populate_volume_dict",
                 "_build_volume_dict", "_ex_lookup_volume", "_to_storage_volume", "_get_components_from_path",
                 "ex_stop_node", "stop_node",
                 "ex_create_image", "ex_get_image", "_match_images", "ex_list", "list_images",
                 "ex_list_project_images", "_to_node_image", "ex_delete_image")
        self.driver = driver

    def add_node(self, name):
        """A running instance with its boot disk (named after it, as GCE names it) and a data disk."""
        instance_link = link("zones/%s/instances/%s" % (ZONE, name))
        for disk_name in (name, name + "-data"):
            self.disks[disk_name] = {
                "kind": "compute#disk", "id": str(next(self._ids)), "name": disk_name, "zone": link("zones/" + ZONE),
                "sizeGb": "50", "status": "READY", "type": link("zones/%s/diskTypes/pd-balanced" % ZONE),
                "selfLink": link("zones/%s/disks/%s" % (ZONE, disk_name)), "users": [instance_link]}
        self.disks[name]["sourceImage"] = link("global/images/ubuntu-2404-noble-amd64-v20250101", "ubuntu-os-cloud")
        self.instances[name] = {
            "kind": "compute#instance", "id": str(next(self._ids)), "name": name, "status": "RUNNING",
            "zone": link("zones/" + ZONE), "machineType": link("zones/%s/machineTypes/n2-standard-4" % ZONE),
            "tags": {"items": ["tfdist-demo"], "fingerprint": "tags-1"},
            "labels": {"tfdist_cluster": "demo", "tfdist_role": "chief", "tfdist_index": "0"},
            "disks": [{"boot": False, "type": "PERSISTENT", "source": self.disks[name + "-data"]["selfLink"]},
                      {"boot": True, "type": "PERSISTENT", "source": self.disks[name]["selfLink"]}],
            "networkInterfaces": [{"networkIP": "10.164.0.2", "accessConfigs": [{"natIP": "203.0.113.10"}]}],
            "selfLink": instance_link}

    def add_image(self, name, labels=None, project=PROJECT):
        self.images[project][name] = self._image({"name": name, "labels": labels or {}}, project)

    def node(self, name):
        """The node as tfdist finds it: from the driver's list_nodes."""
        return next(node for node in self.driver.list_nodes() if node.name == name)

    def _image(self, body, project=PROJECT):
        image = dict((key, value) for key, value in body.items() if value is not None and key != "zone")
        image.update(id=str(next(self._ids)), kind="compute#image", status="READY", sourceType="RAW",
                     creationTimestamp="2026-01-01T12:00:00.000-08:00", labelFingerprint="labels-1",
                     selfLink=link("global/images/" + body["name"], project))
        return image

    def _request(self, action, params=None, data=None, headers=None, method="GET", context=None):
        project = self.driver.connection.request_path.rsplit("/", 1)[1]
        if method != "GET":
            self.changes.append((method, action))
        if (method, action) == ("GET", "/zones/%s/instances" % ZONE):
            return response({"items": copy.deepcopy(list(self.instances.values()))})
        if (method, action) == ("GET", "/aggregated/disks"):
            return response({"items": {"zones/" + ZONE: {"disks": copy.deepcopy(list(self.disks.values()))}}})
        stop = re.match(r"^/zones/%s/instances/([^/]+)/stop$" % ZONE, action)
        if method == "POST" and stop:
            self.instances[stop.group(1)]["status"] = "TERMINATED"
            return response({"status": "DONE"})
        if (method, action) == ("GET", "/global/images"):
            items = copy.deepcopy(list(self.images.get(project, {}).values()))
            return response({"items": items} if items else {})  # GCE leaves `items` out of an empty list
        if (method, action) == ("POST", "/global/images"):
            self._create_image(sent(data))
            return response({"status": "DONE"})
        image = re.match(r"^/global/images/([^/]+)$", action)
        if method == "DELETE" and image:
            if self.images[project].pop(image.group(1), None) is None:
                raise ResourceNotFoundError("image %s was not found" % image.group(1), 404, "notFound")
            return response({"status": "DONE"})
        raise AssertionError("unexpected GCE call %s %s" % (method, action))

    def _create_image(self, body):
        if not GCE_NAME_RE.match(body["name"]):
            raise InvalidRequestError("Invalid value for field 'resource.name': %r" % body["name"], 400, "invalid")
        for key, value in body.get("labels", {}).items():
            if not GCE_LABEL_VALUE_RE.match(value):
                raise InvalidRequestError("Label value %r of %r violates format constraints" % (value, key), 400,
                                          "invalid")
        if body["name"] in self.images[PROJECT]:
            raise ResourceExistsError("The resource 'images/%s' already exists" % body["name"], 409, "alreadyExists")
        disk = next(disk for disk in self.disks.values() if disk["selfLink"] == body["sourceDisk"])
        running = [user for user in disk["users"] if self.instances[user.rsplit("/", 1)[1]]["status"] != "TERMINATED"]
        if running:  # GCE images a disk in use only when forced (forceCreate), which tfdist does not ask
            raise InvalidRequestError("The disk resource '%s' is already being used by '%s'"
                                      % (disk["name"], running[0]), 400, "resourceInUseByAnotherResource")
        self.images[PROJECT][body["name"]] = self._image(dict(body, sourceDiskId=disk["id"], diskSizeGb=disk["sizeGb"]))


@pytest.fixture
def gce():
    cloud = GceCloud()
    cloud.add_node(NODE)
    return cloud


def test_baking_stops_the_node_then_images_its_boot_disk_named_as_asked_with_tfdists_tags_as_labels(gce):
    images = GceImages(gce.driver)

    image = images.create(gce.node(NODE), IMAGE, TAGS)

    assert gce.changes == [("POST", "/zones/%s/instances/%s/stop" % (ZONE, NODE)), ("POST", "/global/images")]
    assert gce.instances[NODE]["status"] == "TERMINATED"
    saved = gce.images[PROJECT][IMAGE]
    assert saved["sourceDisk"] == gce.disks[NODE]["selfLink"]  # the boot disk, not the data disk
    # A label value takes no dot: the versions are spelled with dashes.
    assert saved.get("labels") == {TAG_IMAGE: IMAGE, TAG_TENSORFLOW: "2-21-0", TAG_CUDA: "12-8"}
    assert (image.name, image.id) == (IMAGE, saved["id"])
    assert is_baked(image)


def test_a_baked_image_is_found_again_and_named_by_its_name(gce):
    images = GceImages(gce.driver)
    images.create(gce.node(NODE), IMAGE, TAGS)

    [found] = images.found()
    [named] = images.named(IMAGE)
    assert found.name == named.name == IMAGE
    facts = to_dict(found, images.reference(found))
    assert facts["reference"] == IMAGE  # what a profile's role image names it by
    assert (facts["tensorflow"], facts["cuda"]) == ("2-21-0", "12-8")
    assert images.named("tfdist-gce-other") == []


def test_an_image_tfdist_did_not_bake_is_not_found_but_is_named(gce):
    gce.add_image(FOREIGN, labels={"team": "ml"})
    gce.add_image("tfdist-public", labels={TAG_IMAGE: "tfdist-public"}, project="ubuntu-os-cloud")  # not the project's
    images = GceImages(gce.driver)

    assert images.found() == []
    [named] = images.named(FOREIGN)  # so that libcloud_image refuses the name rather than baking over it
    assert not is_baked(named)


def test_baking_refuses_a_name_the_project_already_holds(gce):
    gce.add_image(IMAGE, labels={TAG_IMAGE: IMAGE, TAG_TENSORFLOW: "2-20-0"})
    before = copy.deepcopy(gce.images[PROJECT][IMAGE])

    with pytest.raises(ResourceExistsError):
        GceImages(gce.driver).create(gce.node(NODE), IMAGE, TAGS)

    assert gce.images[PROJECT][IMAGE] == before  # not taken for the new one


def test_delete_removes_the_baked_image_only(gce):
    gce.add_image(FOREIGN)
    images = GceImages(gce.driver)
    images.create(gce.node(NODE), IMAGE, TAGS)
    gce.changes.clear()

    [image] = images.found()
    images.delete(image)

    assert gce.changes == [("DELETE", "/global/images/" + IMAGE)]
    assert images.found() == []
    assert list(gce.images[PROJECT]) == [FOREIGN]
