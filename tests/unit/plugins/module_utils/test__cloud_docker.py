"""The docker cloud (module_utils/_cloud_docker.py): its libcloud driver against an in-memory fake of the Docker Engine
API (the real one: tests/integration/test_cloud_docker.py)."""

import io
import itertools
import json
import tarfile

import pytest
from ansible.module_utils.testing import patch_module_args
from docker.errors import APIError, DockerException, NotFound

from ansible_collections.tfdist.cluster.plugins.module_utils import _cloud_docker
from ansible_collections.tfdist.cluster.plugins.module_utils._cloud_docker import (
    GIB,
    DockerNodeDriver,
    network_name,
    node_state,
    size_limits,
)
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._cluster import node_tags
from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import (
    NodeIdentity,
    TfdistCloudError,
    get_driver,
    node_identity,
    tag_arg,
)
from ansible_collections.tfdist.cluster.plugins.modules import libcloud_node

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests test@tfdist"


class FakeAPI:
    """The few low-level docker API calls the driver makes, answering like Docker 20.10 does."""

    def __init__(self):
        self.containers_ = {}
        self.networks = {}
        self.calls = []
        self.archives = []
        self.ids = itertools.count(1)

    def _match(self, summary, filters):
        labels = summary["Labels"]
        for key, value in (filters or {}).items():
            if key == "label" and labels.get(value.split("=")[0]) != value.split("=")[1]:
                return False
            if key == "id" and summary["Id"] != value:
                return False
            if key == "network" and value not in summary["NetworkSettings"]["Networks"]:
                return False
        return True

    def containers(self, all=False, filters=None):
        self.calls.append("containers")
        return [dict(c) for c in self.containers_.values() if self._match(c, filters)]

    def add_container(self, image, command, name, network, labels, state="running"):
        """What containers.create() leaves behind: a container attached to `network` only."""
        n = next(self.ids)
        ip = "172.30.0.%d" % (n + 1) if state == "running" else ""
        self.containers_[name] = {
            "Id": "c%063d" % n, "Names": ["/" + name], "Image": image, "ImageID": "sha256:abc", "Created": 0,
            "State": state, "Status": "Up 1 second", "Labels": labels, "HostConfig": {"NetworkMode": network},
            "NetworkSettings": {"Networks": {network: {"IPAddress": ip}}},
        }
        return self.containers_[name]

    def fail(self, message):
        raise APIError(message)

    def remove_container(self, container_id, force=False):
        name = next((n for n, c in self.containers_.items() if c["Id"] == container_id), None)
        if name is None:
            raise NotFound("No such container")
        del self.containers_[name]

    def inspect_network(self, name):
        if name not in self.networks:
            raise NotFound("network %s not found" % name)
        return self.networks[name]

    def create_network(self, name, driver, labels, check_duplicate):
        self.networks[name] = {"Name": name, "Driver": driver, "Labels": labels}

    def remove_network(self, name):
        del self.networks[name]

    def restart(self, container_id, timeout):
        self.calls.append("restart")

    def put_archive(self, container_id, path, data):
        self.calls.append("put_archive")
        self.archives.append((container_id, path, data))

    def images(self):
        return [{"Id": "sha256:1", "RepoTags": ["tfdist/node:bookworm", "tfdist/node:latest"], "Size": 1},
                {"Id": "sha256:2", "RepoTags": ["<none>:<none>"], "Size": 1},
                {"Id": "sha256:3", "RepoTags": None, "Size": 1}]


class FakeContainers:
    """containers.create(); start() fails for images named in `fail_start`."""

    def __init__(self, api):
        self.api = api
        self.create_calls = []
        self.fail_start = set()

    def create(self, image, command, **kwargs):
        self.create_calls.append(dict(kwargs, image=image, command=command))
        summary = self.api.add_container(image, command, kwargs["name"], kwargs["network"], kwargs["labels"])
        container = type("Container", (), {"id": summary["Id"]})()
        if image in self.fail_start:
            container.start = lambda: self.api.fail("cannot start: executable file not found")
        else:
            container.start = lambda: self.api.calls.append("start")
        return container


