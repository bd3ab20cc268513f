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
  of GCE and Azure are (a disk that outlived its node);
- the key pairs and firewalls, by the rules the cloud's ClusterAccess.present() and absent() follow: its
  found() (_cloud_<name>.py);
- drivers of tfdist's own (docker) list what else they make with ex_audit_found() (the cluster networks).

Baked images (_images.py) belong to no cluster: they are the user's to keep, listed apart (baked_images) and never
counted as left behind.

A cluster is an orphan when this controller holds no inventory source for it (the caller says which clusters
it holds: the provision role knows where inventory sources live). Removing goes through destroy's own path
(the provision role with provision_state=absent), never through here.

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

from collections import namedtuple

from ansible_collections.tfdist.cluster.plugins.module_utils._cluster import CLUSTER_NAME_RE, NODE_NAME_RE, TAG_CLUSTER
from ansible_collections.tfdist.cluster.plugins.module_utils._images import to_dict as image_dict
from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import node_identity, provider_of, resource_tags

Resource = namedtuple('Resource', ['kind', 'id', 'name', 'cluster'])

# The order in which a cluster's resources are listed: what costs most first.
KINDS = ('node', 'volume', 'network interface', 'network', 'key pair', 'security group', 'firewall rule',
         'network security group', 'subnet')
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

    def add(kind, ident, name, cluster):
        if isinstance(cluster, str) and CLUSTER_NAME_RE.match(cluster) and (not wanted or cluster in wanted):
            found.append(Resource(kind, str(ident), name, cluster))

    provider = provider_of(driver.type)
    for node in driver.list_nodes(**provider.audit_args):
        if str(node.state) in _GOING_NODE_STATES or (node.extra or {}).get('status') in _GOING_NODE_STATES:
            continue
        identity = node_identity(node)
        add('node', node.id, node.name, identity.cluster if identity else resource_tags(node).get(TAG_CLUSTER))

    try:
        volumes = driver.list_volumes(**provider.audit_args)
    except NotImplementedError:  # a cloud without volumes of its own (docker)
        volumes = []
    except Exception as e:  # listed as not checked rather than failing the whole audit
        volumes = []
        unchecked.append('volumes: %s' % (e or type(e).__name__))
    for volume in volumes:
        if str(getattr(volume, 'state', '')).lower() not in _GONE_VOLUME_STATES:
            named = NODE_NAME_RE.match(str(volume.name or ''))
            add('volume', volume.id, volume.name,
                resource_tags(volume).get(TAG_CLUSTER) or (named.group('cluster') if named else None))

    access = provider.access
    own = getattr(driver, 'ex_audit_found', None)
    if access is not None:
        try:
            items = access.found(driver, options or {})
        except NotImplementedError:
            items = []
            unchecked.append('key pairs and firewalls: tfdist cannot list them on %s' % driver.type)
    else:
        items = own(options or {}) if callable(own) else []
    for item in items:
        add(*item)

    found.sort(key=lambda r: (r.cluster, KINDS.index(r.kind) if r.kind in KINDS else len(KINDS), str(r.name), r.id))
    return found, unchecked


def report(resources, known_clusters=None):
    """One line per cluster, its resources named; an orphan (no inventory source here) says so.

    known_clusters None: the caller does not tell orphans apart (destroy, which has just removed the source).
    """
    by_cluster = {}
    for resource in resources:
        by_cluster.setdefault(resource.cluster, []).append(resource)
    lines = []
    for cluster, items in sorted(by_cluster.items()):
        state = ''
        if known_clusters is not None:
            state = (' (inventory source on this controller)' if cluster in known_clusters
                     else ' (ORPHAN: no inventory source on this controller)')
        lines.append('%s%s: %s' % (cluster, state, ', '.join(describe(r) for r in items)))
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


def orphans(resources, known_clusters):
    """The clusters with resources on the cloud and no inventory source on this controller, sorted."""
    return sorted(set(r.cluster for r in resources) - set(known_clusters or ()))


def to_dict(resource, known_clusters=None):
    return {'kind': resource.kind, 'id': resource.id, 'name': resource.name, 'cluster': resource.cluster,
            'description': describe(resource),
            'orphan': None if known_clusters is None else resource.cluster not in known_clusters}
