# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

"""Shared apache-libcloud helpers for tfdist.cluster: driver factory, tags, node dicts.

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import threading
import traceback
from collections import namedtuple
from concurrent.futures import ThreadPoolExecutor

try:
    from libcloud.compute.providers import DRIVERS as LIBCLOUD_DRIVERS
    from libcloud.compute.providers import get_driver as libcloud_get_driver
except ImportError:
    HAS_LIBCLOUD = False
    LIBCLOUD_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_LIBCLOUD = True
    LIBCLOUD_IMPORT_ERROR = None

TAG_CLUSTER = 'tfdist_cluster'
TAG_ROLE = 'tfdist_role'
TAG_INDEX = 'tfdist_index'
ROLES = ('chief', 'worker', 'ps', 'evaluator')

CLUSTER_NAME_MAX = 40
_CLUSTER_NAME_RE = re.compile(r'^[a-z][a-z0-9-]*$')
# Greedy cluster part: the role and index are anchored at the end, so dashes in the cluster name are fine.
_NODE_NAME_RE = re.compile(r'^(?P<cluster>[a-z][a-z0-9-]*)-(?P<role>%s)-(?P<index>[0-9]+)$' % '|'.join(ROLES))

# Nodes created concurrently at most; each thread has its own driver, as libcloud drivers are not thread-safe.
MAX_PARALLEL = 8

NodeIdentity = namedtuple('NodeIdentity', ['cluster', 'role', 'index'])


class TfdistCloudError(Exception):
    """A configuration problem the user can fix (unknown provider, missing credentials, bad names)."""


# Drivers the project adds itself (e.g. `docker`); they take precedence over libcloud's provider table.
_DRIVERS = {}

# For each libcloud provider: constructor argument -> (credentials key, environment variables, required).
_CREDENTIALS = {
    'ec2': {
        'key': ('access_key', ('AWS_ACCESS_KEY_ID',), True),
        'secret': ('secret_key', ('AWS_SECRET_ACCESS_KEY',), True),
        'token': ('session_token', ('AWS_SESSION_TOKEN',), False),
    },
    'gce': {
        'user_id': ('service_account_email', ('GCE_SERVICE_ACCOUNT_EMAIL',), True),
        'key': ('credentials_file', ('GCE_CREDENTIALS_FILE', 'GOOGLE_APPLICATION_CREDENTIALS'), True),
        'project': ('project', ('GCE_PROJECT',), True),
    },
    'azure_arm': {
        'tenant_id': ('tenant_id', ('AZURE_TENANT_ID',), True),
        'subscription_id': ('subscription_id', ('AZURE_SUBSCRIPTION_ID',), True),
        'key': ('client_id', ('AZURE_CLIENT_ID',), True),
        'secret': ('secret', ('AZURE_SECRET',), True),
    },
    'openstack': {
        'key': ('username', ('OS_USERNAME',), True),
        'secret': ('password', ('OS_PASSWORD',), True),
        'ex_force_auth_url': ('auth_url', ('OS_AUTH_URL',), True),
        'ex_tenant_name': ('project_name', ('OS_PROJECT_NAME', 'OS_TENANT_NAME'), True),
        'ex_domain_name': ('user_domain_name', ('OS_USER_DOMAIN_NAME',), False),
    },
}

# Constructor argument that takes the region (GCE: the zone), and the environment variables that supply it.
_REGIONS = {
    'ec2': ('region', ('AWS_DEFAULT_REGION', 'AWS_REGION')),
    'gce': ('datacenter', ('CLOUDSDK_COMPUTE_ZONE',)),
    'azure_arm': ('region', ()),
    'openstack': ('ex_force_service_region', ('OS_REGION_NAME',)),
}

# Constructor defaults that driver_options may override.
_DEFAULTS = {
    'openstack': {'api_version': '2.0', 'ex_force_auth_version': '3.x_password'},
    'dummy': {'creds': 0},
}

# create_node keyword argument that carries tags, by driver type. GCE's ex_tags are firewall tags, hence labels.
_TAG_ARGS = {
    'ec2': 'ex_metadata',
    'openstack': 'ex_metadata',
    'azure_arm': 'ex_tags',
    'gce': 'ex_labels',
}

# Where drivers without size/image objects on their nodes keep the ids (EC2, OpenStack, GCE).
_SIZE_KEYS = ('instance_type', 'flavorId', 'machineType')
_IMAGE_KEYS = ('image_id', 'imageId', 'image')

# Hook for drivers that create many nodes in one API call: driver type -> func(driver, connect, requests).
_BATCH_CREATORS = {}
# And for drivers that destroy many nodes in one API call: driver type -> func(driver, nodes).
_BATCH_DESTROYERS = {}


def register_driver(name, driver):
    """Make `driver` (a NodeDriver class, or its 'package.module.ClassName' import path) available as provider `name`."""
    _DRIVERS[name] = driver


# Imported on first use only, so the docker SDK is needed only by those who use the docker cloud.
register_driver('docker', 'ansible_collections.tfdist.cluster.plugins.module_utils._docker_driver.DockerNodeDriver')


def _ship_docker_driver():  # pragma: no cover - never called
    # AnsiballZ packs only the module_utils named in import statements, not import path strings: this one
    # makes it ship _docker_driver with every module that uses this file.
    from ansible_collections.tfdist.cluster.plugins.module_utils import _docker_driver  # noqa: F401


def register_batch_creator(driver_type, func):
    """Use func(driver, connect, requests) to create nodes of drivers of `driver_type` in one call.

    It returns one Node or exception per request; `connect` makes a driver for each extra thread.
    """
    _BATCH_CREATORS[driver_type] = func


def register_batch_destroyer(driver_type, func):
    """Use func(driver, nodes) to destroy nodes of drivers of `driver_type` in one call; None or exception per node."""
    _BATCH_DESTROYERS[driver_type] = func


def known_providers():
    return sorted(set(LIBCLOUD_DRIVERS) | set(_DRIVERS))


def _driver_class(provider):
    driver = _DRIVERS.get(provider)
    if isinstance(driver, str):
        module_name, dummy, class_name = driver.rpartition('.')
        driver = getattr(importlib.import_module(module_name), class_name)
    if driver is not None:
        return driver
    if provider in LIBCLOUD_DRIVERS:
        return libcloud_get_driver(provider)
    raise TfdistCloudError('Unknown provider %r; known providers: %s' % (provider, ', '.join(known_providers())))


def _from_env(names):
    for name in names:
        if os.environ.get(name):
            return os.environ[name]
    return None


def _credential_kwargs(provider, credentials):
    """Constructor kwargs from explicit credentials, else the cloud's standard environment variables."""
    spec = _CREDENTIALS.get(provider)
    if spec is None:
        # Drivers without a table (the project's own, other libcloud clouds) take credentials as constructor kwargs.
        return dict(credentials)
    accepted = sorted(entry[0] for entry in spec.values())
    unknown = sorted(set(credentials) - set(accepted))
    if unknown:
        raise TfdistCloudError('Unknown credentials key(s) %s for provider %r; accepted keys: %s'
                               % (', '.join(unknown), provider, ', '.join(accepted)))
    kwargs, missing = {}, []
    for arg, (key, env, required) in spec.items():
        value = credentials.get(key) or _from_env(env)
        if value:
            kwargs[arg] = value
        elif required:
            missing.append('credentials.%s (or env %s)' % (key, ' / '.join(env)))
    if missing:
        raise TfdistCloudError('Missing credentials for provider %r: set %s' % (provider, '; '.join(missing)))
    return kwargs