class FakeClient:
    def __init__(self):
        self.api = FakeAPI()
        self.containers = FakeContainers(self.api)


@pytest.fixture
def engine(monkeypatch):
    """A fake engine that every driver built by docker.from_env() or DockerClient(base_url) talks to."""
    client = FakeClient()
    client.base_urls = []

    def docker_client(base_url=None, timeout=None):
        client.base_urls.append(base_url)
        return client

    monkeypatch.setattr(_cloud_docker.docker, "from_env", lambda timeout=None: client)
    monkeypatch.setattr(_cloud_docker.docker, "DockerClient", docker_client)
    return client


@pytest.fixture
def driver(engine):
    return get_driver("docker")


def create(driver, cluster="tfdist", role="worker", index=0, size="small", **kwargs):
    return driver.create_node(name="%s-%s-%d" % (cluster, role, index), size=size, image="tfdist/node:bookworm",
                              ex_metadata=node_tags(cluster, role, index), **kwargs)


def test_provider_docker_needs_no_credentials_and_takes_the_engine_url(engine):
    assert isinstance(get_driver("docker"), DockerNodeDriver)
    driver = get_driver("docker", driver_options={"host": "unix:///var/run/docker.sock"})

    assert engine.base_urls == ["unix:///var/run/docker.sock"]
    assert driver.type == "docker" and driver.name == "Docker Engine (tfdist)"
    assert tag_arg(driver) == "ex_metadata"


def test_unreachable_engine_says_how_to_start_it(monkeypatch):
    def refuse(timeout=None):
        raise DockerException("Error while fetching server API version: connection refused")

    monkeypatch.setattr(_cloud_docker.docker, "from_env", refuse)
    with pytest.raises(TfdistCloudError, match="Cannot reach the Docker engine.*ensure-docker.sh"):
        get_driver("docker")


def test_missing_docker_sdk_names_the_library(monkeypatch):
    monkeypatch.setattr(_cloud_docker, "HAS_DOCKER", False)
    with pytest.raises(TfdistCloudError, match=r"required Python library \(docker\)"):
        get_driver("docker")


def test_create_node_labels_network_and_no_published_ports(driver, engine):
    node = create(driver, role="worker", index=1, ex_authorized_key=KEY + "\n", ex_env={"A": "1"})

    run = engine.containers.create_calls[0]
    assert (run["name"], run["hostname"], run["image"]) == ("tfdist-worker-1", "tfdist-worker-1",
                                                            "tfdist/node:bookworm")
    assert run["labels"] == {"tfdist_cluster": "tfdist", "tfdist_role": "worker", "tfdist_index": "1",
                             "tfdist.managed": "true", "tfdist.size": "small"}
    assert run["network"] == "tfdist-tfdist"
    assert not any(key in run for key in ("ports", "publish_all_ports", "network_mode"))
    assert run["environment"] == {"A": "1", "TFDIST_AUTHORIZED_KEY": KEY}
    assert "sshd -D" in run["command"][-1] and "ssh-keygen -q -t ed25519" in run["command"][-1]
    assert engine.api.networks["tfdist-tfdist"]["Labels"] == {"tfdist.managed": "true", "tfdist_cluster": "tfdist"}
    assert node.name == "tfdist-worker-1"
    assert (node.public_ips, node.private_ips) == ([], ["172.30.0.2"])
    assert node.extra["network"] == "tfdist-tfdist"
    assert node.extra["container_id"] == node.id
    assert (node.size.id, node.image.id) == ("small", "tfdist/node:bookworm")
    assert node_identity(node) == NodeIdentity("tfdist", "worker", 1)


