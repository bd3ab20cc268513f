# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Filters over how to ssh to a cluster's nodes (plugins/module_utils/_host_keys.py): the inventory source's ssh
arguments and the cluster's ssh config, one rule for both.

Each filter is documented in plugins/filter/<name>.yml.
"""

from __future__ import annotations

import os


def ssh_config(nodes, user, identity_file, known_hosts='', port=22, cluster=''):
    """The text of the cluster's OpenSSH client config: a Host block per node."""
    # Imported here: Jinja loads this file wherever a template names a filter of it (_host_keys imports cryptography).
    from ansible_collections.tfdist.cluster.plugins.module_utils import _host_keys

    # ssh reads a relative IdentityFile from where it runs, not from where the deploy ran.
    known_hosts = os.path.abspath(os.path.expanduser(known_hosts)) if known_hosts else ''
    return _host_keys.ssh_config(nodes, user, os.path.abspath(os.path.expanduser(identity_file)),
                                 known_hosts, int(port), cluster)


def ssh_args(known_hosts, node=''):
    """The ssh options (ansible_ssh_common_args) that check a node's host key as the cluster's ssh config does."""
    from ansible_collections.tfdist.cluster.plugins.module_utils import _host_keys

    return _host_keys.ssh_args(known_hosts or '', node)


class FilterModule:
    def filters(self):
        return {
            'ssh_config': ssh_config,
            'ssh_args': ssh_args,
        }
