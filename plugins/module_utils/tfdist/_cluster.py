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

import base64
import binascii
import json
import re

# The TF task types, in the order tfdist lists them (the chief first).
TASK_TYPES = ('chief', 'worker', 'ps', 'evaluator')
# Servers first and the chief last, so that the coordinator finds its cluster up.
LAUNCH_ORDER = ('ps', 'worker', 'evaluator', 'chief')

# The private address the Infrastructure Manager's inventory gives each host (its ansible_host is public).
IM_PRIVATE_IP = 'IM_NODE_PRIVATE_IP'

# Tags (labels, metadata) on every cloud node, and the host variables of the same names.
TAG_CLUSTER = 'tfdist_cluster'
TAG_ROLE = 'tfdist_role'
TAG_INDEX = 'tfdist_index'
# Instead of TAG_INDEX on the nodes that one call made for a run of indexes (EC2's RunInstances): the run's first
# index, to which each node's place in the run adds (_libcloud.node_identity).
TAG_FIRST_INDEX = 'tfdist_first_index'
# Whose cluster: the controller that made it (its id, kept under the tfdist home). Destroy and the audit touch
# only their own controller's resources.
TAG_OWNER = 'tfdist_owner'
# On nodes of interruptible capacity (EC2 spot, GCE preemptible) only, with the value 'true'.
TAG_SPOT = 'tfdist_spot'
# The public host key that a node's user-data gave it ('ssh-ed25519 KEY'), where tags hold such text: any controller
# with the cloud's credentials pins it, not only the one that made the node (libcloud_node's user_data.known_hosts).
TAG_HOST_KEY = 'tfdist_host_key'

# Estimator-era scripts call the chief `master` in TF_CONFIG; tfdist calls it chief everywhere else.
CHIEF_NAMES = ('chief', 'master')
# The inventory group of the host that leads a cluster: its chief, or worker 0 without one.
LEADER = 'leader'

CLUSTER_NAME_MAX = 40
CLUSTER_NAME_RE = re.compile(r'^[a-z][a-z0-9-]*$')
# Greedy cluster part: role and index are anchored at the end, so dashes in the cluster name are fine.
NODE_NAME_RE = re.compile(r'^(?P<cluster>[a-z][a-z0-9-]*)-(?P<role>%s)-(?P<index>[0-9]+)$' % '|'.join(TASK_TYPES))

# A TF task's port when it has none of its own (the first of consecutive ones on a machine with several tasks).
DEFAULT_PORT = 2222
# The nodes' TensorFlow virtualenv (the tensorflow role's), whose bin/python runs the TF tasks.
NODE_VENV = '/opt/tfdist/venv'


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


def cluster_order(task_type, index):
    """Where a TF task (or its node) comes in its cluster: chief, workers, ps, evaluators, each by index (a node
    not numbered yet first)."""
    return (TASK_TYPES.index(task_type) if task_type in TASK_TYPES else len(TASK_TYPES), -1 if index is None else int(index))


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


# The inventory groups named after the TF roles, as a plain static inventory or the Infrastructure Manager's
# (it names groups after the RADL systems: ps, worker, ...) has them: TF task type -> group name.
ROLE_GROUPS = {task_type: task_type for task_type in TASK_TYPES}
# Host variables that give a host its tasks themselves (they win over the groups it is in).
HOST_TASK_VARS = ('tfdist_tasks', TAG_ROLE)


def role_groups(names=None):
    """The inventory group of each TF task type: the TF role's own name, or the one `names` gives it."""
    merged = dict(ROLE_GROUPS)
    for task_type, group in (names or {}).items():
        if task_type not in TASK_TYPES:
            raise ClusterError('role groups: %r is not a TF task type (known: %s)' % (task_type, ', '.join(TASK_TYPES)))
        if group:
            merged[task_type] = str(group)
    return merged


def _looked_for(names, cluster_group=None):
    """The groups a host was looked for in, for an error message: 'tfdist_demo, chief, worker, ps, evaluator'."""
    return ', '.join(([cluster_group] if cluster_group else []) + [names[t] for t in TASK_TYPES])


def cluster_hosts(groups, cluster_group=None, names=None):
    """The hosts of a cluster: those of its group (tfdist_<cluster>) when the inventory has it, else every host
    of the role groups (chief, worker, ps, evaluator), each once, in that order."""
    names = role_groups(names)
    if cluster_group and cluster_group in groups:
        return list(groups[cluster_group])
    hosts = []
    for task_type in TASK_TYPES:
        hosts += [h for h in groups.get(names[task_type]) or [] if h not in hosts]
    if not hosts:
        raise ClusterError('no TF task: none of the inventory groups %s has hosts; put each host in the group '
                           'of its TF role, or give it the host variables tfdist_role and tfdist_index'
                           % _looked_for(names, cluster_group))
    return hosts