def test_user_data_boots_the_image_init_with_a_nocloud_seed_written_before_the_first_start(driver, engine):
    node = create(driver, ex_userdata="#cloud-config\n{}\n", ex_authorized_key=KEY, ex_env={"A": "1"})

    run = engine.containers.create_calls[0]
    # The image's own command (tfdist/node-vm: systemd) is PID 1, with what it needs in an unprivileged container.
    assert run["command"] is None and "init" not in run
    assert run["volumes"] == {"/sys/fs/cgroup": {"bind": "/sys/fs/cgroup", "mode": "ro"}}
    assert run["tmpfs"] == {"/run": "", "/run/lock": ""}
    assert run["environment"] == {"A": "1"}  # the login and its key are the user-data's
    assert [call for call in engine.api.calls if call in ("put_archive", "start")] == ["put_archive", "start"]
    [(container_id, path, data)] = engine.api.archives
    assert (container_id, path) == (node.id, "/")
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        members = dict((member.name, member) for member in archive.getmembers())
        files = dict((name, archive.extractfile(member).read().decode()) for name, member in members.items()
                     if member.isfile())
    assert files == {"var/lib/cloud/seed/nocloud/user-data": "#cloud-config\n{}\n",
                     "var/lib/cloud/seed/nocloud/meta-data": "instance-id: %s\nlocal-hostname: tfdist-worker-0\n" % node.id}
    assert [oct(members[name].mode) for name in sorted(members)] == ["0o700", "0o600", "0o600"]


def test_a_container_that_cannot_start_is_not_left_behind(driver, engine):
    engine.containers.fail_start.add("broken:latest")

    with pytest.raises(APIError, match="cannot start"):
        driver.create_node(name="tfdist-worker-0", size="small", image="broken:latest",
                           ex_metadata=node_tags("tfdist", "worker", 0))

    assert driver.list_nodes() == []


@pytest.mark.parametrize("cluster, network", [("tfdist", "tfdist-tfdist"), ("big-run", "tfdist-big-run")])
def test_network_is_named_after_the_cluster(cluster, network):
    assert network_name(cluster) == network


def test_ex_network_overrides_and_a_network_is_created_once(driver, engine):
    create(driver, index=0, ex_network="mine")
    create(driver, index=1, ex_network="mine")

    assert list(engine.api.networks) == ["mine"]
    assert [run["network"] for run in engine.containers.create_calls] == ["mine", "mine"]


def test_a_node_without_cluster_tag_or_network_is_refused(driver):
    with pytest.raises(TfdistCloudError, match="ex_network or a tfdist_cluster tag"):
        driver.create_node(name="web", size="small", image="tfdist/node:bookworm")


@pytest.mark.parametrize("size, limits", [
    ("small", {"nano_cpus": 10 ** 9, "mem_limit": 2 * GIB}),
    ("medium", {"nano_cpus": 2 * 10 ** 9, "mem_limit": 4 * GIB}),
    ("large", {"nano_cpus": 4 * 10 ** 9, "mem_limit": 8 * GIB}),
    ("host", {}),
])
def test_sizes_map_to_cpu_and_memory_limits(driver, engine, size, limits):
    create(driver, size=size)

    run = engine.containers.create_calls[0]
    assert {key: run[key] for key in ("nano_cpus", "mem_limit") if key in run} == limits
    assert size_limits(size) == limits


def test_unknown_size_lists_the_known_ones(driver):
    assert [(s.id, s.ram, s.extra["cpus"]) for s in driver.list_sizes()] == [
        ("small", 2048, 1), ("medium", 4096, 2), ("large", 8192, 4), ("host", 0, None)]
    with pytest.raises(TfdistCloudError, match="Unknown docker size 'huge'; known sizes: small, medium"):
        create(driver, size="huge")


@pytest.mark.parametrize("docker_state, state", [
    ("running", "running"), ("created", "pending"), ("restarting", "pending"), ("paused", "paused"),
    ("exited", "stopped"), ("dead", "terminated"), ("removing", "terminated"), ("weird", "unknown"),
])
def test_container_states_map_to_node_states(docker_state, state):
    assert node_state(docker_state) == state


