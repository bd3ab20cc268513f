"""Cluster shapes from RADL files and back: the example files, every error a user can make, round trips."""

import os
import re

import pytest
import yaml
from radl import radl_parse

from ansible_collections.tfdist.cluster.plugins.filter.libcloud import libcloud_radl_cloud
from ansible_collections.tfdist.cluster.plugins.module_utils._clouds import PROVIDERS
from ansible_collections.tfdist.cluster.plugins.module_utils._radl import (
    TfdistRadlError,
    dump_cluster,
    image_url,
    load_cluster,
    parse_cluster,
    split_image_url,
)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
EXAMPLES = os.path.join(REPO, "radl")
SHAPE_KEYS = ("chief", "workers", "ps", "evaluators", "nodes", "cloud", "region", "endpoint", "ports")

CHIEF_WORKER = "system chief ()\nsystem worker ()\n"


def example(name):
    return os.path.join(EXAMPLES, name)


def shape(cluster):
    return {key: cluster[key] for key in SHAPE_KEYS}


def error(text, tmp_path, name="cluster.radl"):
    """The message of the error that loading `text` from a file raises."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(TfdistRadlError) as info:
        load_cluster(str(path))
    message = str(info.value)
    assert message.startswith(str(path) + ": "), message
    return message


def test_classic_example_is_cloud_neutral():
    path = example("ps1-workers2.radl")
    assert load_cluster(path) == {
        "source": path,
        "chief": 1,
        "workers": 2,
        "ps": 1,
        "evaluators": 0,
        "nodes": {
            "chief": {"size": "t3.large", "image": None, "gpus": 0},
            "worker": {"size": "g4dn.xlarge", "image": None, "gpus": 1},  # gpu.count >= 1
            "ps": {"size": "t3.large", "image": None, "gpus": 0},
        },
        "cloud": None,
        "region": None,
        "endpoint": None,
        "zones": [],
        "ports": [22],
    }


def test_aws_example_sets_cloud_region_images_and_gpus():
    cluster = load_cluster(example("aws-gpu-workers.radl"))
    assert (cluster["cloud"], cluster["region"], cluster["endpoint"]) == ("aws", "us-east-1", None)
    assert (cluster["workers"], cluster["ps"], cluster["evaluators"]) == (2, 1, 0)
    assert cluster["nodes"]["worker"] == {"size": "g5.xlarge", "image": "ami-0f9e8d7c6b5a43210", "gpus": 1}
    assert cluster["nodes"]["chief"]["image"] == "ami-0a1b2c3d4e5f60718"
    assert cluster["ports"] == [22, 6006]


def test_docker_example_uses_the_node_image_on_host_size():
    cluster = load_cluster(example("docker-small.radl"))
    assert (cluster["cloud"], cluster["region"]) == ("docker", None)
    assert cluster["nodes"] == {role: {"size": "host", "image": "tfdist/node-tf:2.21.0", "gpus": 0}
                                for role in ("chief", "worker", "ps")}


def test_classic_example_has_no_chief_and_worker_0_leads():
    # As IM users write it: system ps and system worker only, with cpu/memory features.
    cluster = load_cluster(example("classic.radl"))
    assert (cluster["chief"], cluster["workers"], cluster["ps"], cluster["evaluators"]) == (0, 2, 1, 0)
    assert sorted(cluster["nodes"]) == ["ps", "worker"]
    assert cluster["cloud"] == "docker"


def test_a_radl_without_a_chief_system_has_chief_0():
    cluster = parse_cluster("system ps ()\nsystem worker ()\ndeploy ps 1\ndeploy worker 2\n", "classic.radl")
    assert (cluster["chief"], cluster["workers"], cluster["ps"]) == (0, 2, 1)
    with_chief = parse_cluster(CHIEF_WORKER + "deploy worker 1\n", "x.radl")
    assert with_chief["chief"] == 1


@pytest.mark.parametrize("name", sorted(n for n in os.listdir(EXAMPLES) if n.endswith(".radl")))
def test_every_example_passes_the_radl_package_checks_and_round_trips(name):
    cluster = load_cluster(example(name))
    radl_parse.parse_radl(open(example(name)).read()).check()
    text = dump_cluster(cluster)
    radl_parse.parse_radl(text).check()
    assert shape(parse_cluster(text, "written.radl")) == shape(cluster)


@pytest.mark.parametrize("url, parts", [
    ("aws://us-east-1/ami-0abc", ("aws", "ami-0abc", "us-east-1", None)),
    ("gce://us-central1-a/debian-12", ("gce", "debian-12", "us-central1-a", None)),
    ("ost://keystone.example.org/6f1c2d3e-0000-4a5b-8c9d-0123456789ab",
     ("openstack", "6f1c2d3e-0000-4a5b-8c9d-0123456789ab", None, "keystone.example.org")),
    ("ost://keystone.example.org:5000/img", ("openstack", "img", None, "keystone.example.org:5000")),
    ("azr://Canonical/ubuntu-24_04-lts/server/latest",
     ("azure", "Canonical:ubuntu-24_04-lts:server:latest", None, None)),
    ("docker://tfdist/node-tf:2.21.0", ("docker", "tfdist/node-tf:2.21.0", None, None)),
    ("docker://registry.local:5000/tfdist/node-tf:2.21.0",
     ("docker", "registry.local:5000/tfdist/node-tf:2.21.0", None, None)),
])
def test_image_urls_in_the_im_form_split_and_join_back(url, parts):
    assert split_image_url(url) == parts
    cloud, image, region, endpoint = parts
    assert image_url(cloud, image, region, endpoint) == url


@pytest.mark.parametrize("provider", sorted(name for name, cloud in PROVIDERS.items() if cloud.radl))
def test_a_radl_file_of_a_provider_s_images_deploys_with_a_profile_of_that_provider(provider):
    # A RADL file's image URLs choose the default -e cloud=; that profile must create nodes where the images are.
    cloud = libcloud_radl_cloud(provider)
    with open(os.path.join(REPO, "inventories", cloud, "cloud.yml")) as handle:
        assert yaml.safe_load(handle)["libcloud_provider"] == provider


def test_a_system_of_another_name_takes_its_role_from_tfdist_role():
    gpu_box = "system gpu-box (tfdist.role = 'worker' and gpu.count > 0)"
    cluster = parse_cluster(CHIEF_WORKER.replace("system worker ()", gpu_box) + "deploy gpu-box 3\n", "roles.radl")
    assert cluster["workers"] == 3
    assert cluster["nodes"]["worker"]["gpus"] == 1  # > 0 means at least 1


def test_counts_default_to_zero_and_the_chief_to_one():
    text = CHIEF_WORKER + "system ps ()\nsystem evaluator ()\ndeploy worker 1\ndeploy evaluator 1\n"
    cluster = parse_cluster(text, "x.radl")
    assert (cluster["workers"], cluster["ps"], cluster["evaluators"]) == (1, 0, 1)
    assert sorted(cluster["nodes"]) == ["chief", "evaluator", "worker"]  # ps has no nodes


def test_ports_keep_what_a_plain_number_cannot_say():
    outports = "22,6006/tcp,8000:8010/tcp,53/udp,8080/tcp-80/tcp,10.0.0.0/8-2222/tcp"
    text = "network public (outbound = 'yes' and outports = '%s')\n" % outports + CHIEF_WORKER + "deploy worker 1\n"
    cluster = parse_cluster(text, "ports.radl")
    assert cluster["ports"] == [22, 6006, "8000:8010/tcp", "53/udp", "8080-80/tcp", "10.0.0.0/8-2222/tcp"]
    assert parse_cluster(dump_cluster(cluster), "again.radl")["ports"] == cluster["ports"]


def test_zones_and_sizes_in_order_of_preference():
    text = ("system chief (instance_type = 't3.large' and availability_zone = ['us-east-1a', 'us-east-1b'])\n"
            "system ps (instance_type = 't3.large')\n"  # names no zone: goes where the cluster goes
            "system worker (\n  instance_type = ['g4dn.xlarge', 'g5.xlarge'] and\n"
            "  availability_zone = ['us-east-1a', 'us-east-1b']\n)\n"
            "deploy ps 1\ndeploy worker 2\n")
    cluster = parse_cluster(text, "zones.radl")
    assert cluster["zones"] == ["us-east-1a", "us-east-1b"]
    assert cluster["nodes"]["worker"]["size"] == ["g4dn.xlarge", "g5.xlarge"]
    assert cluster["nodes"]["chief"]["size"] == "t3.large" and cluster["nodes"]["ps"]["size"] == "t3.large"


def test_one_zone_is_a_list_of_one_however_each_system_writes_it():
    text = ("system chief (availability_zone = 'us-east-1c')\n"
            "system worker (availability_zone = ['us-east-1c'])\ndeploy worker 1\n")
    assert parse_cluster(text, "zone.radl")["zones"] == ["us-east-1c"]


def test_windows_line_ends_are_fine(tmp_path):
    path = tmp_path / "crlf.radl"
    path.write_bytes((CHIEF_WORKER + "deploy worker 2\n").replace("\n", "\r\n").encode())
    assert load_cluster(str(path))["workers"] == 2


DEPLOY_1 = "system worker ()\ndeploy worker 1\n"

# RADL text, what the message says after "FILE: ", the line it names (None: the whole file)
ERRORS = [
    pytest.param(
        "system chief (\n  instance_type = 't3.large' and and\n)\n",
        "syntax error at 'and' in: instance_type = 't3.large' and and", 2, id="syntax"),
    pytest.param(
        'system chief (instance_type = "t3.large")\n',
        "unexpected character '\"' (RADL strings take single quotes)", 1, id="double quotes"),
    pytest.param(
        "system chief (\n  instance_type = 't3.large'\n",
        "unexpected end of file; is a ')' missing?", 3, id="end of file"),
    pytest.param(
        "system chief (instance_type = 't3' $)\n",
        "unexpected character '$'", 1, id="unknown character"),
    pytest.param(
        CHIEF_WORKER + "deploy worker -1\n",
        "unexpected character '-' in: deploy worker -1", 3, id="negative count"),
    pytest.param(
        CHIEF_WORKER + "deploy worker 2.5\n",
        "deploy worker 2.5: the count must be a whole number, 1 or more", 3, id="fractional count"),
    pytest.param(
        CHIEF_WORKER + "system chief ()\ndeploy worker 1\n",
        "system chief is already defined at line 1", 3, id="system twice"),
    pytest.param(
        "network public (outbound = 'maybe')\n" + CHIEF_WORKER,
        "network 'public': Invalid value; expected one of ['YES', 'NO']", 1, id="radl check"),
    pytest.param(
        "system chief (\n  net_interface.0.connection = 'public'\n)\n" + DEPLOY_1,
        "system 'chief': Invalid value in property 'net_interface.0.connection'", 2, id="unknown network"),
    pytest.param(
        "network public (outbound = 'yes' and outports = '22/sctp')\n" + CHIEF_WORKER + "deploy worker 1\n",
        "network 'public': Invalid value in property 'outports'", 1, id="bad outports"),
    pytest.param(
        CHIEF_WORKER + "system ps ()\ndeploy workers 2\n",
        "deploy 'workers': no system named 'workers' (systems: chief, ps, worker)", 4, id="unknown system"),
    pytest.param(
        CHIEF_WORKER + "system gpu-box (instance_type = 'g5.xlarge')\ndeploy worker 1\n",
        "system 'gpu-box': not a TF role; name systems chief, worker, ps or evaluator "
        "(or set tfdist.role = 'worker')", 3, id="not a role"),
    pytest.param(
        "system ps ()\nsystem worker ()\nsystem gpu-box ()\ndeploy ps 1\ndeploy worker 2\n",
        "system 'gpu-box': not a TF role; name systems chief, worker, ps or evaluator", 3,
        id="not a role without a chief"),
    pytest.param(
        CHIEF_WORKER + "system gpu-box (tfdist.role = 'gpu')\n",
        "system 'gpu-box': tfdist.role 'gpu' is not a TF role; use chief, worker, ps or evaluator", 3,
        id="bad role feature"),
    pytest.param(
        "system chief ()\nsystem worker (tfdist.role = 'ps')\n",
        "system 'worker': tfdist.role 'ps' contradicts the system name", 2, id="role against name"),
    pytest.param(
        CHIEF_WORKER + "system gpu-box (tfdist.role = 'worker')\n",
        "system 'gpu-box': role worker is already taken by system 'worker' (line 2); one system per role", 3,
        id="role twice"),
    pytest.param(
        "system ps ()\ndeploy ps 1\n",
        "no chief and no worker system; a cluster without a chief needs at least one worker: worker 0 leads it "
        "(systems: ps)", None, id="no chief, no worker"),
    pytest.param(
        "# nothing here\n",
        "no chief and no worker system; a cluster without a chief needs at least one worker", None, id="empty file"),
    pytest.param(
        CHIEF_WORKER + "deploy chief 2\ndeploy worker 1\n",
        "deploy chief 2: a cluster has one chief, or none (leave the chief system out: worker 0 leads then)", 3,
        id="two chiefs"),
    pytest.param(
        CHIEF_WORKER + "deploy chief 0\ndeploy worker 1\n",
        "deploy chief 0: a deploy line with no VMs; remove the line (the system is then not deployed) "
        "or give a count of 1 or more", 3, id="chief deployed 0"),
    pytest.param(
        CHIEF_WORKER + "deploy worker 2\ndeploy worker 3\n",
        "deploy worker 3: system worker is already deployed with 2 at line 3; use one deploy line per system", 4,
        id="counts disagree"),
    pytest.param(
        CHIEF_WORKER + "deploy worker 2\ndeploy worker 2\n",
        "deploy worker 2: system worker is already deployed with 2 at line 3", 4, id="deployed twice"),
    pytest.param(
        CHIEF_WORKER + "deploy worker 0\n",
        "deploy worker 0: a deploy line with no VMs; remove the line (the system is then not deployed) "
        "or give a count of 1 or more", 3, id="zero workers"),
    pytest.param(
        "system ps ()\nsystem worker ()\ndeploy worker 2\ndeploy ps 0\n",
        "deploy ps 0: a deploy line with no VMs; remove the line", 4, id="zero ps"),
    pytest.param(
        CHIEF_WORKER,
        "system 'worker': no deploy line; a cluster needs at least one worker", 2, id="worker not deployed"),
    pytest.param(
        "system chief ()\nsystem ps ()\ndeploy ps 1\n",
        "no worker system; a cluster needs at least one worker (systems: chief, ps)", None, id="no worker"),
    pytest.param(
        "system chief (disk.0.image.url = 'aws://us-east-1/ami-0abc')\nsystem worker (\n"
        "  instance_type = 'n1-standard-4' and\n  disk.0.image.url = 'gce://us-central1-a/debian-12'\n)\n"
        "deploy worker 1\n",
        "system 'worker': its image has cloud gce, but system 'chief' (line 1) has aws; a cluster runs on one cloud", 4,
        id="mixed clouds"),
    pytest.param(
        "system chief (disk.0.image.url = 'aws://us-east-1/ami-0abc')\n"
        "system worker (disk.0.image.url = 'aws://eu-west-1/ami-0abc')\ndeploy worker 1\n",
        "system 'worker': its image has region eu-west-1, but system 'chief' (line 1) has us-east-1", 2,
        id="mixed regions"),
    pytest.param(
        "system chief (disk.0.image.url = 'one://one.example.org/12')\n" + DEPLOY_1,
        "system 'chief': image URL 'one://one.example.org/12': unsupported scheme; "
        "known: aws://, gce://, azr://, ost://, docker://", 1, id="unknown scheme"),
    pytest.param(
        "system chief (disk.0.image.url = 'ami-0abc')\n" + DEPLOY_1,
        "system 'chief': image URL 'ami-0abc': unsupported scheme", 1, id="no scheme"),
    pytest.param(
        "system chief (disk.0.image.url = 'aws://ami-0abc')\n" + DEPLOY_1,
        "system 'chief': image URL 'aws://ami-0abc': expected aws://REGION/AMI", 1, id="aws without region"),
    pytest.param(
        "system chief (disk.0.image.url = 'azr://image-id')\n" + DEPLOY_1,
        "system 'chief': image URL 'azr://image-id': expected azr://PUBLISHER/OFFER/SKU/VERSION", 1,
        id="azure classic image"),
    pytest.param(
        "system chief (disk.0.image.url = ['aws://us-east-1/ami-1', 'gce://us-central1-a/d'])\n" + DEPLOY_1,
        "system 'chief': disk.0.image.url lists 2 images; tfdist deploys one image per role", 1,
        id="several images"),
    pytest.param(
        "system chief ()\nsystem worker (\n  gpu.count = 'two'\n)\ndeploy worker 1\n",
        "system 'worker': gpu.count must be a number, got 'two'", 3, id="gpu count text"),
    pytest.param(
        "system chief (instance_type = 4)\n" + DEPLOY_1,
        "system 'chief': instance_type must be a size or a list of them in order of preference "
        "('a' or ['a', 'b']), got 4", 1, id="size a number"),
    pytest.param(
        "system chief ()\nsystem worker (instance_type = [])\ndeploy worker 1\n",
        "system 'worker': instance_type must be a size or a list of them in order of preference", 2,
        id="no sizes"),
    pytest.param(
        "system chief ()\nsystem worker (availability_zone = [])\ndeploy worker 1\n",
        "system 'worker': availability_zone must be a zone or a list of them in order of preference", 2,
        id="no zones"),
    pytest.param(
        "system chief (availability_zone = ['us-east-1a', 'us-east-1b'])\nsystem ps ()\n"
        "system worker (\n  instance_type = 'g5.xlarge' and\n  availability_zone = ['us-east-1b', 'us-east-1a']\n)\n"
        "deploy ps 1\ndeploy worker 2\n",
        "system 'worker': availability_zone = ['us-east-1b', 'us-east-1a'], but system 'chief' (line 1) has "
        "['us-east-1a', 'us-east-1b']; tfdist keeps a cluster in one zone, so the systems that name zones name the "
        "same ones, in the same order", 5, id="zones differ"),
]


@pytest.mark.parametrize("text, expected, line", ERRORS)
def test_errors_name_the_file_the_line_and_the_culprit(text, expected, line, tmp_path):
    message = error(text, tmp_path)
    where = str(tmp_path / "cluster.radl") + ": " + ("line %d: " % line if line else "")
    assert message.startswith(where + expected), message


def test_a_file_that_is_not_there(tmp_path):
    path = str(tmp_path / "nope.radl")
    with pytest.raises(TfdistRadlError, match="^radl: %s: no such file$" % re.escape(path)):
        load_cluster(path)


def test_a_folder_is_not_a_file(tmp_path):
    with pytest.raises(TfdistRadlError, match="^radl: %s: cannot read it" % re.escape(str(tmp_path))):
        load_cluster(str(tmp_path))


def test_binary_is_not_radl(tmp_path):
    path = tmp_path / "model.radl"
    path.write_bytes(b"\x89PNG\xff\xfe")
    with pytest.raises(TfdistRadlError, match="^radl: %s: not UTF-8 text" % re.escape(str(path))):
        load_cluster(str(path))


def test_text_without_a_file_is_named_as_such():
    with pytest.raises(TfdistRadlError, match="^<radl text>: no worker system"):
        parse_cluster("system chief ()\n")


def test_text_that_names_an_existing_file_is_still_read_as_radl():
    # parse_radl() would read the file instead; parse_cluster never does.
    with pytest.raises(TfdistRadlError, match="^names-a-file.radl: line 1: unexpected character '/'"):
        parse_cluster(example("ps1-workers2.radl"), "names-a-file.radl")


@pytest.mark.parametrize("cluster", [
    pytest.param({"workers": 1}, id="minimal"),
    pytest.param({"workers": 3, "ps": 2, "evaluators": 1, "ports": [], "cloud": "gce", "region": "europe-west4-a",
                  "nodes": {"worker": {"size": "n1-standard-8", "gpus": 2}, "evaluator": {"image": "debian-12"}}},
                 id="gce"),
    pytest.param({"workers": 2, "cloud": "azure",
                  "nodes": {"chief": {"image": "Canonical:ubuntu-24_04-lts:server:latest", "size": "Standard_D2s_v5"}}},
                 id="azure"),
    pytest.param({"workers": 2, "cloud": "openstack", "endpoint": "keystone.example.org:5000",
                  "nodes": {"worker": {"image": "6f1c2d3e-0000-4a5b-8c9d-0123456789ab", "size": "m1.large"}},
                  "ports": [22, "8000:8010/tcp"]},
                 id="openstack"),
    pytest.param({"workers": "2", "ps": "1", "nodes": {"ps": None, "worker": {"gpus": None}}},  # as -e gives them
                 id="strings"),
    pytest.param({"workers": 1, "nodes": {"ps": {"size": "m1.small"}}}, id="role without nodes"),
    pytest.param({"chief": 0, "workers": 2, "ps": 1}, id="classic, no chief"),
    pytest.param({"chief": "0", "workers": 1, "evaluators": 1, "cloud": "aws", "region": "us-east-1",
                  "nodes": {"worker": {"image": "ami-0abc", "size": "g5.xlarge", "gpus": 1}}}, id="no chief on aws"),
    pytest.param({"chief": 1, "workers": 2, "ps": 1, "hdfs": True}, id="chief, hdfs"),
])
def test_dump_parses_back_to_the_same_shape(cluster):
    text = dump_cluster(cluster)
    radl_parse.parse_radl(text).check()
    back = parse_cluster(text, "written.radl")
    counts = {"chief": int(cluster.get("chief", 1)), "worker": int(cluster["workers"]), "ps": int(cluster.get("ps", 0)),
              "evaluator": cluster.get("evaluators", 0)}
    assert (back["chief"], back["workers"], back["ps"], back["evaluators"]) == tuple(counts.values())
    nodes = cluster.get("nodes", {})
    for role, count in counts.items():
        given = nodes.get(role) or {}
        if count:
            assert back["nodes"][role] == {"size": given.get("size"), "image": given.get("image"),
                                           "gpus": given.get("gpus") or 0}
        else:
            assert role not in back["nodes"]
    has_image = any((n or {}).get("image") for n in nodes.values())
    assert back["cloud"] == (cluster.get("cloud") if has_image else None)
    assert back["region"] == cluster.get("region") and back["endpoint"] == cluster.get("endpoint")
    assert back["ports"] == cluster.get("ports", [22])


def test_dump_writes_the_chief_on_both_networks_and_the_others_on_the_private_one():
    text = dump_cluster({"workers": 2, "ps": 1, "cloud": "aws", "region": "us-east-1",
                         "nodes": {"worker": {"size": "g5.xlarge", "image": "ami-0abc", "gpus": 1}}})
    doc = radl_parse.parse_radl(text)
    assert text.startswith("# tfdist cluster: 1 chief, 2 workers, 1 ps.\n")
    assert doc.get_network_by_id("public").getValue("outports") == "22/tcp"
    chief, worker, ps = (doc.get_system_by_name(role) for role in ("chief", "worker", "ps"))
    assert [chief.getValue("net_interface.%d.connection" % i) for i in (0, 1)] == ["public", "private"]
    assert worker.getValue("net_interface.0.connection") == "private"
    assert worker.getValue("net_interface.1.connection") is None
    assert worker.getValue("disk.0.image.url") == "aws://us-east-1/ami-0abc"
    assert worker.getValue("gpu.count") == 1 and ps.getValue("gpu.count") is None
    assert [(d.id, d.vm_number) for d in doc.deploys] == [("chief", 1), ("worker", 2), ("ps", 1)]


def configures(text):
    """configure name -> its plays, and the contextualize steps, as the radl package reads them."""
    import yaml

    doc = radl_parse.parse_radl(text)
    doc.check()
    plays = {c.name: yaml.safe_load(c.recipes) for c in doc.configures}
    steps = [(item.system, item.configure, item.num) for item in doc.contextualize.items.values()]
    return doc, plays, steps


def test_dump_asks_the_im_for_the_collection_on_every_system():
    doc, plays, steps = configures(dump_cluster({"workers": 2, "ps": 1}, collection_version="1.2.0"))
    for system in doc.systems:
        apps = [(a.getValue("name"), a.getValue("version")) for a in system.getApplications()]
        assert apps == [("ansible.collections.tfdist.cluster", "1.2.0")], system.name
    without = radl_parse.parse_radl(dump_cluster({"workers": 1}))
    assert [a.getValue("version") for a in without.get_system_by_name("worker").getApplications()] == [None]


def test_dump_runs_the_roles_in_contextualize_steps_tensorflow_then_training():
    doc, plays, steps = configures(dump_cluster({"workers": 2, "ps": 1}))
    assert sorted(plays) == ["tensorflow", "training"]  # no hdfs: the shape does not say hdfs
    for name, recipe in plays.items():
        # The IM merges only a list of plays into its own header, which sets hosts.
        assert isinstance(recipe, list) and recipe, name
        assert all(isinstance(play, dict) and "hosts" not in play for play in recipe), name
    assert [r["role"] for r in plays["tensorflow"][0]["roles"]] == ["tfdist.cluster.tensorflow"]
    assert [r["role"] for r in plays["training"][0]["roles"]] == ["tfdist.cluster.training"]
    assert plays["training"][0]["roles"][0]["vars"]["training_strategy"] == "parameter_server"
    assert steps == [("chief", "tensorflow", 1), ("worker", "tensorflow", 1), ("ps", "tensorflow", 1),
                     ("chief", "training", 3), ("worker", "training", 3), ("ps", "training", 3)]


def test_dump_with_hdfs_runs_it_on_the_leader_and_workers_between_the_two():
    doc, plays, steps = configures(dump_cluster({"chief": 0, "workers": 2, "ps": 1, "hdfs": True}))
    assert [s for s in steps if s[1] == "hdfs"] == [("worker", "hdfs", 2)]
    assert [s[2] for s in steps] == sorted(s[2] for s in steps)
    hdfs_vars = plays["hdfs"][0]["roles"][0]["vars"]
    assert hdfs_vars == {"hdfs_namenode_host": "{{ groups['worker'][0] }}", "hdfs_datanode_group": "worker"}
    doc, plays, steps = configures(dump_cluster({"workers": 2, "hdfs": True}))
    assert [s for s in steps if s[1] == "hdfs"] == [("chief", "hdfs", 2), ("worker", "hdfs", 2)]
    assert plays["hdfs"][0]["roles"][0]["vars"]["hdfs_namenode_group"] == "chief"
    assert plays["training"][0]["roles"][0]["vars"]["training_strategy"] == "multi_worker_mirrored"


def test_dump_without_a_chief_has_no_chief_system_and_the_workers_face_the_public_network():
    text = dump_cluster({"chief": 0, "workers": 2, "ps": 1})
    doc = radl_parse.parse_radl(text)
    assert text.startswith("# tfdist cluster: 2 workers, 1 ps (no chief: worker 0 leads).\n")
    assert doc.get_system_by_name("chief") is None
    worker = doc.get_system_by_name("worker")
    assert [worker.getValue("net_interface.%d.connection" % i) for i in (0, 1)] == ["public", "private"]
    assert [(d.id, d.vm_number) for d in doc.deploys] == [("worker", 2), ("ps", 1)]
    assert "chief" not in {item.system for item in doc.contextualize.items.values()}


@pytest.mark.parametrize("cluster, expected", [
    ([1, 2], "to_radl: expected a cluster dict"),
    ({"workers": 1, "chief": 2}, "to_radl: chief: a cluster has one chief or none (then worker 0 leads it), got 2"),
    ({"workers": 1, "chief": -1}, "to_radl: chief must be a whole number, 0 or more, got -1"),
    ({"workers": 1, "hdfs": "yes"}, "to_radl: hdfs must be true or false, got 'yes'"),
    ({}, "to_radl: workers must be a whole number, 1 or more, got None"),
    ({"workers": 0}, "to_radl: workers must be a whole number, 1 or more, got 0"),
    ({"workers": 1, "ps": -1}, "to_radl: ps must be a whole number, 0 or more, got -1"),
    ({"workers": True}, "to_radl: workers must be a whole number"),
    ({"workers": 1, "cloud": "ibm"}, "to_radl: cloud 'ibm': not one RADL can name"),
    ({"workers": 1, "nodes": {"gpu-box": {}}}, "to_radl: nodes.gpu-box: not a TF role"),
    ({"workers": 1, "nodes": {"worker": "g5.xlarge"}}, "to_radl: nodes.worker must be a dict"),
    ({"workers": 1, "nodes": {"worker": {"gpus": -1}}}, "to_radl: nodes.worker.gpus must be a whole number, 0 or more"),
    ({"workers": 1, "nodes": {"worker": {"image": "ami-0abc"}}}, "to_radl: nodes.worker.image 'ami-0abc': set cloud"),
    ({"workers": 1, "cloud": "aws", "nodes": {"worker": {"image": "ami-0abc"}}},
     "to_radl: nodes.worker.image 'ami-0abc': its aws:// URL needs region"),
    ({"workers": 1, "cloud": "openstack", "nodes": {"worker": {"image": "x"}}},
     "to_radl: nodes.worker.image 'x': its ost:// URL needs endpoint"),
    ({"workers": 1, "cloud": "azure", "nodes": {"worker": {"image": "Canonical:ubuntu"}}},
     "to_radl: nodes.worker.image 'Canonical:ubuntu': an image on cloud azure is PUBLISHER:OFFER:SKU:VERSION"),
    ({"workers": 1, "nodes": {"worker": {"size": "it's"}}},
     "to_radl: nodes.worker.size must be a string without quotes"),
    ({"workers": 1, "region": "us/east"}, "to_radl: region 'us/east': has a '/'"),
    ({"workers": 1, "ports": [22, "http"]}, "to_radl: ports: 'http' is not a port"),
    ({"workers": 1, "ports": [70000]}, "to_radl: ports: 70000 is not a port"),
    ({"workers": 1, "ports": "22"}, "to_radl: ports must be a list"),
])
def test_dump_names_the_bad_field(cluster, expected):
    with pytest.raises(TfdistRadlError) as info:
        dump_cluster(cluster)
    assert str(info.value).startswith(expected), str(info.value)


@pytest.mark.parametrize("version", ["1.0.0-rc1", "latest", 1.0])
def test_dump_refuses_a_collection_version_the_im_cannot_read(version):
    with pytest.raises(TfdistRadlError, match=r"^to_radl: collection_version .*: the IM's RADL takes a version of "
                                              r"dotted numbers"):
        dump_cluster({"workers": 1}, collection_version=version)