def _known_regions(cls):
    """The regions a driver class knows offline (EC2), or None when it can only tell by asking the cloud."""
    list_regions = getattr(cls, 'list_regions', None)
    if not callable(list_regions):
        return None
    try:
        return set(list_regions())
    except Exception:  # an instance method, or one that needs the API
        return None


def explain_error(provider, error):
    """A message for a libcloud error; a refusal of the credentials names the credentials and where they come from."""
    from libcloud.common.types import InvalidCredsError
    # libcloud's own errors keep the cloud's message in .value (their str() is its repr).
    value = getattr(error, 'value', None)
    text = (value if isinstance(value, str) else str(error)) or type(error).__name__
    refused = isinstance(error, InvalidCredsError) or any(
        word in text for word in ('AuthFailure', 'InvalidClientTokenId', 'SignatureDoesNotMatch',
                                  'UnrecognizedClientException', 'invalid_client', 'Unauthorized'))
    if refused:
        spec = _CREDENTIALS.get(provider, {})
        sources = ', '.join('%s (env %s)' % (key, ' / '.join(env)) for key, env, required in spec.values())
        return 'credentials: the %s provider refused them: %s. Check %s' % (provider, text, sources or 'them')
    return '%s provider error: %s' % (provider, text)


def connection_argument_spec():
    """The module options of the cloud connection (documented in the tfdist.cluster.libcloud doc fragment)."""
    return dict(
        provider=dict(type='str', required=True),
        region=dict(type='str'),
        credentials=dict(type='dict', default={}, no_log=True),
        driver_options=dict(type='dict', default={}),
    )