def test_list_nodes_is_one_call_for_managed_containers_only(driver, engine):
    for index in range(3):
        create(driver, index=index)
    engine.api.add_container("tfdist/node:bookworm", "sh", "tfdist-worker-9", "tfdist-tfdist", {"x": "y"})  # not ours
    engine.api.add_container("tfdist/node:bookworm", "sh", "tfdist-chief-0", "tfdist-tfdist",
                             dict(node_tags("tfdist", "chief", 0), **{"tfdist.managed": "true"}), state="exited")
    engine.api.calls.clear()

    nodes = driver.list_nodes()

    assert engine.api.calls == ["containers"]
    assert sorted((n.name, n.state, tuple(n.private_ips)) for n in nodes) == [
        ("tfdist-chief-0", "stopped", ()),
        ("tfdist-worker-0", "running", ("172.30.0.2",)),
        ("tfdist-worker-1", "running", ("172.30.0.3",)),
        ("tfdist-worker-2", "running", ("172.30.0.4",)),
    ]
    assert sorted(node_identity(n) for n in nodes)[0] == NodeIdentity("tfdist", "chief", 0)


def test_destroy_removes_the_network_with_its_last_container(driver, engine):
    first, second = create(driver, index=0), create(driver, index=1)
    other = create(driver, cluster="other")

    assert driver.destroy_node(first) is True
    assert "tfdist-tfdist" in engine.api.networks  # second is still on it
    driver.destroy_node(second)
    assert "tfdist-tfdist" not in engine.api.networks
    assert driver.destroy_node(second) is True  # already gone: nothing to do
    assert [n.name for n in driver.list_nodes()] == [other.name]
    assert list(engine.api.networks) == ["tfdist-other"]


def engine_releasing_endpoints(engine, monkeypatch, refusals):
    """The engine refuses to remove a network `refusals` times for its active endpoints though no container is on it
    (it releases them late, or keeps one for good: seen with 32 containers removed in parallel), then removes it."""
    removals = []
    remove = engine.api.remove_network

    def remove_network(name):
        removals.append(name)
        if len(removals) <= refusals:
            raise APIError("error while removing network: network %s id 1 has active endpoints" % name)
        remove(name)

    monkeypatch.setattr(engine.api, "remove_network", remove_network)
    monkeypatch.setattr(_cloud_docker.time, "sleep", lambda seconds: None)
    return removals


def test_destroy_waits_for_the_engine_to_release_the_last_endpoints(driver, engine, monkeypatch):
    removals = engine_releasing_endpoints(engine, monkeypatch, refusals=3)
    node = create(driver)

    driver.destroy_node(node)

    assert removals == ["tfdist-tfdist"] * 4
    assert "tfdist-tfdist" not in engine.api.networks


def test_a_network_whose_endpoints_stay_is_named_not_left_silently(driver, engine, monkeypatch):
    engine_releasing_endpoints(engine, monkeypatch, refusals=10 ** 6)
    monkeypatch.setattr(_cloud_docker, "_ENDPOINT_RELEASE_SECONDS", 0.0)
    node = create(driver)

    refused = "network tfdist-tfdist has no container left, yet .* restart the Docker engine, then: docker network rm"
    with pytest.raises(TfdistCloudError, match=refused):
        driver.destroy_node(node)


def test_a_network_another_run_joined_meanwhile_stays(driver, engine, monkeypatch):
    removals = engine_releasing_endpoints(engine, monkeypatch, refusals=1)
    node = create(driver)
    joined = []

    def sleep(seconds):  # while the engine refuses, another run's node joins the network
        if not joined:
            joined.append(engine.api.add_container("tfdist/node:bookworm", "sshd", "tfdist-worker-1", "tfdist-tfdist",
                                                   node_tags("tfdist", "worker", 1)))

    monkeypatch.setattr(_cloud_docker.time, "sleep", sleep)
    driver.destroy_node(node)

    assert removals == ["tfdist-tfdist"]
    assert "tfdist-tfdist" in engine.api.networks


def test_destroy_keeps_a_network_that_tfdist_did_not_create(driver, engine):
    engine.api.networks["shared"] = {"Name": "shared", "Labels": {}}
    node = create(driver, ex_network="shared")

    driver.destroy_node(node)

    assert "shared" in engine.api.networks
    assert engine.api.containers_ == {}


