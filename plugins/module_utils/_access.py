# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

"""How a cluster's nodes are reached: the cluster's key pair and its firewall, the policy every cloud follows.

Every cloud gets the same policy: SSH (and the public ports asked for) only from the controller's
addresses, the cluster's internal ports (TF, HDFS) only from members of the cluster. Each cloud file
spells it its own way in a ClusterAccess subclass: EC2 and OpenStack security groups that refer to
themselves (_cloud_ec2.py, _cloud_openstack.py), GCE firewall rules on a network tag (_cloud_gce.py),
an Azure network security group on the cluster's subnet (_cloud_azure.py).

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import re
import time

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._cluster import CLUSTER_NAME_RE, TAG_OWNER
from ansible_collections.tfdist.cluster.plugins.module_utils._owner import NAME_CHARS, is_own, name_part
from ansible_collections.tfdist.cluster.plugins.module_utils._provider import TfdistCloudError

SSH_PORT = 22
# Removing a security group fails while the cloud is still terminating the nodes in it.
DELETE_RETRY_SECONDS = 300
DELETE_RETRY_PERIOD = 5


# tfdist-<cluster>-<owner's part>, then what a cloud adds (GCE's -ssh): the owner's part is the last 6 hexadecimal
# digits before the suffix. A name made before owners were marked whose cluster ends so (tfdist-run-202611) reads as
# another owner's: only the audit reads names this way, and it then leaves the resource alone.
_OWNED_NAME_RE = re.compile(r'^(?P<cluster>.+)-(?P<owner>[0-9a-f]{%d})$' % NAME_CHARS)


def access_name(cluster, owner=None):
    """The name of the cluster's key pair, security group, firewall tag: tfdist-<cluster>-<owner's part>, or
    tfdist-<cluster> without an owner (as before owners were marked)."""
    return 'tfdist-%s' % cluster + ('-%s' % name_part(owner) if owner else '')


def access_parts(name, suffix=''):
    """(cluster, owner's part or None) of an access name (then `suffix`), or (None, None): access_name's inverse."""
    prefix = access_name('')
    if not (isinstance(name, str) and name.startswith(prefix) and name.endswith(suffix)):
        return None, None
    rest = name[len(prefix):len(name) - len(suffix)]
    owned = _OWNED_NAME_RE.match(rest)
    if owned and CLUSTER_NAME_RE.match(owned.group('cluster')):
        return owned.group('cluster'), owned.group('owner')
    return (rest, None) if CLUSTER_NAME_RE.match(rest) else (None, None)


def access_cluster(name, suffix=''):
    """The cluster whose access name (tfdist-<cluster>[-<owner's part>], then `suffix`) is `name`, or None."""
    return access_parts(name, suffix)[0]


def name_owner(name):
    """The owner's part of a tfdist name whatever the cloud added after it (tfdist-demo-1f3a2b-ssh), or None."""
    match = re.match(r'^tfdist-[a-z][a-z0-9-]*?-(?P<owner>[0-9a-f]{%d})(?:-[a-z]+)?$' % NAME_CHARS, str(name or ''))
    return match.group('owner') if match else None


def parse_ports(ports, field='internal_ports'):
    """[(from, to)] sorted and merged, from ints, 'N' or 'N-M' strings."""
    ranges = []
    for n, item in enumerate(ports):
        text = str(item).strip()
        low, dummy, high = text.partition('-')
        try:
            low, high = int(low), int(high or low)
        except ValueError:
            raise TfdistCloudError('%s[%d]: %r is not a port or a port range like 2222-2229' % (field, n, item))
        if not 1 <= low <= high <= 65535:
            raise TfdistCloudError('%s[%d]: %r is not within 1-65535 (low to high)' % (field, n, item))
        ranges.append((low, high))
    merged = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(high, merged[-1][1]))
        else:
            merged.append((low, high))
    return merged


def port_text(low, high):
    return str(low) if low == high else '%d-%d' % (low, high)


class PartlyFound(Exception):
    """What a ClusterAccess.found() raises when the credentials may not list some kind of resource: the audit goes on
    with what it found (.found) and names what it could not check (.unchecked, 'what: why' lines)."""

    def __init__(self, found, unchecked):
        super().__init__('; '.join(unchecked))
        self.found, self.unchecked = found, unchecked


class ClusterAccess:
    """Key pair and firewall of one cluster. Subclasses speak one cloud each."""

    def __init__(self, driver, cluster, ssh_cidrs, internal_ports, ssh_user='root', options=None, public_ports=(),
                 owner=None, own_unmarked=False):
        self.driver = driver
        self.cluster = cluster
        # With an owner, names carry its part: two controllers' clusters of one name never share a group (_owner.py).
        self.name = access_name(cluster, owner)
        # The name of the cluster's resources made before owners were marked; absent() removes them where they are
        # this controller's (own_unmarked).
        self.unmarked_name = access_name(cluster)
        self.ssh_cidrs = sorted(set(ssh_cidrs))
        self.ports = parse_ports(internal_ports)
        # Open to ssh_cidrs: SSH, and what else the user asks for (TensorBoard, say).
        self.public = parse_ports([SSH_PORT] + list(public_ports), 'public_ports')
        self.ssh_user = ssh_user
        # Unset profile entries arrive as empty strings.
        self.options = dict((key, value) for key, value in (options or {}).items() if value not in (None, ''))
        # The controller's id (_cluster.TAG_OWNER), marked on what present() makes; None: unmarked.
        self.owner = owner
        self.own_unmarked = own_unmarked
        self.changes = []

    def owns(self, mark):
        """Whether a resource of the cluster with this owner's mark (a tag, or the owner's part of its name; None
        without one) is this controller's to change or remove (_owner.is_own)."""
        return is_own(mark, self.owner, self.own_unmarked)

    def owner_tags(self):
        """The owner's tag of what present() makes: {tfdist_owner: id}, none without an owner."""
        return {TAG_OWNER: self.owner} if self.owner else {}

    # What libcloud_node gets back: JSON-safe, turned into create_node arguments by node_kwargs().
    def facts(self, firewall_id=None):
        return {'cloud': self.driver.type, 'name': self.name, 'cluster': self.cluster, 'ssh_user': self.ssh_user,
                'firewall_id': firewall_id, 'ssh_cidrs': self.ssh_cidrs,
                'internal_ports': [port_text(*r) for r in self.ports],
                'public_ports': [port_text(*r) for r in self.public], 'options': self.options}

    def changed(self, what):
        self.changes.append(what)

    def present(self, public_key, check_mode=False):
        """Make the key pair and the firewall match; returns the access facts."""
        raise NotImplementedError

    def absent(self, check_mode=False):
        """Remove the key pair and the firewall of the cluster, whatever their state."""
        raise NotImplementedError

    @staticmethod
    def node_kwargs(driver, access):
        """create_node keyword arguments that put a node behind the firewall and give it the key."""
        raise NotImplementedError

    @staticmethod
    def found(driver, options):
        """The key pairs and firewalls of every cluster on this cloud, found by the rules present() and absent()
        follow (tag or name): [(kind, id, name, cluster[, owner's mark])], read-only. The leak audit (_audit.py) reads
        it; without the mark it reads the owner's part of the name (name_owner). A kind the credentials may not list
        (a permission missing) is left out: PartlyFound carries the rest and says which."""
        raise NotImplementedError


def retry_while_in_use(delete, what, timeout=None):
    """Call delete() until it works: a group stays in use until the cloud has terminated its nodes."""
    deadline = time.monotonic() + (DELETE_RETRY_SECONDS if timeout is None else timeout)
    while True:
        try:
            # Errors come as exceptions; the boolean some drivers return is not reliable (EC2 emulators).
            delete()
            return
        except Exception as e:
            text = str(e)
            # GCE says it in an operation's error too: "The network resource ... is already being used by ...".
            in_use = any(word in text for word in ('DependencyViolation', 'in use', 'InUse', 'Conflict', '409',
                                                   'being used by'))
            if not in_use or time.monotonic() >= deadline:
                raise TfdistCloudError('could not remove %s: %s' % (what, text))
            time.sleep(DELETE_RETRY_PERIOD)