def get_driver(provider, region=None, credentials=None, driver_options=None):
    """Build a libcloud compute driver for `provider`; raises TfdistCloudError for what the user must fix."""
    cls = _driver_class(provider)
    kwargs = dict(_DEFAULTS.get(provider, {}))
    kwargs.update(_credential_kwargs(provider, credentials or {}))
    region_arg, region_env = _REGIONS.get(provider, ('region', ()))
    region = region or _from_env(region_env)
    if region:
        known = _known_regions(cls)
        if known and region not in known:
            raise TfdistCloudError('region: unknown region %r for provider %r; known regions: %s'
                                   % (region, provider, ', '.join(sorted(known))))
        kwargs[region_arg] = region
    kwargs.update(driver_options or {})
    return cls(**kwargs)


def validate_cluster_name(name, field='cluster'):
    if not (isinstance(name, str) and _CLUSTER_NAME_RE.match(name) and len(name) <= CLUSTER_NAME_MAX):
        raise TfdistCloudError('%s: %r is not a valid cluster name: use lowercase letters, digits and dashes, '
                               'start with a letter, at most %d characters' % (field, name, CLUSTER_NAME_MAX))
    return name


def node_name(cluster, role, index):
    return '%s-%s-%d' % (cluster, role, index)


def cluster_tags(cluster, role, index):
    return {TAG_CLUSTER: cluster, TAG_ROLE: role, TAG_INDEX: str(index)}


def tag_arg(driver):
    """The create_node keyword argument that stores tags on this driver, or None when it keeps none."""
    arg = _TAG_ARGS.get(driver.type)
    if arg:
        return arg
    # Any other driver (such as the project's own) opts in by accepting ex_metadata.
    if 'ex_metadata' in inspect.signature(driver.create_node).parameters:
        return 'ex_metadata'
    return None


def tag_create_kwargs(driver, tags, create_args=None):
    """create_node kwargs carrying `tags`, merged over any tags the user already passes in create_args."""
    arg = tag_arg(driver)
    if arg is None:
        return {}
    merged = dict((create_args or {}).get(arg) or {})
    merged.update(tags)
    return {arg: merged}


def _node_tags(node):
    extra = node.extra or {}
    for key in ('tags', 'metadata', 'labels'):
        value = extra.get(key)
        if isinstance(value, dict) and TAG_CLUSTER in value:
            return value
    return {}


def node_identity(node):
    """NodeIdentity from the node's tags, or from its name when the driver keeps no tags; None if not a tfdist node."""
    if tag_arg(node.driver):
        tags = _node_tags(node)
        cluster, role, index = tags.get(TAG_CLUSTER), tags.get(TAG_ROLE), tags.get(TAG_INDEX)
    else:
        match = _NODE_NAME_RE.match(node.name or '')
        cluster, role, index = match.group('cluster', 'role', 'index') if match else (None, None, None)
    # Tags are user-editable in the cloud console: ignore nodes whose tags would break names or groups.
    if not (isinstance(cluster, str) and _CLUSTER_NAME_RE.match(cluster) and role in ROLES):
        return None
    # A node of the cluster without a valid index (a batch create interrupted before its nodes were
    # numbered) still belongs to the cluster: index None, so the next run or destroy removes it.
    return NodeIdentity(cluster, role, int(index) if str(index).isdigit() else None)


