# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

"""What tfdist does with any cloud through apache-libcloud: the driver factory, which nodes are a cluster's,
node dicts, image lookup, parallel or batched create and destroy, the key pair and firewall, user-data, error messages.

What differs per cloud (credentials, region, tags, batches, images, firewall) is declared in its own file
(_cloud_<name>.py) and looked up in the registry of _clouds.py by provider name or driver type; names,
tags and groups come from the cluster model (_cluster.py). The modules and the inventory plugin import this.

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import importlib
import inspect
import traceback
from collections import namedtuple

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._cluster import (
    CLUSTER_NAME_RE,
    NODE_NAME_RE,
    TAG_CLUSTER,
    TAG_FIRST_INDEX,
    TAG_INDEX,
    TAG_OWNER,
    TAG_ROLE,
    TAG_SPOT,
    TASK_TYPES,
)
from ansible_collections.tfdist.cluster.plugins.module_utils._clouds import PROVIDERS
from ansible_collections.tfdist.cluster.plugins.module_utils._provider import (
    NO_ATTEMPT,
    CloudProvider,
    Refusal,
    TfdistCloudError,
    from_env,
    run_parallel,
)
from ansible_collections.tfdist.cluster.plugins.module_utils._sizes import cheapest_size, generic_facts
from ansible_collections.tfdist.cluster.plugins.module_utils._user_data import cloud_config, without_user_data

try:
    from libcloud.compute.providers import DRIVERS as LIBCLOUD_DRIVERS
    from libcloud.compute.providers import get_driver as libcloud_get_driver
except ImportError:
    HAS_LIBCLOUD = False
    LIBCLOUD_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_LIBCLOUD = True
    LIBCLOUD_IMPORT_ERROR = None

NodeIdentity = namedtuple('NodeIdentity', ['cluster', 'role', 'index'])

# Where drivers without size/image objects on their nodes keep the ids (EC2, OpenStack, GCE).
_SIZE_KEYS = ('instance_type', 'flavorId', 'machineType')
_IMAGE_KEYS = ('image_id', 'imageId', 'image')


def provider_of(name):
    """The CloudProvider of a provider name or driver type; a plain one for clouds without a file of their own."""
    return PROVIDERS.get(name) or CloudProvider(name)


def register_driver(name, driver):
    """Make `driver` (a NodeDriver class or factory, or its 'package.module.ClassName' path) provider `name`."""
    PROVIDERS[name] = CloudProvider(name, driver=driver)


def known_providers():
    return sorted(set(LIBCLOUD_DRIVERS) | set(PROVIDERS))


def _driver_class(name):
    driver = provider_of(name).driver
    if isinstance(driver, str):
        module_name, dummy, class_name = driver.rpartition('.')
        driver = getattr(importlib.import_module(module_name), class_name)
    if driver is not None:
        return driver
    if name in LIBCLOUD_DRIVERS:
        return libcloud_get_driver(name)
    raise TfdistCloudError('Unknown provider %r; known providers: %s' % (name, ', '.join(known_providers())))


def _credential_kwargs(name, credentials):
    """Constructor kwargs from explicit credentials, else the cloud's standard environment variables."""
    spec = provider_of(name).credentials
    if spec is None:
        # Drivers without a table (the project's own, other libcloud clouds) take credentials as constructor kwargs.
        return dict(credentials)
    accepted = sorted(entry[0] for entry in spec.values())
    unknown = sorted(set(credentials) - set(accepted))
    if unknown:
        raise TfdistCloudError('Unknown credentials key(s) %s for provider %r; accepted keys: %s'
                               % (', '.join(unknown), name, ', '.join(accepted)))
    kwargs, missing = {}, []
    for arg, (key, env, required) in spec.items():
        value = credentials.get(key) or from_env(env)
        if value:
            kwargs[arg] = value
        elif required:
            missing.append('credentials.%s (or env %s)' % (key, ' / '.join(env)))
    if missing:
        raise TfdistCloudError('Missing credentials for provider %r: set %s' % (name, '; '.join(missing)))
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


def every_region(provider):
    """What a sweep of every region of the provider looks in: {'regions': the regions libcloud knows without asking
    the cloud (EC2's), sorted, or [] where one look already sees every region (GCE's zones: audit_args) or where the
    regions cannot be listed; 'unchecked': why, in the latter case, else ''}."""
    known = _known_regions(_driver_class(provider))
    if known:
        return {'regions': sorted(known), 'unchecked': ''}
    if provider_of(provider).audit_args:
        return {'regions': [], 'unchecked': ''}
    return {'regions': [], 'unchecked': "other regions of %s: libcloud's driver cannot list them" % provider}


