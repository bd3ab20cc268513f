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

# Estimator-era scripts call the chief `master` in TF_CONFIG; tfdist calls it chief everywhere else.
CHIEF_NAMES = ('chief', 'master')
# The inventory group of the host that leads a cluster: its chief, or worker 0 without one.
LEADER = 'leader'

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


def layout(workers, ps=0, evaluators=0, port_base=None, chiefs=1):
    """The chief (none with chiefs=0: worker 0 leads), then the workers, parameter servers and
    evaluators, each indexed from 0.

    With port_base (every task on one node) each task gets the next port.
    """
    tasks = []
    for task_type, count in (('chief', chiefs), ('worker', workers), ('ps', ps), ('evaluator', evaluators)):
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


def count_error(chiefs, workers, ps=0, evaluators=0, strategy=None, field_prefix='tf_'):
    """'' when these task counts make a cluster, else the message that names the field at fault.

    A cluster has one chief, or none: then worker 0 leads it (the classic clusters of the TF1 era).
    """
    counts = {'chief': chiefs, 'workers': workers, 'ps': ps, 'evaluators': evaluators}
    for name, value in counts.items():
        try:
            counts[name] = int(value)
        except (TypeError, ValueError):
            return '%s%s: must be a whole number, got %r' % (field_prefix, name, value)
        if counts[name] < 0:
            return '%s%s: must be 0 or more, got %d' % (field_prefix, name, counts[name])
    if counts['chief'] > 1:
        return ('%schief: a cluster has one chief or none (then worker 0 leads it), got %d'
                % (field_prefix, counts['chief']))
    if counts['chief'] == 0 and counts['workers'] == 0:
        return ('%sworkers: a cluster without a chief (%schief=0) needs at least one worker: worker 0 leads it'
                % (field_prefix, field_prefix))
    if strategy == 'parameter_server' and counts['ps'] == 0:
        return '%sps: the parameter_server strategy needs at least one parameter server' % field_prefix
    if strategy == 'parameter_server' and counts['workers'] - (1 - counts['chief']) < 1:
        return ('%sworkers: the parameter_server strategy without a chief needs at least 2 workers: '
                'worker 0 coordinates, the others compute' % field_prefix)
    return ''


def check(cluster_tasks):
    """Raise ClusterError unless the tasks make one cluster: unique names, indexes 0..n-1, one chief or
    none (then a worker 0), distinct ports."""
    names = [t['name'] for t in cluster_tasks]
    for name in names:
        if names.count(name) > 1:
            raise ClusterError('TF task %s is defined twice' % name)
    for task_type in TASK_TYPES:
        indexes = sorted(t['index'] for t in cluster_tasks if t['type'] == task_type)
        if indexes != list(range(len(indexes))):
            raise ClusterError('%s task indexes must be 0..%d, got %s' % (task_type, len(indexes) - 1, indexes))
    chiefs = [t for t in cluster_tasks if t['type'] == 'chief']
    if len(chiefs) > 1:
        raise ClusterError('a cluster has one chief or none, found %d' % len(chiefs))
    if not chiefs and not any(t['type'] == 'worker' for t in cluster_tasks):
        raise ClusterError('a cluster without a chief needs a worker 0 to lead it; found %s'
                           % (', '.join(t['name'] for t in cluster_tasks) or 'no TF task'))
    addresses = [(t['address'], t['port']) for t in cluster_tasks]
    if len(set(addresses)) != len(addresses):
        raise ClusterError('two TF tasks share one address and port')


def leader(cluster_tasks):
    """The task that leads the job: the chief, or worker 0 of a cluster without one.

    It decides completion, its model and logs are collected, the servers stop once it is gone.
    """
    types = set(t['type'] for t in cluster_tasks)
    for task in cluster_tasks:
        if leads(task['type'], task['index'], types):
            return task
    raise ClusterError('no TF task leads this cluster: it has neither a chief nor a worker 0')


def cluster_spec(cluster_tasks):
    """The `cluster` part of TF_CONFIG: HOST:PORT per task type (evaluators are not part of it)."""
    spec = {}
    for task in cluster_tasks:
        if task['type'] != 'evaluator':
            spec.setdefault(task['type'], []).append('%s:%d' % (task['address'], int(task['port'])))
    return spec


def tf_config(task, spec, chief_name='chief'):
    """The TF_CONFIG of one task; chief_name 'master' is what Estimator-era scripts expect."""
    if chief_name not in CHIEF_NAMES:
        raise ClusterError('chief name: %r is not one of %s' % (chief_name, ', '.join(CHIEF_NAMES)))
    renamed = {(chief_name if job == 'chief' else job): list(hosts) for job, hosts in spec.items()}
    task_type = chief_name if task['type'] == 'chief' else task['type']
    return {'cluster': renamed, 'task': {'type': task_type, 'index': int(task['index'])}}


def launch_order(cluster_tasks):
    return sorted(cluster_tasks, key=lambda t: (LAUNCH_ORDER.index(t['type']), int(t['index'])))


def flags(task, spec, interface='tf_config', chief_name='chief'):
    """The classic command-line flags of a task, for scripts that do not read TF_CONFIG.

    A cluster without a chief gets no --chief_host (worker 0 is the chief of such scripts).
    """
    if interface == 'tf_config':
        return []
    config = tf_config(task, spec, chief_name)
    result = ['--ps_hosts=' + ','.join(spec.get('ps', [])), '--worker_hosts=' + ','.join(spec.get('worker', []))]
    if spec.get('chief'):
        result.append('--%s_host=%s' % (chief_name, ','.join(spec['chief'])))
    return result + ['--job_name=%s' % config['task']['type'], '--task_index=%d' % int(task['index'])]


def coordinated(spec, task_type, index):
    """The parameter_server view of a cluster without a chief: worker 0 becomes the coordinator.

    TF's ParameterServerStrategy coordinates from a chief; in a classic cluster worker 0 plays that
    part and the other workers compute. Returns (spec, task_type, index) in that view; a cluster
    with a chief is returned as it is.
    """
    if 'chief' in spec or not spec.get('worker'):
        return spec, task_type, int(index)
    workers = list(spec['worker'])
    view = dict(spec, chief=workers[:1], worker=workers[1:])
    if not view['worker']:
        del view['worker']
    if task_type == 'worker':
        return (view, 'chief', 0) if int(index) == 0 else (view, 'worker', int(index) - 1)
    return view, task_type, int(index)


def leads(task_type, index, spec):
    """Whether this task leads the job: the chief, or worker 0 of a cluster that has no chief.

    spec: the cluster spec, or any collection of the cluster's task types.
    """
    return task_type in CHIEF_NAMES or (task_type == 'worker' and int(index) == 0
                                        and not any(name in spec for name in CHIEF_NAMES))
