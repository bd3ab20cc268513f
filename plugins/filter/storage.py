# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Filters over the storage policy (plugins/module_utils/tfdist/_storage.py): what a data or model URL means.

Playbooks ask these instead of matching URLs themselves. Each filter is documented in plugins/filter/<name>.yml.
"""

from __future__ import annotations

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _storage


def storage_url(value, field='url', cwd=None, hdfs_uri=None):
    return _storage.classify(value, field, cwd, hdfs_uri)


def storage_plan(settings, cwd=None, cache_dir=None, hdfs_uri=None):
    """settings: the job's tf_data, tf_stage_data, tf_model_url, tf_checkpoint_url and tf_hdfs."""
    return _storage.storage_plan(
        settings.get('tf_data'), settings.get('tf_stage_data'), settings.get('tf_model_url'),
        settings.get('tf_checkpoint_url'), bool(settings.get('tf_hdfs')), cwd, cache_dir, hdfs_uri)


class FilterModule:
    def filters(self):
        return {'storage_url': storage_url, 'storage_plan': storage_plan}