def error_text(error):
    """What the cloud said in a libcloud error: its message, or the error's type when it has none."""
    # libcloud's own errors keep the cloud's message in .value (their str() is its repr); GCE's, at times, the error's
    # JSON, whose message is the text.
    value = getattr(error, 'value', None)
    if isinstance(value, dict) and isinstance(value.get('message'), str):
        value = value['message']
    return (value if isinstance(value, str) else str(error)) or type(error).__name__


def classify_error(provider, error, attempt=NO_ATTEMPT):
    """The Refusal (_provider.py) of a libcloud error: what the cloud's file knows of its codes (its `refusal`), else
    refused credentials by libcloud's type or HTTP 401, else unknown. `attempt`: the Attempt that met the error."""
    from libcloud.common.types import InvalidCredsError
    text = error_text(error)
    classify = provider_of(provider).refusal
    refusal = classify(error, text, attempt) if classify else None
    if refusal:
        return refusal
    if isinstance(error, InvalidCredsError) or 401 in (getattr(error, 'code', None), getattr(error, 'http_code', None)):
        return Refusal('credentials', text, '')
    return Refusal('unknown', text, '')


def explain_error(provider, error, attempt=NO_ATTEMPT):
    """A message for a libcloud error, by its class (classify_error): refused credentials name the credentials and where
    they come from; any other refusal the role, size and zone of `attempt` (an Attempt) when given, and what to do; an
    unknown error the provider and what the cloud said."""
    refusal = classify_error(provider, error, attempt)
    if refusal.kind == 'credentials':
        spec = provider_of(provider).credentials or {}
        sources = ', '.join('%s (env %s)' % (key, ' / '.join(env)) for key, env, required in spec.values())
        return 'credentials: the %s provider refused them: %s. Check %s' % (provider, refusal.why, sources or 'them')
    if refusal.kind == 'unknown':
        return '%s provider error: %s' % (provider, refusal.why)
    advice = '; %s' % refusal.advice if refusal.advice else ''
    if attempt.role:
        return '%s: %s refused %s in %s: %s%s' % (attempt.role, provider_of(provider).title, attempt.size or 'its size',
                                                  attempt.zone or 'its region', refusal.why, advice)
    return '%s: the %s provider refused: %s%s' % (refusal.kind, provider, refusal.why, advice)


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
    spec = provider_of(provider)
    kwargs = dict(spec.defaults)
    kwargs.update(_credential_kwargs(provider, credentials or {}))
    region = region or from_env(spec.region_env)
    if region:
        known = _known_regions(cls)
        if known and region not in known:
            raise TfdistCloudError('region: unknown region %r for provider %r; known regions: %s'
                                   % (region, provider, ', '.join(sorted(known))))
        kwargs[spec.region_arg] = region
    kwargs.update(driver_options or {})
    return cls(**kwargs)


def tag_arg(driver):
    """The create_node keyword argument that stores tags on this driver, or None when it keeps none."""
    arg = provider_of(driver.type).tag_arg
    if arg:
        return arg
    # Any other driver opts in by accepting ex_metadata.
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


def spot_clouds():
    """'ec2 (spot), gce (preemptible)': the providers whose libcloud driver can ask for interruptible capacity."""
    return ', '.join('%s (%s)' % (name, spec.spot_name) for name, spec in sorted(PROVIDERS.items())
                     if spec.spot_args is not None)


def spot_error(provider, field, cloud=None):
    """'' when `provider` can create spot nodes, else the message, starting with `field`.

    `provider` empty: a cloud without a libcloud provider (cloud=local), named by `cloud`.
    """
    if provider and provider_of(provider).spot_args is not None:
        return ''
    where = 'cloud=%s' % cloud if cloud else 'provider %s' % provider
    if provider:
        why = "libcloud's %s driver cannot ask for spot or preemptible capacity" % provider
    else:
        why = 'it runs on this machine, not on cloud capacity'
    return '%s: %s has no spot capacity (%s); spot nodes run on %s' % (field, where, why, spot_clouds())


def spot_create_kwargs(driver, field):
    """The create_node arguments of spot nodes on this driver's cloud; TfdistCloudError naming `field` if none."""
    error = spot_error(driver.type, field)
    if error:
        raise TfdistCloudError(error)
    return dict(provider_of(driver.type).spot_args)


