# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""The cluster model: what a TF task is called, where it runs, and how the cluster is described to TF.

One home for the rules every other part follows: the task types, task and node names, the tags that
mark a node, the inventory groups, the layout of a cluster, its TF_CONFIG cluster spec, its launch
order and the classic command-line flags. The inventory plugin, the modules, the filters, the RADL
code and the node-side training program all import it.

Standard library only: it is also shipped to the nodes with the training program.
Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import re

# The TF task types, in the order tfdist lists them (the chief first).
TASK_TYPES = ('chief', 'worker', 'ps', 'evaluator')
# Servers first and the chief last, so that the coordinator finds its cluster up.
LAUNCH_ORDER = ('ps', 'worker', 'evaluator', 'chief')

# Tags (labels, metadata) on every cloud node, and the host variables of the same names.
TAG_CLUSTER = 'tfdist_cluster'
TAG_ROLE = 'tfdist_role'
TAG_INDEX = 'tfdist_index'

CLUSTER_NAME_MAX = 40
CLUSTER_NAME_RE = re.compile(r'^[a-z][a-z0-9-]*$')
# Greedy cluster part: role and index are anchored at the end, so dashes in the cluster name are fine.
NODE_NAME_RE = re.compile(r'^(?P<cluster>[a-z][a-z0-9-]*)-(?P<role>%s)-(?P<index>[0-9]+)$' % '|'.join(TASK_TYPES))

DEFAULT_PORT = 2222


class ClusterError(ValueError):
    """A cluster description the user must fix; the message names what is wrong."""


def validate_cluster_name(name, field='cluster'):
    if not (isinstance(name, str) and CLUSTER_NAME_RE.match(name) and len(name) <= CLUSTER_NAME_MAX):
        raise ClusterError('%s: %r is not a valid cluster name: use lowercase letters, digits and dashes, '
                           'start with a letter, at most %d characters' % (field, name, CLUSTER_NAME_MAX))
    return name


def task_name(task_type, index):
    """The name a task goes by everywhere: chief-0, worker-1, ps-0."""
    return '%s-%d' % (task_type, int(index))


def node_name(cluster, role, index):
    """The name of the cloud node that runs one task: demo-worker-1."""
    return '%s-%s-%d' % (cluster, role, int(index))


def node_tags(cluster, role, index):
    return {TAG_CLUSTER: cluster, TAG_ROLE: role, TAG_INDEX: str(index)}


def group_name(cluster, role=None):
    """Inventory group of a cluster (tfdist_demo) or of one of its roles (tfdist_demo_worker)."""
    # Cluster names are [a-z0-9-]: dashes are the only characters a group name cannot have.
    return '_'.join(['tfdist', cluster] + ([role] if role else [])).replace('-', '_')


def layout(workers, ps=0, evaluators=0, port_base=None):
    """One chief, then the workers, parameter servers and evaluators, each indexed from 0.

    With port_base (every task on one node) each task gets the next port.
    """
    tasks = [{'type': 'chief', 'index': 0}]
    for task_type, count in (('worker', workers), ('ps', ps), ('evaluator', evaluators)):
        tasks += [{'type': task_type, 'index': i} for i in range(int(count))]
    if port_base is not None:
        for offset, task in enumerate(tasks):
            task['port'] = int(port_base) + offset
    return tasks


def host_tasks(host, hostvars):
    """The tasks one inventory host runs: its tfdist_tasks list, or the one task tfdist_role/tfdist_index name."""
    listed = hostvars.get('tfdist_tasks')
    if listed is not None:
        return list(listed)
    if TAG_ROLE not in hostvars:
        raise ClusterError('host %s has neither tfdist_tasks nor %s' % (host, TAG_ROLE))
    return [{'type': hostvars[TAG_ROLE], 'index': hostvars.get(TAG_INDEX, 0)}]


def tasks(hostvars, hosts, default_port=DEFAULT_PORT):
    """Every TF task the hosts run (type, index, name, host, address, port), checked and sorted by type and index.

    A task's address is the host's tfdist_private_ip, else its ansible_host, else its name: TF traffic
    stays inside the cluster network.
    """
    found = []
    for host in hosts:
        variables = hostvars[host]
        address = variables.get('tfdist_private_ip') or variables.get('ansible_host') or host
        for task in host_tasks(host, variables):
            if task['type'] not in TASK_TYPES:
                raise ClusterError('host %s: unknown TF task type %r (known: %s)'
                                   % (host, task['type'], ', '.join(TASK_TYPES)))
            found.append({
                'type': str(task['type']),
                'index': int(task['index']),
                'name': task_name(task['type'], task['index']),
                'host': host,
                'address': str(address),
                'port': int(task.get('port', default_port)),
            })
    found.sort(key=lambda t: (TASK_TYPES.index(t['type']), t['index']))
    check(found)
    return found


def check(cluster_tasks):
    """Raise ClusterError unless the tasks make one cluster: unique names, indexes 0..n-1, one chief, distinct ports."""
    names = [t['name'] for t in cluster_tasks]
    for name in names:
        if names.count(name) > 1:
            raise ClusterError('TF task %s is defined twice' % name)
    for task_type in TASK_TYPES:
        indexes = sorted(t['index'] for t in cluster_tasks if t['type'] == task_type)
        if indexes != list(range(len(indexes))):
            raise ClusterError('%s task indexes must be 0..%d, got %s' % (task_type, len(indexes) - 1, indexes))
    chiefs = [t for t in cluster_tasks if t['type'] == 'chief']
    if len(chiefs) != 1:
        raise ClusterError('a cluster needs exactly one chief, found %d' % len(chiefs))
    addresses = [(t['address'], t['port']) for t in cluster_tasks]
    if len(set(addresses)) != len(addresses):
        raise ClusterError('two TF tasks share one address and port')


def chief(cluster_tasks):
    """The task that leads the job: it decides completion, and its model and logs are collected."""
    return next(t for t in cluster_tasks if t['type'] == 'chief')


def cluster_spec(cluster_tasks):
    """The `cluster` part of TF_CONFIG: HOST:PORT per task type (evaluators are not part of it)."""
    spec = {}
    for task in cluster_tasks:
        if task['type'] != 'evaluator':
            spec.setdefault(task['type'], []).append('%s:%d' % (task['address'], int(task['port'])))
    return spec


def tf_config(task, spec):
    """The TF_CONFIG of one task."""
    return {'cluster': spec, 'task': {'type': task['type'], 'index': int(task['index'])}}


def launch_order(cluster_tasks):
    return sorted(cluster_tasks, key=lambda t: (LAUNCH_ORDER.index(t['type']), int(t['index'])))


def flags(task, spec, interface='tf_config'):
    """The classic command-line flags of a task, for scripts that do not read TF_CONFIG."""
    if interface == 'tf_config':
        return []
    return [
        '--ps_hosts=' + ','.join(spec.get('ps', [])),
        '--worker_hosts=' + ','.join(spec.get('worker', [])),
        '--chief_host=' + ','.join(spec.get('chief', [])),
        '--job_name=%s' % task['type'],
        '--task_index=%d' % int(task['index']),
    ]


def leads(task_type, index, spec):
    """Whether this task leads the job: the chief, or worker 0 of a cluster that has no chief."""
    return task_type == 'chief' or (task_type == 'worker' and int(index) == 0 and 'chief' not in spec)
