"""libcloud_image_error: the cloud first (tfdist bakes images where the cloud's file says how), then the image's name."""

from ansible_collections.tfdist.cluster.plugins.filter.libcloud import libcloud_image_error


def test_the_image_filter_names_a_cloud_tfdist_bakes_no_images_on_then_a_bad_name():
    azure = libcloud_image_error("tfdist-x-1", "azure_arm", "image_name", "azure")
    assert azure.startswith("cloud: tfdist bakes no images on cloud=azure (libcloud's azure_arm driver gives tfdist no "
                            "way to save a node and to know its images again); it bakes them on docker, ec2, gce"), azure
    assert libcloud_image_error("Bad", "", "image_name", "local").startswith(
        "cloud: tfdist bakes no images on cloud=local (it runs on this machine)")
    assert libcloud_image_error("Bad", "ec2", "image_name", "aws").startswith("image_name: 'Bad' is not a valid image name")
    assert libcloud_image_error("tfdist-x-1", "ec2", "image_name", "aws") == ""