def test_images_are_listed_by_tag(driver):
    assert [(i.id, i.name, i.extra["image_id"]) for i in driver.list_images()] == [
        ("tfdist/node:bookworm", "tfdist/node:bookworm", "sha256:1"),
        ("tfdist/node:latest", "tfdist/node:latest", "sha256:1"),
    ]
    assert [loc.id for loc in driver.list_locations()] == ["local"]


def test_wait_until_running_uses_the_cluster_ip_even_when_asked_for_public(driver):
    node = create(driver)

    ready = driver.wait_until_running([node], wait_period=0.01, timeout=1, ssh_interface="public_ips")

    assert [(n.name, ips) for n, ips in ready] == [("tfdist-worker-0", ["172.30.0.2"])]


def test_reboot_restarts_the_container(driver, engine):
    assert driver.reboot_node(create(driver)) is True
    assert "restart" in engine.api.calls


def test_libcloud_node_module_creates_a_cluster_with_provider_docker(engine, capsys):
    args = dict(provider="docker", cluster="tfdist", wait_timeout=10, roles=[
        dict(role="chief", count=1, size="small", image="tfdist/node:bookworm",
             create_args={"ex_authorized_key": KEY}),
        dict(role="worker", count=2, size="host", image="tfdist/node:bookworm")])
    with patch_module_args(args), pytest.raises(SystemExit):
        libcloud_node.main()
    result = json.loads(capsys.readouterr().out)

    assert result["changed"] is True, result
    assert [(n["name"], n["role"], n["index"], n["size"]) for n in result["nodes"]] == [
        ("tfdist-chief-0", "chief", 0, "small"), ("tfdist-worker-0", "worker", 0, "host"),
        ("tfdist-worker-1", "worker", 1, "host")]
    for node in result["nodes"]:
        assert node["address"] == node["private_ips"][0] and node["public_ips"] == []
        assert node["extra"]["tags"]["tfdist_cluster"] == "tfdist"


def destroy_with_module(capsys, cluster, check_mode=False):
    args = dict(provider="docker", cluster=cluster, state="absent", _ansible_check_mode=check_mode)
    with patch_module_args(args), pytest.raises(SystemExit):
        libcloud_node.main()
    return json.loads(capsys.readouterr().out)


def test_destroy_removes_the_network_a_cluster_left_without_nodes(engine, capsys):
    """A destroy cut short between the last container and the network, or a create that failed before its first
    container, leaves the cluster's network: the next destroy removes it, and no other network."""
    engine.api.networks["tfdist-demo"] = {"Name": "tfdist-demo", "Labels": {"tfdist.managed": "true", "tfdist_cluster": "demo"}}
    engine.api.networks["tfdist-other"] = {"Name": "tfdist-other", "Labels": {"tfdist.managed": "true"}}
    engine.api.networks["tfdist-mine"] = {"Name": "tfdist-mine", "Labels": {}}

    planned = destroy_with_module(capsys, "demo", check_mode=True)
    assert (planned["changed"], planned["removed_leftovers"]) == (True, ["network tfdist-demo"])
    assert "tfdist-demo" in engine.api.networks

    result = destroy_with_module(capsys, "demo")
    assert (result["changed"], result["removed_leftovers"]) == (True, ["network tfdist-demo"])
    assert sorted(engine.api.networks) == ["tfdist-mine", "tfdist-other"]
    again = destroy_with_module(capsys, "demo")
    assert (again["changed"], again["removed_leftovers"]) == (False, [])
    # A network of the user's that happens to have the cluster's network name is never tfdist's to remove.
    assert destroy_with_module(capsys, "mine")["removed_leftovers"] == []
    assert "tfdist-mine" in engine.api.networks


def test_destroy_leaves_a_cluster_network_that_nodes_still_use(driver, engine, capsys):
    create(driver, cluster="demo")
    # Another cluster's container on that network (docker allows it with ex_network): not this destroy's to cut off.
    engine.api.add_container("tfdist/node:bookworm", "sshd", "other-worker-0", "tfdist-demo", node_tags("other", "worker", 0))

    result = destroy_with_module(capsys, "demo")

    assert [n["name"] for n in result["removed"]] == ["demo-worker-0"]
    assert result["removed_leftovers"] == [] and "tfdist-demo" in engine.api.networks
