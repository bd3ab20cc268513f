"""The leak audit's rules (module_utils/_audit.py): what counts as a cluster's resource, what is gone, what an orphan is.

A fake libcloud driver holds the nodes and volumes; the key pairs and firewalls of each cloud are tested with that
cloud's access (test__access.py), the whole audit against the EC2 emulator and Docker in tests/e2e/test_audit.py.
"""

from types import SimpleNamespace

from ansible_collections.tfdist.cluster.plugins.module_utils._audit import find, orphans, report


class FakeDriver:
    """A libcloud driver that keeps tags in ex_metadata, with nodes, volumes and its own extra resources."""

    type = 'fake-audit'

    def __init__(self, nodes=(), volumes=None, extra=()):
        self.nodes = [SimpleNamespace(driver=self, **node) for node in nodes]
        self.volumes = volumes
        self.extra = list(extra)

    def create_node(self, name, size, image, ex_metadata=None):
        raise AssertionError('the audit creates nothing')

    def list_nodes(self):
        return self.nodes

    def list_volumes(self):
        if self.volumes is None:
            raise NotImplementedError
        return [SimpleNamespace(**volume) for volume in self.volumes]

    def ex_audit_found(self, options):
        return self.extra


def node(ident, name, state='running', status=None, **tags):
    return dict(id=ident, name=name, state=state, extra={'tags': tags, 'status': status})


def tf_tags(cluster, role, index):
    return {'tfdist_cluster': cluster, 'tfdist_role': role, 'tfdist_index': str(index)}


def test_the_audit_lists_what_carries_a_clusters_tag_and_leaves_out_what_is_gone_or_foreign():
    driver = FakeDriver(nodes=[
        node('i-1', 'demo-worker-0', **tf_tags('demo', 'worker', 0)),
        node('i-2', 'demo-notebook', tfdist_cluster='demo'),               # tagged by hand: no TF node, still the cluster's
        node('i-3', 'demo-worker-1', state='terminated', **tf_tags('demo', 'worker', 1)),
        node('i-4', 'demo-ps-0', state='unknown', status='shutting-down', **tf_tags('demo', 'ps', 0)),
        node('i-5', 'web', Name='web'),                                      # not tfdist's
        node('i-6', 'bad', tfdist_cluster='Not A Name'),                     # a tag that names no cluster
        node('i-7', 'old-chief-0', **tf_tags('old', 'chief', 0)),
    ], volumes=[
        dict(id='vol-1', name='vol-1', state='available', extra={'tags': {'tfdist_cluster': 'demo'}}),
        dict(id='vol-2', name='vol-2', state='deleting', extra={'tags': {'tfdist_cluster': 'demo'}}),
        dict(id='vol-3', name='data', state='available', extra={'tags': {}}),
    ], extra=[('network', 'n-1', 'tfdist-old', 'old')])

    found, unchecked = find(driver)

    assert [(r.cluster, r.kind, r.id) for r in found] == [
        ('demo', 'node', 'i-2'), ('demo', 'node', 'i-1'), ('demo', 'volume', 'vol-1'),
        ('old', 'node', 'i-7'), ('old', 'network', 'n-1')]
    assert unchecked == []
    assert [r.id for r in find(driver, clusters=['old'])[0]] == ['i-7', 'n-1']

    assert orphans(found, ['demo']) == ['old']
    assert report(found, ['demo']) == [
        'demo (inventory source on this controller): node demo-notebook (i-2), node demo-worker-0 (i-1), volume vol-1',
        'old (ORPHAN: no inventory source on this controller): node old-chief-0 (i-7), network tfdist-old (n-1)']
    assert report(found[3:]) == ['old: node old-chief-0 (i-7), network tfdist-old (n-1)']


def test_a_cloud_without_volumes_is_audited_without_them():
    found, unchecked = find(FakeDriver(nodes=[node('i-1', 'a-chief-0', **tf_tags('a', 'chief', 0))]))
    assert [r.id for r in found] == ['i-1'] and unchecked == []


def test_a_boot_disk_named_after_a_clusters_node_is_the_clusters_without_a_tag():
    # GCE and Azure name a node's boot disk after the node and copy none of its labels or tags onto it.
    driver = FakeDriver(volumes=[
        dict(id='d-1', name='demo-worker-1', state='available', extra={'tags': {}}),
        dict(id='d-2', name='demo-disk', state='available', extra={'tags': {}}),  # no node's name
    ])

    found, _unchecked = find(driver)

    assert [(r.cluster, r.kind, r.name) for r in found] == [('demo', 'volume', 'demo-worker-1')]


class EveryZoneDriver(FakeDriver):
    """GCE's driver: it lists the nodes and disks of its own zone unless ex_zone='all' is asked for."""

    type = 'gce'

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.zones_asked = []

    def list_nodes(self, ex_zone=None):
        self.zones_asked.append(('nodes', ex_zone))
        return self.nodes

    def list_volumes(self, ex_zone=None):
        self.zones_asked.append(('volumes', ex_zone))
        return [SimpleNamespace(**volume) for volume in self.volumes or []]

    def ex_list_firewalls(self):
        return []


def test_the_audit_looks_in_every_zone_of_a_zoned_cloud():
    driver = EveryZoneDriver(nodes=[node('n-1', 'demo-chief-0', **tf_tags('demo', 'chief', 0))])

    found, _unchecked = find(driver)

    assert driver.zones_asked == [('nodes', 'all'), ('volumes', 'all')]
    assert [r.id for r in found] == ['n-1']