def list_cluster_nodes(driver, cluster=None):
    """The tfdist nodes (optionally of one cluster) as (node, identity) pairs, from a single list_nodes() call."""
    found = []
    for node in driver.list_nodes():
        identity = node_identity(node)
        if identity and (cluster is None or identity.cluster == cluster):
            found.append((node, identity))
    return found


def find_by_id_or_name(items, value, what):
    """The item whose id or (unique) name is `value`; raises TfdistCloudError naming `what` otherwise."""
    by_id = [item for item in items if str(item.id) == str(value)]
    if by_id:
        return by_id[0]
    by_name = [item for item in items if item.name == value]
    if len(by_name) == 1:
        return by_name[0]
    if by_name:
        raise TfdistCloudError('%s: %d items are named %r; give the id instead' % (what, len(by_name), value))
    raise TfdistCloudError('%s: no item with id or name %r' % (what, value))


def list_images(driver, wanted):
    """The images in which to look up `wanted` (ids or names), fetched as narrowly as the driver allows.

    Listing every image is fine on a private cloud but takes minutes on EC2 (all public AMIs) and GCE.
    """
    wanted = list(dict.fromkeys(wanted))  # roles often share one image
    if driver.type == 'ec2':
        images = []
        ids = [value for value in wanted if str(value).startswith('ami-')]
        names = [value for value in wanted if value not in ids]
        for image_id in ids:
            try:
                images += driver.list_images(ex_image_ids=[image_id])
            except Exception as e:  # an unknown id is an error on EC2; find_by_id_or_name names the field
                if 'InvalidAMIID' not in str(e) and getattr(e, 'code', None) != 400:
                    raise
        if names:
            images += driver.list_images(ex_filters={'name': names})
        return images
    if driver.type == 'gce':
        from libcloud.common.google import ResourceNotFoundError
        images = []
        for value in wanted:
            try:
                images.append(driver.ex_get_image(value))
            except ResourceNotFoundError:
                pass
        return [image for image in images if image is not None]
    if driver.type == 'azure_arm':
        # Marketplace images are publisher:offer:sku:version URNs; listing them all takes many calls.
        from libcloud.compute.drivers.azure_arm import AzureImage
        location = getattr(driver.default_location, 'id', None)
        return [AzureImage(*reversed(value.split(':')), location=location, driver=driver)
                for value in wanted if len(str(value).split(':')) == 4]
    return driver.list_images()


def pick_address(public_ips, private_ips, prefer='public'):
    """First IP of the preferred kind, else of the other kind, else None."""
    first, second = (public_ips, private_ips) if prefer == 'public' else (private_ips, public_ips)
    return (list(first) + list(second) or [None])[0]


_SKIP = object()


