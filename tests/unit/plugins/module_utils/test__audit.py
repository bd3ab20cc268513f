"""The leak audit's rules (module_utils/_audit.py): what counts as a cluster's resource, what is gone, what an orphan is.

A fake libcloud driver holds the nodes and volumes; the key pairs and firewalls of each cloud are tested with that
cloud's access (test__cloud_<cloud>_access.py), the whole audit against the EC2 emulator and Docker in
tests/e2e/test_audit.py.
"""

from types import SimpleNamespace

from ansible_collections.tfdist.cluster.plugins.module_utils._audit import find, orphans, report, to_dict, untouched


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

    # GceAccess.found lists networks, subnets and firewall rules through the connection: none here.
    connection = SimpleNamespace(paginated_request=lambda path, method: {'items': []},
                                 request_aggregated_items=lambda api_name: {'items': {}})


def test_the_audit_looks_in_every_zone_of_a_zoned_cloud():
    driver = EveryZoneDriver(nodes=[node('n-1', 'demo-chief-0', **tf_tags('demo', 'chief', 0))])

    found, _unchecked = find(driver)

    assert driver.zones_asked == [('nodes', 'all'), ('volumes', 'all')]
    assert [r.id for r in found] == ['n-1']


OWNER = '1f3a2b4c5d6e7f8091a2b3c4d5e6f708'
OTHER = '9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b'


def test_another_controllers_cluster_of_the_same_name_is_listed_as_theirs_never_as_an_orphan():
    driver = FakeDriver(nodes=[
        node('i-1', 'demo-chief-0', tfdist_owner=OWNER, **tf_tags('demo', 'chief', 0)),
        node('i-2', 'demo-chief-0', tfdist_owner=OTHER, **tf_tags('demo', 'chief', 0)),
        node('i-3', 'gone-worker-0', tfdist_owner=OWNER, **tf_tags('gone', 'worker', 0)),    # a killed deploy of ours
        node('i-4', 'theirs-worker-0', tfdist_owner=OTHER, **tf_tags('theirs', 'worker', 0)),
        node('i-5', 'old-worker-0', **tf_tags('old', 'worker', 0)),                          # before owners were marked
        node('i-6', 'kept-worker-0', **tf_tags('kept', 'worker', 0)),                        # idem, its source is here
    ], extra=[('security group', 'sg-1', 'tfdist-demo-1f3a2b', 'demo'),                       # marked by its name only
              ('security group', 'sg-2', 'tfdist-demo-9e8d7c', 'demo', None),
              ('key pair', 'k-1', 'tfdist-demo-x', 'demo', OTHER)])                          # marked by its tag
    found, _unchecked = find(driver)
    known = ['demo', 'kept']

    assert report(found, known, OWNER) == [
        'demo (inventory source on this controller): node demo-chief-0 (i-1), security group tfdist-demo-1f3a2b (sg-1)',
        "demo (another controller's: owner 9e8d7c...): node demo-chief-0 (i-2), key pair tfdist-demo-x (k-1), "
        "security group tfdist-demo-9e8d7c (sg-2)",
        'gone (ORPHAN: no inventory source on this controller): node gone-worker-0 (i-3)',
        'kept (inventory source on this controller): node kept-worker-0 (i-6)',
        "old (no owner's mark, made before tfdist 0.5.0, and no inventory source on this controller: removed only "
        "when named in audit_clusters): node old-worker-0 (i-5)",
        "theirs (another controller's: owner 9e8d7c...): node theirs-worker-0 (i-4)"]
    assert orphans(found, known, OWNER) == ['gone']
    assert untouched(found, 'aws', OWNER, known) == [
        'cluster demo on aws belongs to another controller (owner 9e8d7c...): not touched',
        "cluster old on aws: 1 resource(s) without an owner's mark (made before tfdist 0.5.0) and no inventory source "
        "on this controller: not touched",
        'cluster theirs on aws belongs to another controller (owner 9e8d7c...): not touched']
    by_id = dict((r.id, to_dict(r, known, OWNER)) for r in found)
    assert (by_id['i-2']['standing'], by_id['i-2']['orphan'], by_id['i-2']['owner']) == ('another owner', False, OTHER)
    assert (by_id['sg-1']['standing'], by_id['sg-1']['owner']) == ('mine', '1f3a2b')


def test_a_cluster_without_marks_that_the_user_names_is_an_orphan_of_this_controller():
    found, _unchecked = find(FakeDriver(nodes=[node('i-5', 'old-worker-0', **tf_tags('old', 'worker', 0)),
                                               node('i-4', 'theirs-worker-0', tfdist_owner=OTHER,
                                                    **tf_tags('theirs', 'worker', 0))]))

    assert orphans(found, [], OWNER, named=['old', 'theirs']) == ['old']  # naming another's cluster does not make it ours
    assert report(found, [], OWNER, named=['old']) == [
        'old (ORPHAN: no inventory source on this controller): node old-worker-0 (i-5)',
        "theirs (another controller's: owner 9e8d7c...): node theirs-worker-0 (i-4)"]


def test_without_an_owner_every_cluster_is_the_callers_as_before_marks():
    found, _unchecked = find(FakeDriver(nodes=[node('i-4', 'theirs-worker-0', tfdist_owner=OTHER,
                                                    **tf_tags('theirs', 'worker', 0))]))
    assert orphans(found, []) == ['theirs'] and untouched(found, 'aws', None, []) == []