def images_error(provider, field, cloud=None):
    """'' when tfdist bakes images on `provider` (its cloud file names a CloudImages), else the message, starting with
    `field`. `provider` empty: a cloud without a libcloud provider (cloud=local), named by `cloud`."""
    if provider and provider_of(provider).images is not None:
        return ''
    where = 'cloud=%s' % cloud if cloud else 'provider %s' % provider
    why = ("libcloud's %s driver gives tfdist no way to save a node and to know its images again" % provider
           if provider else 'it runs on this machine')
    clouds = ', '.join(sorted(name for name, spec in PROVIDERS.items() if spec.images))
    return '%s: tfdist bakes no images on %s (%s); it bakes them on %s' % (field, where, why, clouds)


def cloud_images(driver, field='provider', **kwargs):
    """The CloudImages (_images.py) of the driver's cloud, made with kwargs; TfdistCloudError naming `field` where
    tfdist bakes none."""
    error = images_error(driver.type, field)
    if error:
        raise TfdistCloudError(error)
    return provider_of(driver.type).images(driver, **kwargs)


def node_defaults(driver):
    """The create_node arguments every node of this driver's cloud gets (EC2: terminate on shutdown)."""
    return dict(provider_of(driver.type).node_defaults)


def user_data_kwargs(driver, login, kwargs, field='user_data', host_key=None):
    """The create_node arguments that give a node of this driver's cloud the cloud-config of `login` ({user,
    public_key}) and `host_key` (_user_data.cloud_config), merged with those of `kwargs` it shares (GCE's metadata);
    TfdistCloudError naming `field` on a cloud whose nodes tfdist cannot give user-data."""
    arg = provider_of(driver.type).user_data_arg
    if arg is None:
        clouds = ', '.join(sorted(name for name, spec in PROVIDERS.items() if spec.user_data_arg))
        raise TfdistCloudError('%s: tfdist gives user-data to nodes on %s only, not on provider %s'
                               % (field, clouds, driver.type))
    text = cloud_config(login['user'], login['public_key'], field, host_key)
    if isinstance(arg, tuple):
        arg, key = arg
        return {arg: dict(kwargs.get(arg) or {}, **{key: text})}
    return {arg: text}


def resource_tags(resource):
    """The tags of a node or volume that carry tfdist's cluster tag (EC2 tags, OpenStack metadata, GCE labels); {}."""
    extra = resource.extra or {}
    for key in ('tags', 'metadata', 'labels'):
        value = extra.get(key)
        if isinstance(value, dict) and TAG_CLUSTER in value:
            return value
    return {}


def node_identity(node):
    """NodeIdentity from the node's tags, or from its name when the driver keeps no tags; None if not a tfdist node.

    The index is the tfdist_index tag; a node that one call made with others for a run of indexes (EC2's
    RunInstances, _cloud_ec2.batch_create) has the run's first index instead, plus its place in the run: the launch
    index EC2 gives each instance of a RunInstances (amiLaunchIndex, libcloud's extra launch_index).
    """
    if tag_arg(node.driver):
        tags = resource_tags(node)
        cluster, role, index = tags.get(TAG_CLUSTER), tags.get(TAG_ROLE), tags.get(TAG_INDEX)
        first, place = tags.get(TAG_FIRST_INDEX), (node.extra or {}).get('launch_index')
        if index is None and str(first).isdigit() and isinstance(place, int):
            index = int(first) + place
    else:
        match = NODE_NAME_RE.match(node.name or '')
        cluster, role, index = match.group('cluster', 'role', 'index') if match else (None, None, None)
    # Tags are user-editable in the cloud console: ignore nodes whose tags would break names or groups.
    if not (isinstance(cluster, str) and CLUSTER_NAME_RE.match(cluster) and role in TASK_TYPES):
        return None
    # A node of the cluster without a valid index (an edited tag; tfdist before 0.5.0 tagged a batch's nodes
    # `pending` until it numbered them) still belongs to the cluster: index None, so the next run or destroy removes it.
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
    """The images in which to look up `wanted` (ids or names), fetched as narrowly as the cloud allows.

    Listing every image is fine on a private cloud but takes minutes on EC2 (all public AMIs) and GCE.
    """
    wanted = list(dict.fromkeys(wanted))  # roles often share one image
    lookup = provider_of(driver.type).list_images
    return lookup(driver, wanted) if lookup else driver.list_images()