def _json_safe(value):
    """The JSON-representable part of value (drivers keep objects such as NodeLocation in extra), or _SKIP."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, dict):
        items = ((str(key), _json_safe(item)) for key, item in value.items())
        return dict((key, item) for key, item in items if item is not _SKIP)
    if isinstance(value, (list, tuple)):
        return [item for item in map(_json_safe, value) if item is not _SKIP]
    return _SKIP


def _ref_id(obj, extra, keys):
    if obj is not None:
        return str(getattr(obj, 'id', obj))
    for key in keys:
        if isinstance(extra.get(key), str):
            return extra[key]
    return None


def node_to_dict(node, address='public'):
    """A JSON-safe dict describing a node, with the tfdist identity (None values for foreign nodes)."""
    identity = node_identity(node) or NodeIdentity(None, None, None)
    extra = node.extra or {}
    public_ips = list(node.public_ips or [])
    private_ips = list(node.private_ips or [])
    return {
        'id': str(node.id),
        'name': node.name,
        'cluster': identity.cluster,
        'role': identity.role,
        'index': identity.index,
        'state': str(node.state),
        'public_ips': public_ips,
        'private_ips': private_ips,
        'address': pick_address(public_ips, private_ips, address),
        'size': _ref_id(node.size, extra, _SIZE_KEYS),
        'image': _ref_id(node.image, extra, _IMAGE_KEYS),
        'extra': _json_safe(extra),
    }


def _run_parallel(connect, func, items):
    """[func(driver, item) or the exception it raised] for each item, in threads that each own a driver."""
    local = threading.local()

    def call(item):
        try:
            if not hasattr(local, 'driver'):
                local.driver = connect()
            return func(local.driver, item)
        except Exception as e:  # reported per item; the caller decides what a failure means
            return e

    if not items:
        return []
    with ThreadPoolExecutor(max_workers=min(len(items), MAX_PARALLEL)) as pool:
        return list(pool.map(call, items))


# Tag value of nodes made by one batched call, before each gets its own name and index.
PENDING_INDEX = 'pending'


def _ec2_batch_create(driver, connect, requests):
    """One RunInstances for all requests (same size, image and arguments), then each node named and numbered.

    Nodes come up tagged with the cluster and role, and index `pending` until numbered, so an interruption
    leaves nodes that the next run (or destroy) recognises and removes.
    """
    first = dict(requests[0])
    tags = dict(first.get('ex_metadata') or {}, **{TAG_INDEX: PENDING_INDEX})
    first.update(name='%s-%s-%s' % (tags.get(TAG_CLUSTER), tags.get(TAG_ROLE), PENDING_INDEX), ex_metadata=tags,
                 ex_mincount=len(requests), ex_maxcount=len(requests))
    try:
        nodes = driver.create_node(**first)
    except Exception as e:
        return [e] * len(requests)
    nodes = nodes if isinstance(nodes, list) else [nodes]

    def number(drv, pair):
        node, request = pair
        own = dict(request.get('ex_metadata') or {}, Name=request['name'])
        drv.ex_create_tags(node, own)
        node.name = request['name']
        node.extra['tags'] = dict(node.extra.get('tags') or {}, **own)
        return node

    results = _run_parallel(connect, number, list(zip(nodes, requests)))
    unnumbered = [node for node, result in zip(nodes, results) if isinstance(result, Exception)]
    if unnumbered:
        destroy_nodes(connect, unnumbered)
    return results + [TfdistCloudError('the cloud started %d nodes instead of %d' % (len(nodes), len(requests)))] \
        * (len(requests) - len(nodes))


def _batchable(requests):
    """True when the requests differ only by name and tags, so one call can create them all."""
    def shape(request):
        return dict((key, value) for key, value in request.items() if key not in ('name', 'ex_metadata'))
    return len(requests) > 1 and all(shape(r) == shape(requests[0]) for r in requests)


register_batch_creator('ec2', _ec2_batch_create)


def create_nodes(driver, connect, requests):
    """Create one node per request (create_node kwargs); returns a Node or the exception raised, per request.

    `connect` builds a fresh driver for each worker thread; drivers with a batch creator get one call instead.
    """
    batch = _BATCH_CREATORS.get(driver.type)
    if batch and _batchable(requests):
        return batch(driver, connect, requests)
    return _run_parallel(connect, lambda drv, kwargs: drv.create_node(**kwargs), requests)


def _ec2_batch_destroy(driver, nodes):
    """One TerminateInstances for all nodes (EC2 takes many InstanceId.N): None per node, or the exception."""
    params = {'Action': 'TerminateInstances'}
    params.update(('InstanceId.%d' % (n + 1), node.id) for n, node in enumerate(nodes))
    try:
        driver.connection.request(driver.path, params=params)
    except Exception as e:
        return [e] * len(nodes)
    return [None] * len(nodes)


register_batch_destroyer('ec2', _ec2_batch_destroy)


def destroy_nodes(connect, nodes):
    """Destroy nodes (in one call where a batch destroyer is registered, else in parallel).

    Returns None per destroyed node, or the exception raised.
    """
    batch = _BATCH_DESTROYERS.get(nodes[0].driver.type) if len(nodes) > 1 else None
    if batch:
        return batch(connect(), nodes)

    def destroy(drv, node):
        if not drv.destroy_node(node):
            raise TfdistCloudError('the provider refused to destroy it')
        return None

    return _run_parallel(connect, destroy, nodes)
