# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r'''
name: ports_in_use
author: tfdist maintainers (@tfdist)
short_description: The TCP ports of the controller that something already listens on
version_added: 0.5.0
description:
  - Tries to connect to each port on O(host) from the controller, and returns the ports that accept, in the order
    given. A refused or unanswered connection counts as a free port.
  - One lookup checks every port of a cluster at once, where a P(ansible.builtin.wait_for#module) loop costs one
    module run per port.
options:
  _terms:
    description: TCP ports, 1 to 65535.
    type: list
    elements: int
    required: true
  host:
    description: The address to connect to.
    type: str
    default: 127.0.0.1
  timeout:
    description: Seconds to wait for each connection.
    type: float
    default: 0.5
seealso:
  - module: ansible.builtin.wait_for
'''

EXAMPLES = r'''
- name: Stop when a port of the local cluster is taken
  ansible.builtin.fail:
    msg: "port {{ busy | join(', ') }} already in use"
  vars:
    busy: "{{ query('tfdist.cluster.ports_in_use', 2222, 2223, 2224) }}"
  when: busy | length > 0
'''

RETURN = r'''
_raw:
  description: The ports that something listens on.
  type: list
  elements: int
'''

import socket

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase


def listening(host, port, timeout):
    """True when a TCP connection to host:port is accepted."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(timeout)
        return probe.connect_ex((host, port)) == 0


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        host, timeout = self.get_option('host'), float(self.get_option('timeout'))
        ports = []
        for term in terms:
            try:
                port = int(term)
            except (TypeError, ValueError):
                port = 0
            if not 0 < port < 65536:
                raise AnsibleLookupError("ports_in_use: %r is not a TCP port (1 to 65535)" % (term,))
            ports.append(port)
        try:
            return [port for port in ports if listening(host, port, timeout)]
        except OSError as e:
            raise AnsibleLookupError("ports_in_use: cannot check %s: %s" % (host, e)) from None