def role_members(groups, hosts, hostvars, names=None):
    """Per TF task type, the cluster's hosts in its role group that have no tasks of their own (no tfdist_tasks,
    no tfdist_role), in inventory order: a host's place in that list is its task index."""
    names = role_groups(names)
    wanted = set(hosts)
    return {task_type: [h for h in groups.get(names[task_type]) or []
                        if h in wanted and not any(v in hostvars.get(h, {}) for v in HOST_TASK_VARS)]
            for task_type in TASK_TYPES}


def host_tasks(host, hostvars, members=None, default_port=DEFAULT_PORT, looked_for=None):
    """The tasks one inventory host runs.

    Its tfdist_tasks list, or the one task tfdist_role/tfdist_index name (host variables win); else one task per
    role group the host is in (`members`, from role_members), indexed by its place in the group. A second task
    on one host gets the next port.
    """
    listed = hostvars.get('tfdist_tasks')
    if listed is not None:
        return list(listed)
    if TAG_ROLE in hostvars:
        return [{'type': hostvars[TAG_ROLE], 'index': hostvars.get(TAG_INDEX, 0)}]
    found = []
    for task_type in TASK_TYPES:
        if host in (members or {}).get(task_type, ()):
            task = {'type': task_type, 'index': members[task_type].index(host)}
            if found:
                task['port'] = int(default_port) + len(found)
            found.append(task)
    if not found:
        raise ClusterError('host %s is in none of the inventory groups %s and has neither tfdist_tasks nor %s: '
                           'put it in the group of its TF role'
                           % (host, looked_for or _looked_for(ROLE_GROUPS), TAG_ROLE))
    return found


def tasks(hostvars, hosts=None, default_port=DEFAULT_PORT, groups=None, cluster_group=None, role_group_names=None):
    """Every TF task the hosts run (type, index, name, host, address, port), checked and sorted by type and index.

    `hosts` are the cluster's hosts; without them, the hosts of `cluster_group` when `groups` (the inventory's
    groups) has it, else every host of the role groups. With `groups`, a host without host variables runs the
    task of each role group it is in (role_group_names: TF task type -> group name, default the type itself).

    A task's address is the host's tfdist_private_ip, else the IM_NODE_PRIVATE_IP of an Infrastructure
    Manager inventory, else its ansible_host, else its name: TF traffic stays inside the cluster network.
    """
    names = role_groups(role_group_names)
    if hosts is None:
        if groups is None:
            raise ClusterError('no TF task: neither the cluster hosts nor the inventory groups were given')
        hosts = cluster_hosts(groups, cluster_group, names)
    members = role_members(groups, hosts, hostvars, names) if groups is not None else None
    looked_for = _looked_for(names)
    found = []
    for host in hosts:
        variables = hostvars[host]
        address = (variables.get('tfdist_private_ip') or variables.get(IM_PRIVATE_IP)
                   or variables.get('ansible_host') or host)
        for task in host_tasks(host, variables, members, default_port, looked_for):
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
    found.sort(key=lambda t: cluster_order(t['type'], t['index']))
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
    if strategy == 'parameter_server' and counts['chief'] and counts['workers'] < 1:
        return '%sworkers: the parameter_server strategy needs at least one worker' % field_prefix
    if strategy == 'parameter_server' and not counts['chief'] and counts['workers'] < 2:
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


# A task's folder under the job's work dir, and the files that make its configuration (training_files writes them).
TASK_SCRIPT = 'train.py'
TASK_TF_CONFIG = 'tf_config.json'
TASK_ENV = 'task.env'


# The folder of the job's tasks under its work dir.
TASKS_FOLDER = 'tasks'


def task_path(name):
    """A task's folder relative to the job's work dir."""
    return '%s/%s' % (TASKS_FOLDER, name)


def task_folder(work_dir, name):
    return '%s/%s' % (work_dir, task_path(name))


def task_folders(tasks, work_dir):
    """Each task's name and folder: training_task's or training_status's `tasks`, to stop or read them in one call.

    tasks: task dicts (with a name), or task names (destroy has only the folders it finds).
    """
    names = [task if isinstance(task, str) else task['name'] for task in tasks]
    return [{'name': name, 'dir': task_folder(work_dir, name)} for name in names]


# Where a dataset of the controller lands in a job folder (training_files), as NAME there: DATA_FOLDER/NAME.
DATA_FOLDER = 'data'


def data_path(work_dir, name):
    return '%s/%s/%s' % (work_dir, DATA_FOLDER, name)


# The prefix of a task's own variables in its task.env. The program reads them after its imports, so tasks whose
# environments differ in these alone can share one import (training_files' warm starts).
OWN_VARIABLES = 'TFDIST_'


