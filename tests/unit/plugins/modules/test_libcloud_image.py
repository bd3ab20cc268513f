"""tfdist.cluster.libcloud_image run in-process against a registered cloud whose images keep state in memory.

The real clouds: the docker engine and the EC2 emulator in tests/e2e/test_image.py; the audit's listing of baked
images is tested here too, on the same cloud.
"""

import json
from types import SimpleNamespace

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.tfdist.cluster.plugins.module_utils import _clouds
from ansible_collections.tfdist.cluster.plugins.module_utils._audit import baked_images, images_report
from ansible_collections.tfdist.cluster.plugins.module_utils._images import CloudImages, name_error
from ansible_collections.tfdist.cluster.plugins.module_utils._provider import CloudProvider
from ansible_collections.tfdist.cluster.plugins.modules import libcloud_image

PROVIDER = "tfdist_test_images"
NODE = "image-test-chief-0"


class FakeDriver:
    """A cloud with one tfdist node and images, each a NodeImage-like object with its tags in extra."""

    type = PROVIDER

    def __init__(self):
        self.images = [SimpleNamespace(id="img-1", name="ubuntu-24-04", extra={"tags": {}})]
        self.saved = []
        self.nodes = [SimpleNamespace(id="n-1", name=NODE, state="running", driver=self, extra={"tags": {
            "tfdist_cluster": "image-test", "tfdist_role": "chief", "tfdist_index": "0"}})]

    def create_node(self, name, size, image, ex_metadata=None):
        raise AssertionError("no node is created here")

    def list_nodes(self):
        return self.nodes

    def list_images(self):
        return list(self.images)


class FakeImages(CloudImages):
    def create(self, node, name, tags):
        self.driver.saved.append(node.name)
        image = SimpleNamespace(id="img-%d" % (len(self.driver.images) + 1), name=name, extra={"tags": dict(tags)})
        self.driver.images.append(image)
        return image

    def delete(self, image):
        self.driver.images.remove(image)


@pytest.fixture
def cloud():
    driver = FakeDriver()
    _clouds.PROVIDERS[PROVIDER] = CloudProvider(PROVIDER, driver=lambda **kwargs: driver, images=FakeImages)
    yield driver
    _clouds.PROVIDERS.pop(PROVIDER, None)


@pytest.fixture
def run(capsys):
    """Run the module with the given options; returns its JSON result (with `failed` on failure)."""
    def run_module(check_mode=False, **options):
        args = dict(provider=PROVIDER)
        args.update(options, _ansible_check_mode=check_mode)
        with patch_module_args(args), pytest.raises(SystemExit):
            libcloud_image.main()
        return json.loads(capsys.readouterr().out)
    return run_module


def test_a_node_is_saved_once_as_a_tagged_image_and_removed_only_as_asked(cloud, run):
    tags = {"tfdist_tensorflow": "2.21.0", "tfdist_cuda": "none"}
    # The check before the node is made: the name is free, nothing is saved.
    checked = run(check_mode=True, name="tfdist-test-1")
    assert checked["changed"] and checked["image"] == {} and cloud.saved == []

    baked = run(name="tfdist-test-1", node=NODE, tags=tags)
    assert baked["changed"] and cloud.saved == [NODE]
    assert baked["image"]["tags"] == dict(tags, tfdist_image="tfdist-test-1")
    assert (baked["image"]["reference"], baked["image"]["tensorflow"]) == ("img-2", "2.21.0")

    # The same name again: the image is there, nothing is saved again (a bake run twice, or its check).
    again = run(name="tfdist-test-1", node=NODE, tags=tags)
    assert not again["changed"] and again["image"]["id"] == "img-2" and cloud.saved == [NODE]
    assert run(check_mode=True, name="tfdist-test-1")["image"]["id"] == "img-2"

    removed = run(name="tfdist-test-1", state="absent")
    assert removed["changed"] and removed["image"]["id"] == "img-2"
    assert [image.name for image in cloud.images] == ["ubuntu-24-04"]
    assert not run(name="tfdist-test-1", state="absent")["changed"]


def test_an_image_tfdist_did_not_bake_is_neither_replaced_nor_removed(cloud, run):
    for options in ({"node": NODE}, {"state": "absent"}):
        result = run(name="ubuntu-24-04", **options)
        assert result["failed"] and result["msg"].startswith("name: the cloud holds image ubuntu-24-04 (img-1), which "
                                                             "tfdist did not bake"), result
    assert [image.name for image in cloud.images] == ["ubuntu-24-04"] and cloud.saved == []


@pytest.mark.parametrize("options, message", [
    ({"name": "Bad_Name", "node": NODE}, "name: 'Bad_Name' is not a valid image name"),
    ({"name": "tfdist-test-2"}, "node: give the node to save as image tfdist-test-2"),
    ({"name": "tfdist-test-2", "node": "other-chief-0"}, "node: no node of a tfdist cluster is named 'other-chief-0'"),
])
def test_bad_input_names_its_option_and_saves_nothing(cloud, run, options, message):
    result = run(**options)
    assert result["failed"] and result["msg"].startswith(message), result
    assert cloud.saved == []


@pytest.mark.parametrize("name", ["tfdist-aws-20261128-120000", "abc", "a" * 63])
def test_names_every_cloud_takes(name):
    assert name_error(name) == ""


@pytest.mark.parametrize("name", ["ab", "a" * 64, "Tfdist", "tfdist_x", "tfdist.x", "tfdist-", "1tfdist", "tf/dist", ""])
def test_names_some_cloud_refuses(name):
    assert name_error(name, "image_name").startswith("image_name: %r is not a valid image name" % name)


def test_the_audit_lists_baked_images_apart_as_kept(cloud, run):
    run(name="tfdist-test-b", node=NODE)
    run(name="tfdist-test-a", node=NODE)
    images, unchecked = baked_images(cloud)
    assert [image["name"] for image in images] == ["tfdist-test-a", "tfdist-test-b"] and unchecked == []
    assert images_report(images) == ["kept, yours (baked by playbooks/image.yml; destroy and the audit never remove "
                                     "them): image tfdist-test-a (img-3), image tfdist-test-b (img-2)"]
    assert images_report([]) == []
