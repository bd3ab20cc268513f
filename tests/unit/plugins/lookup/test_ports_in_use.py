"""tfdist.cluster.ports_in_use lookup: the ports something listens on, checked in one call."""

import socket

import pytest
from ansible.errors import AnsibleLookupError
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import lookup_loader


@pytest.fixture
def lookup():
    return lookup_loader.get("tfdist.cluster.ports_in_use", loader=DataLoader())


@pytest.fixture
def listener():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    yield server.getsockname()[1]
    server.close()


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_only_the_listening_port_is_returned(lookup, listener):
    free = free_port()
    assert lookup.run([free, listener, str(free)], variables={}) == [listener]


def test_a_port_out_of_range_is_named(lookup):
    with pytest.raises(AnsibleLookupError, match="'70000' is not a TCP port"):
        lookup.run(["70000"], variables={})
    with pytest.raises(AnsibleLookupError, match="'http' is not a TCP port"):
        lookup.run(["http"], variables={})
