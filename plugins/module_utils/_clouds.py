# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

"""The clouds tfdist knows, one file each: PROVIDERS maps a libcloud provider name to its CloudProvider.

A new cloud is one _cloud_<name>.py file that ends with `PROVIDER = CloudProvider(...)` (see _provider.py),
one import and one entry here, and one profile (inventories/<cloud>/cloud.yml). Every provider is imported
here by name: AnsiballZ ships only the module_utils that import statements name. Any other libcloud
provider works too, as a plain libcloud driver (credentials passed to its constructor as they are).

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

from ansible_collections.tfdist.cluster.plugins.module_utils import (
    _cloud_azure, _cloud_docker, _cloud_ec2, _cloud_gce, _cloud_openstack)
from ansible_collections.tfdist.cluster.plugins.module_utils._provider import CloudProvider

PROVIDERS = dict((provider.name, provider) for provider in (
    _cloud_ec2.PROVIDER,
    _cloud_gce.PROVIDER,
    _cloud_azure.PROVIDER,
    _cloud_openstack.PROVIDER,
    _cloud_docker.PROVIDER,
    # libcloud's own test cloud (its nodes are named dummy-N), which wants a node count.
    CloudProvider('dummy', defaults={'creds': 0}),
))