def task_variables(task, params):
    """A task's task.env as a dict (params: training_files' work_dir, cluster_name, tasks, gpus and tf_keras)."""
    variables = {OWN_VARIABLES + 'CLUSTER': params['cluster_name'], OWN_VARIABLES + 'TASK': task['name'],
                 OWN_VARIABLES + 'WORK_DIR': params['work_dir'],
                 OWN_VARIABLES + 'TASK_DIR': task_folder(params['work_dir'], task['name'])}
    if params.get('tf_keras'):
        # tf.keras is tf-keras (Keras 2). Here and not in the never-logged env of the modules: Ansible masks each of
        # those values wherever it shows in their results, and this '1' would garble every name and time holding a 1.
        variables['TF_USE_LEGACY_KERAS'] = '1'
    if params['gpus'] > 0 and len(params['tasks']) > 1:
        # Several tasks share the host's GPUs: a GPU each for the chief and workers, none for the others.
        gpu_tasks = [t['name'] for t in params['tasks'] if t['type'] in ('chief', 'worker')]
        own = task['name'] in gpu_tasks
        variables['CUDA_VISIBLE_DEVICES'] = str(gpu_tasks.index(task['name']) % params['gpus']) if own else ''
    return variables


def task_env(task, params):
    """The lines of a task's task.env."""
    return ''.join('%s=%s\n' % item for item in task_variables(task, params).items())


def host_files(params):
    """{path relative to work_dir: content (bytes)} of a host's tasks and the dataset, what training_files writes.

    params: training_files' work_dir, cluster_name, tasks, scripts, script, cluster_spec, chief_name, gpus and data
    (its content base64). The module writes them on the node; its action names them by checksum for a look first.
    ClusterError names the field that is wrong.
    """
    files = {}
    for task in params['tasks']:
        script = params['scripts'].get(task['name'], params['script'])
        if script is None:
            raise ClusterError('scripts: no script for task %s, and no script for every task' % task['name'])
        try:
            config = tf_config(task, params['cluster_spec'], params['chief_name'])
        except ClusterError as error:
            raise ClusterError('tasks: %s' % error) from error
        folder = task_path(task['name']) + '/'
        files[folder + TASK_SCRIPT] = script.encode()
        files[folder + TASK_TF_CONFIG] = (json.dumps(config, indent=4, sort_keys=True) + '\n').encode()
        files[folder + TASK_ENV] = task_env(task, params).encode()
    if params['data']:
        name = params['data']['name']
        if name in ('', '.', '..') or '/' in name:
            raise ClusterError('data: name must be a file name, got %r' % name)
        try:
            files['%s/%s' % (DATA_FOLDER, name)] = base64.b64decode(params['data']['content'], validate=True)
        except (binascii.Error, ValueError) as error:
            raise ClusterError('data: content is not base64: %s' % error) from error
    return files


def host_folders(params):
    """The folders of a host's job relative to work_dir ('' is work_dir): its own, the data's, each task's and each
    of training_files' folders (params: its tasks and folders)."""
    names = [task['name'] for task in params['tasks']] + list(params['folders'])
    return ['', DATA_FOLDER, TASKS_FOLDER] + [task_path(name) for name in names]


def launches(cluster_tasks, work_dir, cluster, spec, leader_task, python, interface='tf_config', chief_name='chief',
             script_args=(), watch_files=()):
    """How to start each task (training_task's `tasks`), servers first.

    The servers stop once the leader's port has answered and gone silent; the leader announces its own end on that
    port, so servers started after a short job still learn of it. A task that only serves (a ps, or a worker of a
    job with ps) stops as soon as it hears that end (end_grace 0); the others keep their grace (an evaluator's last
    evaluation, a worker ending its own loop).
    """
    result = []
    for task in launch_order(cluster_tasks):
        folder = task_folder(work_dir, task['name'])
        leads = task['name'] == leader_task['name']
        result.append({
            'name': '%s/%s' % (cluster, task['name']),
            'dir': folder,
            'command': ([python, '%s/%s' % (folder, TASK_SCRIPT)] + flags(task, spec, interface, chief_name)
                        + [str(arg) for arg in script_args]),
            'env_file': '%s/%s' % (folder, TASK_ENV),
            'env_from_files': {'TF_CONFIG': '%s/%s' % (folder, TASK_TF_CONFIG)},
            'watch_files': ['%s/%s' % (folder, TASK_SCRIPT), '%s/%s' % (folder, TASK_TF_CONFIG)] + list(watch_files),
            'stop_when_gone': None if leads else '%s:%s' % (leader_task['address'], leader_task['port']),
            'announce_end': int(task['port']) if leads else None,
            'end_grace': 0 if not leads and (task['type'] == 'ps' or (task['type'] == 'worker' and 'ps' in spec)) else None,
        })
    return result


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
