# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

"""Whose cluster: the owner's mark (_cluster.TAG_OWNER) and the one rule that says which resources are this
controller's.

Every controller has an id of its own, random, made once under its tfdist home (controller_id), or the one its SSH
key gives (key_id, where the user hands tfdist a key with tf_ssh_key). What it makes on a
cloud carries that id: as the tag tfdist_owner where the cloud keeps tags (nodes, EC2 key pairs and security groups,
Azure network security groups), and as the last part of the name where the cloud keys a resource by its name
(tfdist-<cluster>-<first 6 characters of the id>: key pairs, security groups, firewall rules, subnets; _access.py).
Two controllers on one account then never share a resource, and destroy and the leak audit touch only their own.

A resource without a mark was made before tfdist 0.5.0 (or by a module run without an owner). It counts as this
controller's only where this controller holds the cluster's inventory source, or the user names the cluster
(audit_clusters): nothing else says whose it is.

Standard library only. Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import subprocess
import tempfile

# How much of the id goes into names: GCE names (firewall rules, network tags) have at most 63 characters, and
# tfdist-<40-character cluster>-<6>-internal is 63.
NAME_CHARS = 6
OWNER_RE = re.compile(r'^[0-9a-f]{32}$')


def new_id():
    """A new controller id: 32 hexadecimal digits, random."""
    return secrets.token_hex(16)


def controller_id(path):
    """The controller id kept in `path`, made there once (mode 0600, its folder 0700 when new) where missing.

    Two runs that start at once make it once: the file is written beside and linked into place, which fails for the
    second; both then read the first one's id.
    """
    try:
        with open(path, encoding='ascii') as handle:
            owner = handle.read().strip()
    except FileNotFoundError:
        folder = os.path.dirname(path) or '.'
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd, fresh = tempfile.mkstemp(dir=folder, prefix='.controller-id.')  # mode 0600
        with os.fdopen(fd, 'w', encoding='ascii') as handle:
            handle.write(new_id() + '\n')
        try:
            os.link(fresh, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(fresh)
        return controller_id(path)
    if not OWNER_RE.match(owner):
        raise ValueError('%s: not a tfdist controller id (32 hexadecimal digits); remove it and a new one is made'
                         % path)
    return owner


def key_id(public_key):
    """The controller id of whoever holds the private key of `public_key` (an OpenSSH public key line).

    Two controllers given the same key (two runs of an execution environment with one AWX machine credential) are one
    owner: the second can destroy what the first made, with no state of its own. Only the key's type and body count.
    """
    fields = public_key.split()
    if len(fields) < 2:
        raise ValueError('not an OpenSSH public key: %r' % public_key[:40])
    return hashlib.sha256(('tfdist-owner %s %s' % (fields[0], fields[1])).encode()).hexdigest()[:32]


def public_key(path):
    """The public half of the private key at `path` (ssh-keygen -y), never asking for a passphrase: the one place
    tfdist reads it (the ssh_public_key lookup for the cluster's key pair, the controller_id lookup, the check).

    ValueError, saying why, where ssh could not use the key as it is (no such file, a passphrase, not a key).
    """
    # pylint: disable-next=ansible-bad-function  # no AnsibleModule here: no run_command
    done = subprocess.run(['ssh-keygen', '-y', '-P', '', '-f', path], capture_output=True, text=True, check=False,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise ValueError('%s is not a private key ssh can use without a passphrase (%s)'
                         % (path, done.stderr.strip()[:200] or 'ssh-keygen -y failed'))
    return done.stdout.strip()


def name_part(owner):
    """What of the owner's id goes into a resource's name."""
    return owner[:NAME_CHARS]


def marked_by(mark, owner):
    """Whether a resource's mark (its tfdist_owner tag, or the part of its name) is `owner`'s."""
    return bool(mark) and bool(owner) and mark in (owner, name_part(owner))


def is_own(mark, owner, own_unmarked):
    """Whether a resource with this mark is the cluster's for a controller whose id is `owner`.

    No `owner` (a module run without one): every resource is, as before owners were marked. A resource without a mark
    is when `own_unmarked` (the controller holds the cluster's inventory source, or the user named the cluster).
    """
    if not owner:
        return True
    if not mark:
        return bool(own_unmarked)
    return marked_by(mark, owner)


def show(mark):
    """'owner 1f3a2b...': an owner in a message, by the part of its id that names carry."""
    return 'owner %s...' % name_part(str(mark))
