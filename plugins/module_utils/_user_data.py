# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

"""The user-data tfdist gives a new node: a cloud-config that cloud-init reads at the node's first boot.

It makes the node as the clouds' own images do with their login user: USER, with the cluster's public key and
passwordless sudo (tfdist becomes root through it), and no SSH login as root; given a host key (_host_keys), the node
serves SSH with that key alone, which the controller has pinned. Each cloud's file says how user-data
reaches its nodes (CloudProvider.user_data_arg: EC2 UserData, GCE metadata, OpenStack user_data, the docker cloud's
NoCloud seed); _libcloud.user_data_kwargs puts it there.

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import json

from ansible_collections.tfdist.cluster.plugins.module_utils._provider import TfdistCloudError

# Passwordless sudo, as the clouds' images give their login user.
SUDO_RULE = 'ALL=(ALL) NOPASSWD:ALL'


def cloud_config(user, public_key, field='user_data', host_key=None):
    """The cloud-config text that creates `user` with `public_key` and passwordless sudo, root login off, and with
    `host_key` (a _host_keys.HostKey), makes that the node's only SSH host key.

    JSON is YAML, so cloud-init reads it as written. `field` names the option in errors.
    """
    if not user or user == 'root':
        raise TfdistCloudError('%s.user: the login user must be a user of its own, not %r: cloud-init gives it sudo and '
                               'turns root login off' % (field, user))
    key = (public_key or '').strip()
    if not key or '\n' in key:
        raise TfdistCloudError('%s.public_key: one OpenSSH public key line, got %r' % (field, public_key))
    config = {
        'users': [{
            'name': user,
            'shell': '/bin/bash',
            'lock_passwd': True,
            'sudo': SUDO_RULE,
            'ssh_authorized_keys': [key],
        }],
        # Keys the cloud gives root (an EC2 key pair) only print "log in as USER".
        'disable_root': True,
    }
    if host_key is not None:
        # The image's own host keys (a stock image may ship some) go; given keys, cloud-init generates no other type.
        config.update(ssh_keys={'ed25519_private': host_key.private, 'ed25519_public': host_key.public},
                      ssh_deletekeys=True)
    return '#cloud-config\n' + json.dumps(config, indent=2, sort_keys=True) + '\n'


# Where a driver may hand the user-data back in a node's extra data: a field of that name, or a metadata item of that
# key (GCE's metadata items).
USER_DATA_NAMES = ('user-data', 'user_data', 'userdata', 'userData')


def without_user_data(value):
    """A node's extra data without its user-data, which holds the node's private host key: never in a module's result,
    an inventory's host variables or its cache."""
    if isinstance(value, dict):
        return dict((key, without_user_data(item)) for key, item in value.items() if key not in USER_DATA_NAMES)
    if isinstance(value, (list, tuple)):
        return [without_user_data(item) for item in value
                if not (isinstance(item, dict) and item.get('key') in USER_DATA_NAMES)]
    return value
