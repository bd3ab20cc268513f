# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Filters over what tfdist knows of each cloud (plugins/module_utils/_libcloud.py and the _cloud_<provider>.py files).

Each filter is documented in plugins/filter/<name>.yml.
"""

from __future__ import annotations


def libcloud_spot_error(provider, field='spot', cloud=None):
    """'' when the provider's libcloud driver can ask for spot (preemptible) capacity, else the message."""
    # Imported here: Jinja loads this file wherever a template names the filter, and every task runs in a worker
    # process of its own; libcloud's import (a fifth of a second) is paid only where the filter runs.
    from ansible_collections.tfdist.cluster.plugins.module_utils import _libcloud

    return _libcloud.spot_error(provider or '', field, cloud)


def libcloud_image_error(name, provider, field='image_name', cloud=None):
    """'' when tfdist bakes images on the provider's cloud and `name` is a valid image name, else the message."""
    from ansible_collections.tfdist.cluster.plugins.module_utils import _images, _libcloud

    return _libcloud.images_error(provider or '', 'cloud', cloud) or _images.name_error(name, field)


def libcloud_radl_cloud(provider):
    """The cloud whose images the provider's RADL image URLs name (aws for ec2), or None when RADL names none."""
    from ansible_collections.tfdist.cluster.plugins.module_utils import _libcloud
    radl = _libcloud.provider_of(provider or '').radl
    return radl.cloud if radl else None


def libcloud_regions(provider):
    """Every region of the provider that a sweep looks in (_libcloud.every_region): {regions, unchecked}."""
    from ansible_collections.tfdist.cluster.plugins.module_utils import _libcloud
    return _libcloud.every_region(provider or '')


def libcloud_audit_regions(results):
    """One tfdist.cluster.libcloud_audit result from those of a task looped over regions (the region its item): every
    list joined; where more than one region was looked in, each resource, report line and other line names its region.
    Adds `regions` (those looked in) and `orphan_regions` ({orphan: [the regions it was found in]})."""
    results = [result for result in results if not result.get('skipped')]
    several = len(results) > 1
    merged = {'regions': [], 'orphan_regions': {}, 'changed': False}
    for result in results:
        region = result.get('item') or ''
        merged['regions'] += [region] if region else []
        merged['changed'] = merged['changed'] or bool(result.get('changed'))
        where = ' in %s' % region if several and region else ''
        for key, value in result.items():
            if not isinstance(value, list):
                continue
            if key == 'resources':
                value = [dict(resource, region=region, description=resource['description'] + where)
                         for resource in value]
            elif key in ('report', 'unchecked', 'untouched'):  # lines for the user
                value = ['%s: %s' % (region, line) if where else line for line in value]
            merged[key] = merged.get(key, []) + value
        for orphan in result.get('orphans') or []:
            merged['orphan_regions'].setdefault(orphan, []).append(region)
    for key in ('clusters', 'orphans'):
        merged[key] = sorted(set(merged.get(key, [])))
    return merged


class FilterModule:
    def filters(self):
        return {
            'libcloud_spot_error': libcloud_spot_error,
            'libcloud_image_error': libcloud_image_error,
            'libcloud_radl_cloud': libcloud_radl_cloud,
            'libcloud_regions': libcloud_regions,
            'libcloud_audit_regions': libcloud_audit_regions,
        }