def choose_size(driver, sizes, constraints, field, arch=None):
    """(size, reason): the cheapest of `sizes` (driver.list_sizes()) with the constraints' vCPUs, memory and GPUs.

    The cloud's own file says how its driver keeps vCPUs, GPUs and architecture (its size_facts); the rule
    itself is _sizes.cheapest_size. `field` (the role or RADL system) starts the error when no size fits.
    """
    facts = provider_of(driver.type).size_facts or generic_facts
    return cheapest_size(sizes, constraints, facts, driver.type, field, arch)


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
        'spot': resource_tags(node).get(TAG_SPOT) == 'true' or extra.get('instance_lifecycle') == 'spot',
        'owner': resource_tags(node).get(TAG_OWNER),
        'extra': _json_safe(without_user_data(extra)),
    }


def _batches(requests):
    """The requests in groups that one call can create: same role and differing only by name and tags (all of a
    role's nodes on EC2 without user-data of their own); as lists of indexes into requests, in their order."""
    def shape(request):
        role = (request.get('ex_metadata') or {}).get(TAG_ROLE)
        return role, dict((key, value) for key, value in request.items() if key not in ('name', 'ex_metadata'))
    groups = []
    for index, request in enumerate(requests):
        group = next((g for g in groups if shape(requests[g[0]]) == shape(request)), None)
        if group is None:
            groups.append([index])
        else:
            group.append(index)
    return groups


def create_nodes(driver, connect, requests):
    """Create one node per request (create_node kwargs); returns a Node or the exception raised, per request.

    All at once: `connect` builds a fresh driver for each worker thread, and on clouds with a batch create each batch
    (see _batches()) is one call, the batches made side by side.
    """
    batch = provider_of(driver.type).batch_create
    groups = _batches(requests) if batch else [[index] for index in range(len(requests))]

    def create(drv, group):
        if len(group) > 1:
            return batch(drv, connect, [requests[index] for index in group])
        return [drv.create_node(**requests[group[0]])]

    results = [None] * len(requests)
    for group, made in zip(groups, run_parallel(connect, create, groups)):
        for index, result in zip(group, made if isinstance(made, list) else [made] * len(group)):
            results[index] = result
    return results


def destroy_nodes(connect, nodes):
    """Destroy nodes (in one call on clouds with a batch destroy, else in parallel).

    Returns None per destroyed node, or the exception raised.
    """
    batch = provider_of(nodes[0].driver.type).batch_destroy if len(nodes) > 1 else None
    if batch:
        return batch(connect(), nodes)

    def destroy(drv, node):
        if not drv.destroy_node(node):
            raise TfdistCloudError('the provider refused to destroy it')
        return None

    return run_parallel(connect, destroy, nodes)


def release_stopped(driver, nodes, check_mode=False):
    """The nodes among `nodes` that are powered off yet still billed on the driver's cloud (Azure: stopped, not
    deallocated), released unless check_mode; [] on clouds where a powered-off node costs no compute."""
    release = provider_of(driver.type).release_stopped
    return release(driver, nodes, check_mode) if release else []


def release_own_stopped(driver, clusters, own_ids, check_mode=False):
    """(billed, released): the tfdist nodes (of `clusters`, when given) that are powered off yet still billed on the
    driver's cloud, and those among them whose id is in `own_ids` (this controller's), released unless check_mode.
    No listing on clouds where a powered-off node costs no compute."""
    if provider_of(driver.type).release_stopped is None:
        return [], []
    wanted = [node for node, identity in list_cluster_nodes(driver) if not clusters or identity.cluster in clusters]
    billed = release_stopped(driver, wanted, check_mode=True)
    return billed, release_stopped(driver, [node for node in billed if str(node.id) in own_ids], check_mode)


def access_for(driver, *args, **kwargs):
    """The ClusterAccess (key pair and firewall) of a cluster on the driver's cloud; arguments as ClusterAccess's."""
    cls = provider_of(driver.type).access
    if cls is None:
        supported = sorted(name for name, spec in PROVIDERS.items() if spec.access)
        raise TfdistCloudError('provider %r: tfdist manages key pairs and firewalls on %s only; '
                               'give the nodes your own with create_args' % (driver.type, ', '.join(supported)))
    return cls(driver, *args, **kwargs)


def node_kwargs(driver, access):
    """create_node arguments for the access facts that libcloud_access returned (empty when none)."""
    if not access:
        return {}
    cls = provider_of(driver.type).access
    if cls is None or access.get('cloud') != driver.type:
        raise TfdistCloudError('access: made for %r, but the provider is %r' % (access.get('cloud'), driver.type))
    return cls.node_kwargs(driver, access)
