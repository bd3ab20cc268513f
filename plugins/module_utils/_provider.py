# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

"""What a cloud file (_cloud_<name>.py) declares about its cloud, and the helpers cloud files share.

Each cloud file ends with one `PROVIDER = CloudProvider(...)`; _clouds.py lists them and _libcloud.py does
the same thing with any of them. A cloud leaves out what it does not need: the defaults are those of a plain
libcloud driver.

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import os
import threading
from collections import namedtuple
from concurrent.futures import ThreadPoolExecutor

# Nodes created concurrently at most; each thread has its own driver, as libcloud drivers are not thread-safe.
MAX_PARALLEL = 8


class TfdistCloudError(Exception):
    """A configuration problem the user can fix (unknown provider, missing credentials, bad names)."""


# The classes of a cloud's refusal, named in a module's failure result (`refusal`) for a pipeline or a later step
# (another zone or size) to branch on; stable names. `unknown`: an error of the cloud that none of the others explains.
REFUSALS = ('credentials', 'permission', 'quota', 'capacity', 'spot_capacity', 'size_unavailable', 'unknown')

# What a cloud refused and why: `kind` one of REFUSALS, `why` what the cloud said in a user's words (ending with the
# cloud's own error code, for a search), `advice` what to do about it ('' when the kind's own message says it).
Refusal = namedtuple('Refusal', ['kind', 'why', 'advice'])

# What was asked when the cloud refused: a role's nodes of a size in a zone (the location the role names, else the
# region), as spot nodes or not. NO_ATTEMPT: an error outside a create (a listing, a key pair).
Attempt = namedtuple('Attempt', ['role', 'size', 'zone', 'spot'])
NO_ATTEMPT = Attempt(None, None, None, False)


class CloudProvider:
    """Everything tfdist knows about one cloud (one libcloud provider).

    name           the libcloud provider (the value of a libcloud Provider constant), also its driver's `type`
    driver         the NodeDriver class, or its 'package.module.Class' import path; None: libcloud's own driver
    credentials    {constructor argument: (credentials key, environment variables, required)}; None: the
                   credentials option goes to the constructor as it is
    region_arg     the constructor argument that takes the region (GCE: the zone)
    region_env     environment variables that give the region when none is set
    defaults       constructor arguments that driver_options may override
    tag_arg        the create_node argument that stores tags on a node; None: ex_metadata when the driver's
                   create_node takes it, else the node's name alone identifies it
    tags_hold_keys whether a tag's value may hold an SSH public key (about 80 characters, with a space and
                   capitals); False: GCE's labels (63 lowercase characters)
    list_images    func(driver, wanted) -> the images among which to find the `wanted` ids or names, fetched
                   as narrowly as the cloud allows; None: driver.list_images()
    batch_create   func(driver, connect, requests) -> a Node or an exception per request, made in one call;
                   `connect` makes a driver for each extra thread
    batch_destroy  func(driver, nodes) -> None or an exception per node, destroyed in one call
    access         the ClusterAccess subclass (_access.py) that makes the cluster's key pair and firewall;
                   None: tfdist makes none on this cloud
    size_facts     func(NodeSize) -> _sizes.SizeFacts (vCPUs, GPUs, architecture) as this cloud's driver keeps
                   them; None: _sizes.generic_facts
    spot_args      create_node arguments that ask this cloud for interruptible capacity (EC2 spot, GCE preemptible);
                   None: libcloud's driver cannot ask for it, and spot nodes are refused
    spot_name      what this cloud calls that capacity, in the plan and in errors
    node_defaults  create_node arguments every node of this cloud gets (create_args may override them)
    audit_args     list_nodes and list_volumes arguments that make them see the whole account, for the leak audit
                   (GCE lists one zone unless told otherwise); None: the driver's defaults
    user_data_arg  the create_node argument that hands a node its user-data (text, read by cloud-init), or
                   (argument, key) for a key of a dict argument (GCE metadata); None: tfdist gives this cloud's
                   nodes no user-data
    images         the CloudImages subclass (_images.py) that saves a node as an image and finds and removes tfdist's
                   baked images; None: tfdist bakes no images on this cloud
    radl           the RadlImages that says how the Infrastructure Manager's RADL names this cloud's images; None:
                   RADL files cannot name them
    release_stopped  func(driver, nodes, check_mode) -> the nodes among `nodes` that are powered off yet still billed
                   (Azure's stopped, not deallocated, VMs), released (deallocated) unless check_mode; None: a node
                   powered off costs no compute on this cloud
    title          the cloud's name as its users know it (AWS), in the messages of its refusals; None: the provider name
    refusal        func(error, text, attempt) -> the Refusal of a libcloud error of this cloud (`text` its message,
                   `attempt` an Attempt), or None for what the cloud's codes do not tell (_libcloud.classify_error then
                   knows refused credentials by libcloud's type or HTTP 401, and calls the rest unknown)
    """

    def __init__(self, name, driver=None, credentials=None, region_arg='region', region_env=(), defaults=None,
                 tag_arg=None, list_images=None, batch_create=None, batch_destroy=None, access=None,
                 size_facts=None, spot_args=None, spot_name='spot', node_defaults=None, audit_args=None,
                 user_data_arg=None, images=None, radl=None, release_stopped=None, tags_hold_keys=True, title=None,
                 refusal=None):
        self.name = name
        self.driver = driver
        self.credentials = credentials
        self.region_arg = region_arg
        self.region_env = tuple(region_env)
        self.defaults = dict(defaults or {})
        self.tag_arg = tag_arg
        self.list_images = list_images
        self.batch_create = batch_create
        self.batch_destroy = batch_destroy
        self.access = access
        self.size_facts = size_facts
        self.spot_args = None if spot_args is None else dict(spot_args)
        self.spot_name = spot_name
        self.node_defaults = dict(node_defaults or {})
        self.audit_args = dict(audit_args or {})
        self.user_data_arg = user_data_arg
        self.images = images
        self.radl = radl
        self.release_stopped = release_stopped
        self.tags_hold_keys = tags_hold_keys
        self.title = title or name
        self.refusal = refusal


class RadlImages:
    """How the Infrastructure Manager's RADL names a cloud's images: disk.0.image.url = SCHEME://[PLACE/]IMAGE.

    scheme  the URL's scheme, the IM's name for the cloud (aws, gce, azr, ost, docker)
    cloud   the cloud profile (-e cloud=NAME) that deploys a RADL file with such URLs
    place   what the URL holds before the image: 'region' or 'zone' (the cluster's region), 'endpoint' (OpenStack's
            Keystone SERVER[:PORT]); None: the URL holds the image alone
    form    the URL after SCHEME://, as errors show it (REGION/AMI)
    parts   how many parts the image has that the URL writes as path segments and libcloud takes joined by ':'
            (Azure's PUBLISHER:OFFER:SKU:VERSION); 1: the rest of the URL is the image
    """

    def __init__(self, scheme, cloud, place=None, form='IMAGE', parts=1):
        self.scheme = scheme
        self.cloud = cloud
        self.place = place
        self.form = form
        self.parts = parts


def from_env(names):
    """The value of the first of these environment variables that is set and not empty, else None."""
    for name in names:
        if os.environ.get(name):
            return os.environ[name]
    return None


def run_parallel(connect, func, items):
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
