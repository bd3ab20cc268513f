# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

"""The leak audit: what of tfdist's clusters a cloud still holds, found through libcloud, read-only.

A cluster's resources are whatever carries its tag (tfdist_cluster, _cluster.py) or, where a cloud keeps no tags
on a kind of resource, its name (tfdist-<cluster>, _access.py; <cluster>-<role>-<index> for nodes on tagless
drivers, _libcloud.node_identity):

- nodes: every node of driver.list_nodes() that node_identity() recognises, and every other node tagged with a
  cluster (a helper VM the user tagged for the cluster: destroy leaves it, as it is no TF node of the cluster);
  terminated nodes (EC2 lists them for a while) are gone and left out;
- volumes, on drivers with list_volumes(), tagged with a cluster, or named after a cluster's node as the boot disks
  of GCE and Azure are (a disk that outlived its node); not one its node deletes on termination (EC2);
- the key pairs and firewalls, by the rules the cloud's ClusterAccess.present() and absent() follow, and what else
  of a cluster the cloud's found() (_cloud_<name>.py) lists: EC2's network interfaces (tagged at creation),
  OpenStack's ports and floating IPs, Azure's network interfaces and subnets, ...;
- drivers of tfdist's own (docker) list what else they make with ex_audit_found() (the cluster networks).

Baked images (_images.py) belong to no cluster: they are the user's to keep, listed apart (baked_images) and never
counted as left behind.

Whose: every resource has its owner's mark (its tfdist_owner tag, or the owner's part of its name, _access.py), and
the caller says which controller it is (_owner.py). Another owner's resources are listed as that owner's, never as
orphans. A resource without a mark (made before tfdist 0.5.0) counts as this controller's only where this
controller holds the cluster's inventory source, or where the caller names the cluster (the user says it is theirs).

A cluster is an orphan when this controller's resources of it have no inventory source here (the caller says which
clusters it holds: the provision role knows where inventory sources live). Removing goes through destroy's own path
(the provision role with provision_state=absent), never through here.

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

from collections import namedtuple

from ansible_collections.tfdist.cluster.plugins.module_utils._access import PartlyFound, name_owner
from ansible_collections.tfdist.cluster.plugins.module_utils._cloud_ec2 import goes_with_its_node
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._cluster import CLUSTER_NAME_RE, NODE_NAME_RE, TAG_CLUSTER, TAG_OWNER
from ansible_collections.tfdist.cluster.plugins.module_utils._images import to_dict as image_dict
from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import node_identity, provider_of, resource_tags
from ansible_collections.tfdist.cluster.plugins.module_utils._owner import marked_by, name_part, show

# owner: the resource's owner's mark (a controller id, or the part of it in a name), None without one.
Resource = namedtuple('Resource', ['kind', 'id', 'name', 'cluster', 'owner'], defaults=(None,))

# Whose a resource is, for the controller that audits (standing()), in the order the report lists them.
MINE, ORPHAN, UNMARKED, OTHERS = 'mine', 'orphan', 'unmarked', 'another owner'
STANDINGS = (MINE, ORPHAN, UNMARKED, OTHERS)

# The order in which a cluster's resources are listed: what costs most first.
KINDS = ('node', 'volume', 'network interface', 'floating IP', 'network', 'key pair', 'security group',
         'firewall rule', 'network security group', 'subnet')
_GONE_VOLUME_STATES = ('deleting', 'deleted')
# A node on its way out is not left behind: libcloud's terminated, and EC2's shutting-down (libcloud says unknown
# and keeps EC2's own state in extra.status) for the minute after TerminateInstances.
_GOING_NODE_STATES = ('terminated', 'shutting-down')


def describe(resource):
    """'node demo-worker-0 (i-0123)': the kind, the name and, when it differs, the id."""
    name, ident = str(resource.name or resource.id), str(resource.id)
    return '%s %s%s' % (resource.kind, name, '' if ident == name else ' (%s)' % ident)


def find(driver, clusters=(), options=None):
    """(resources, unchecked): the tfdist Resources on the driver's cloud (of `clusters` only, when given), sorted by
    cluster, kind and name; and what could not be listed, as 'what: why' strings."""
    wanted = set(clusters or ())
    found, unchecked = [], []

    def add(kind, ident, name, cluster, owner=None):
        if isinstance(cluster, str) and CLUSTER_NAME_RE.match(cluster) and (not wanted or cluster in wanted):
            found.append(Resource(kind, str(ident), name, cluster, owner or name_owner(name)))

    provider = provider_of(driver.type)
    for node in driver.list_nodes(**provider.audit_args):
        if str(node.state) in _GOING_NODE_STATES or (node.extra or {}).get('status') in _GOING_NODE_STATES:
            continue
        identity = node_identity(node)
        tags = resource_tags(node)
        add('node', node.id, node.name, identity.cluster if identity else tags.get(TAG_CLUSTER), tags.get(TAG_OWNER))

    try:
        volumes = driver.list_volumes(**provider.audit_args)
    except NotImplementedError:  # a cloud without volumes of its own (docker)
        volumes = []
    except Exception as e:  # listed as not checked rather than failing the whole audit
        volumes = []
        unchecked.append('volumes: %s' % (e or type(e).__name__))
    for volume in volumes:
        # A disk its node deletes on termination (EC2) goes with the node, even one still shutting down after destroy.
        gone = str(getattr(volume, 'state', '')).lower() in _GONE_VOLUME_STATES
        if not gone and not goes_with_its_node(volume.extra):
            named = NODE_NAME_RE.match(str(volume.name or ''))
            tags = resource_tags(volume)
            add('volume', volume.id, volume.name, tags.get(TAG_CLUSTER) or (named.group('cluster') if named else None),
                tags.get(TAG_OWNER))

    access = provider.access
    own = getattr(driver, 'ex_audit_found', None)
    if access is not None:
        try:
            items = access.found(driver, options or {})
        except NotImplementedError:
            items = []
            unchecked.append('key pairs and firewalls: tfdist cannot list them on %s' % driver.type)
        except PartlyFound as e:  # a kind the credentials may not list (EC2's network interfaces)
            items = e.found
            unchecked.extend(e.unchecked)
    else:
        items = own(options or {}) if callable(own) else []
    for item in items:
        add(*item)

    found.sort(key=lambda r: (r.cluster, KINDS.index(r.kind) if r.kind in KINDS else len(KINDS), str(r.name), r.id))
    return found, unchecked


def standing(resource, owner=None, known_clusters=None, named=()):
    """Whose the resource is for the controller `owner` (its id; None: every resource is its own, as before owners
    were marked): MINE, ORPHAN (its own, with no inventory source here), UNMARKED (no owner's mark, no inventory
    source here, and not `named` by the user) or OTHERS (another owner's mark).

    known_clusters: the clusters whose inventory source this controller holds; None: the caller does not tell
    orphans apart.
    """
    if owner and resource.owner and not marked_by(resource.owner, owner):
        return OTHERS
    known = known_clusters is None or resource.cluster in known_clusters
    if owner and not resource.owner and not known and resource.cluster not in named:
        return UNMARKED
    return MINE if known else ORPHAN


def _groups(resources, owner, known_clusters, named):
    """[((cluster, standing, other owner's mark or None), [resources])] in the report's order."""
    groups = {}
    for resource in resources:
        state = standing(resource, owner, known_clusters, named)
        key = (resource.cluster, state, name_part(resource.owner) if state == OTHERS else None)
        groups.setdefault(key, []).append(resource)
    return sorted(groups.items(), key=lambda item: (item[0][0], STANDINGS.index(item[0][1]), item[0][2] or ''))


def report(resources, known_clusters=None, owner=None, named=()):
    """One line per cluster (and per owner of a name that several controllers use), its resources named; an orphan
    (this controller's, no inventory source here), another owner's cluster and a cluster without an owner's mark say
    so (standing() has the arguments).
    """
    labels = {
        MINE: ' (inventory source on this controller)' if known_clusters is not None else '',
        ORPHAN: ' (ORPHAN: no inventory source on this controller)',
        UNMARKED: (" (no owner's mark, made before tfdist 0.5.0, and no inventory source on this controller: removed "
                   "only when named in audit_clusters)"),
    }
    lines = []
    for (cluster, state, other), items in _groups(resources, owner, known_clusters, named):
        label = " (another controller's: %s)" % show(other) if state == OTHERS else labels[state]
        lines.append('%s%s: %s' % (cluster, label, ', '.join(describe(r) for r in items)))
    return lines


def untouched(resources, cloud, owner, known_clusters=None, named=()):
    """What destroy and remove_orphans leave alone, a line per cluster and owner: another controller's clusters, and
    clusters without an owner's mark that are not this controller's (standing())."""
    lines = []
    for (cluster, state, other), items in _groups(resources, owner, known_clusters, named):
        if state == OTHERS:
            lines.append('cluster %s on %s belongs to another controller (%s): not touched'
                         % (cluster, cloud, show(other)))
        elif state == UNMARKED:
            lines.append("cluster %s on %s: %d resource(s) without an owner's mark (made before tfdist 0.5.0) and no "
                         "inventory source on this controller: not touched" % (cluster, cloud, len(items)))
    return lines


def baked_images(driver):
    """(images, unchecked): tfdist's baked images on the driver's cloud as _images.to_dict gives them, sorted by name
    (none where tfdist bakes no images), and what could not be listed."""
    cls = provider_of(driver.type).images
    if cls is None:
        return [], []
    images = cls(driver)
    try:
        found = images.found()
    except Exception as e:  # listed as not checked rather than failing the whole audit
        return [], ['baked images: %s' % (e or type(e).__name__)]
    found.sort(key=lambda image: (str(image.name), str(image.id)))
    return [image_dict(image, images.reference(image)) for image in found], []


def images_report(images):
    """The report's line of the baked images (dicts of baked_images), the user's to keep; none without images."""
    if not images:
        return []
    return ['kept, yours (baked by playbooks/image.yml; destroy and the audit never remove them): %s'
            % ', '.join(image['description'] for image in images)]


def orphans(resources, known_clusters, owner=None, named=()):
    """The clusters with resources of this controller on the cloud and no inventory source here, sorted."""
    return sorted(set(r.cluster for r in resources if standing(r, owner, known_clusters or (), named) == ORPHAN))


def to_dict(resource, known_clusters=None, owner=None, named=()):
    state = standing(resource, owner, known_clusters, named)
    return {'kind': resource.kind, 'id': resource.id, 'name': resource.name, 'cluster': resource.cluster,
            'description': describe(resource), 'owner': resource.owner, 'standing': state,
            'orphan': None if known_clusters is None else state == ORPHAN}
