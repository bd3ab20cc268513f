# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

"""The SSH host keys of a cluster's nodes, made by tfdist on the controller and pinned there.

Every new node that gets user-data gets a host key pair of its own (ed25519), made here in memory and handed over in
its cloud-config (cloud-init's `ssh_keys`: _user_data.cloud_config). Its public half goes into the cluster's
known_hosts file on the controller, one line per node under the node's name, not its address (an EC2 stop and start
gives a node another public IP); its private half is never written on the controller. Ansible then accepts from each
node only its line's key (ssh_args, set per host by the libcloud inventory plugin's `known_hosts`), and a node that
answers with another key is refused by name (refusal, which the concise callback shows instead of ssh's banner).
The cluster's ssh config (ssh_config, `ssh -F`) follows the same rule (ssh_options) for a person's own ssh.

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import os
import shlex
import traceback
from collections import namedtuple

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._files import write_file
from ansible_collections.tfdist.cluster.plugins.module_utils._provider import TfdistCloudError

try:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat
except ImportError:
    HAS_CRYPTOGRAPHY = False
    CRYPTOGRAPHY_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_CRYPTOGRAPHY = True
    CRYPTOGRAPHY_IMPORT_ERROR = None

# The known_hosts file is the controller's record of who the nodes are: its user's only, in the keys' own folder.
KNOWN_HOSTS_MODE = 0o600
KEY_DIR_MODE = 0o700
# The host variable that names a host's known_hosts file (the libcloud inventory plugin's known_hosts option).
KNOWN_HOSTS_VAR = 'tfdist_known_hosts'
# What ssh says, last, when it refuses a node over its host key (changed, or none known for its name).
SSH_REFUSAL = 'Host key verification failed'

# private: the OpenSSH private key text; public: the public key line (type, key, comment).
HostKey = namedtuple('HostKey', ['private', 'public'])


def new_host_key(node):
    """A new ed25519 host key pair for the node named `node`, made in memory (cryptography, which Ansible needs)."""
    if not HAS_CRYPTOGRAPHY:
        raise TfdistCloudError(missing_required_lib('cryptography', reason='host keys (user_data.known_hosts)'))
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(Encoding.PEM, PrivateFormat.OpenSSH, NoEncryption()).decode()
    public = key.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode()
    return HostKey(private, '%s root@%s' % (public, node))


def secret_parts(host_key):
    """The lines of the private key's body, for a module's no_log values: each is masked wherever it shows, in the key
    as written and in the JSON of a cloud-config (where its line breaks are escaped) alike."""
    return [line for line in host_key.private.splitlines() if line and not line.startswith('-----')]


def pinned(known_hosts):
    """{node name: 'type key'} of a known_hosts file as record() writes it; {} when there is none."""
    try:
        with open(known_hosts) as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        return {}
    keys = {}
    for line in lines:
        fields = line.split()
        if len(fields) >= 3 and not fields[0].startswith('#'):
            keys[fields[0]] = ' '.join(fields[1:3])
    return keys


def record(known_hosts, keys, forget=()):
    """Pin `keys` ({node name: public key line}) in the known_hosts file, each replacing any line of its node, and drop
    the lines of the nodes named in `forget`. The file (mode 0600) and its folder (0700) are made when missing;
    written only when its lines change. True when it changed."""
    wanted = pinned(known_hosts)
    before = dict(wanted)
    for name in forget:
        wanted.pop(name, None)
    wanted.update((name, ' '.join(line.split()[:2])) for name, line in keys.items())
    if wanted == before and os.path.exists(known_hosts):
        return False
    folder = os.path.dirname(os.path.abspath(known_hosts))
    if not os.path.isdir(folder):
        os.makedirs(folder, mode=KEY_DIR_MODE)
    write_file(known_hosts, ''.join('%s %s\n' % (name, wanted[name]) for name in sorted(wanted)).encode(),
               mode=KNOWN_HOSTS_MODE)
    return True


def ssh_options(known_hosts, node):
    """[(option, value)]: how ssh checks node `node`'s host key, the one rule of both the inventory's ssh arguments
    (ssh_args) and the cluster's ssh config (ssh_config). With `known_hosts`, only the key pinned for its name in that
    file, looked up by the name (HostKeyAlias), whatever the address, never added to. Without (nodes that make their
    own host keys, new with every node), none is checked or kept."""
    if not known_hosts:
        return [('StrictHostKeyChecking', 'no'), ('UserKnownHostsFile', '/dev/null'), ('LogLevel', 'ERROR')]
    return [
        ('StrictHostKeyChecking', 'yes'),
        ('UserKnownHostsFile', known_hosts),
        ('GlobalKnownHostsFile', '/dev/null'),
        ('HostKeyAlias', node),
        ('LogLevel', 'ERROR'),
    ]


def _ssh_value(value):
    """An option's value as ssh reads it, from a -o argument and a config file alike: between double quotes where it
    has spaces (a path)."""
    value = str(value)
    return '"%s"' % value if any(char.isspace() for char in value) else value


def ssh_args(known_hosts, node):
    """The ssh options (ansible_ssh_common_args) of ssh_options, as one line that Ansible splits as a shell would."""
    options = ssh_options(known_hosts, node)
    return ' '.join('-o ' + shlex.quote('%s=%s' % (name, _ssh_value(value))) for name, value in options)


def ssh_config(nodes, user, identity_file, known_hosts='', port=22, cluster=''):
    """The text of an OpenSSH client config (ssh -F) with one Host block per node of `nodes` ({name, address}, as
    the libcloud_node module returns them), named after the node: its address, the login `user`, `port`, the
    cluster's key alone (`identity_file`) and the host key rule of ssh_options. A node with no address yet is named
    in a comment."""
    lines = ['# ssh config%s, written by tfdist at each provision (deploy) and removed by destroy:'
             % (' of cluster %s' % cluster if cluster else ''),
             '#   ssh -F <this file> <node name>']
    for node in nodes:
        if not node.get('address'):
            lines += ['', '# %s: no address yet (a deploy writes it once the node has one)' % node['name']]
            continue
        options = [('HostName', node['address']), ('User', user), ('Port', port),
                   ('IdentityFile', identity_file), ('IdentitiesOnly', 'yes')]
        options += ssh_options(known_hosts, node['name'])
        lines += ['', 'Host %s' % node['name']] + ['  %s %s' % (name, _ssh_value(value)) for name, value in options]
    return '\n'.join(lines) + '\n'


def refusal(node, known_hosts, ssh_message):
    """What to tell the user when ssh refused node `node` over its host key (`ssh_message`: what Ansible's ssh
    connection reported); None for any other failure."""
    if SSH_REFUSAL not in (ssh_message or ''):
        return None
    if node in pinned(known_hosts):
        return ('node %s answered with a host key other than the one tfdist gave it at creation (known_hosts: %s); '
                'refusing to connect: another machine may answer at its address. If you changed its host key yourself, '
                "put its new public key on the node's line of that file; a node that tfdist creates again gets a new "
                'key and line.' % (node, known_hosts))
    return ('node %s has no host key in its cluster\'s known_hosts (%s): tfdist pins the key of every node it creates '
            'with user-data, and this one was not made so by this controller; refusing to connect. Remove the node '
            '(a deploy creates it again, with a key) or add its line to that file.' % (node, known_hosts))
