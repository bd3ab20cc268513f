"""Unit-test set-up: a fake libcloud cloud shared by the plugin tests (the collection loader: tests/conftest.py)."""

import collections
import itertools
import threading

import pytest

from libcloud.compute.base import Node
from libcloud.compute.drivers.dummy import DummyConnection, DummyNodeDriver
from libcloud.compute.types import NodeState

from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import register_driver


class FakeCloud(DummyNodeDriver):
    """libcloud's DummyNodeDriver, made to behave like a real cloud for the tests.

    It honours `name` and keeps `ex_metadata` as tags in node.extra (as EC2 does), and keeps its nodes
    at class level: every driver instance (one per module run, one per worker thread) sees one cloud.
    It counts list_nodes() calls and fails to create the nodes named in `fail_names`.
    """

    nodes = []
    calls = collections.Counter()
    fail_names = set()
    _lock = threading.Lock()
    _ids = itertools.count(1)

    def __init__(self, creds=None, **kwargs):
        self.creds = creds
        self.connection = DummyConnection(creds)

    def list_nodes(self):
        self.calls["list_nodes"] += 1
        return list(self.nodes)

    def create_node(self, name, size, image, location=None, ex_metadata=None):
        return self._create(name, size, image, {"tags": dict(ex_metadata or {})})

    def _create(self, name, size, image, extra):
        if name in self.fail_names:
            raise RuntimeError("quota exceeded")
        with self._lock:
            n = next(self._ids)
            node = Node(id="fake-%d" % n, name=name, state=NodeState.RUNNING,
                        public_ips=["127.0.%d.%d" % divmod(n, 250)], private_ips=["10.0.%d.%d" % divmod(n, 250)],
                        driver=self, size=size, image=image, extra=extra)
            FakeCloud.nodes.append(node)
        return node

    def start_node(self, node):
        self.calls["start_node"] += 1
        node.state = NodeState.RUNNING
        return True

    def destroy_node(self, node):
        with self._lock:
            FakeCloud.nodes = [n for n in FakeCloud.nodes if n.id != node.id]
        return True

    @classmethod
    def add(cls, name, tags=None, **attributes):
        """Put a node straight into the cloud, e.g. one not made by tfdist or in another state."""
        node = cls().create_node(name, None, None, ex_metadata=tags)
        for key, value in attributes.items():
            setattr(node, key, value)
        return node

    @classmethod
    def names(cls):
        return sorted(node.name for node in cls.nodes)


class UntaggedFakeCloud(FakeCloud):
    """A cloud that keeps no tags, like the plain DummyNodeDriver: only node names identify tfdist nodes."""

    def create_node(self, name, size, image, location=None):
        return self._create(name, size, image, {"foo": "bar"})


@pytest.fixture
def cloud():
    """An empty fake cloud, reachable as provider `fake` (tags kept) or `fake_untagged` (no tags)."""
    FakeCloud.nodes = []
    FakeCloud.calls = collections.Counter()
    FakeCloud.fail_names = set()
    register_driver("fake", FakeCloud)
    register_driver("fake_untagged", UntaggedFakeCloud)
    return FakeCloud
