# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Filters over the cluster model (plugins/module_utils/tfdist/_cluster.py): inventory hosts -> TF tasks -> TF_CONFIG.

Each filter is documented in plugins/filter/<name>.yml.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _cluster, _storage
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._supervisor import GONE_GRACE
from ansible_collections.tfdist.cluster.plugins.module_utils._liveness import parse_duration
from ansible_collections.tfdist.cluster.plugins.module_utils._sizes import budget_check
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist.train.cli import STRATEGIES


# The defaults that roles and playbooks share, each defined once in Python (a role's default reads it here).
DEFAULTS = {
    'port': _cluster.DEFAULT_PORT,
    'hdfs_ports': _storage.HDFS_PORTS,
    # What the cluster's nodes reach on each other: the TF port and HDFS's, as the firewall takes them.
    'internal_ports': [str(port) for port in sorted([_cluster.DEFAULT_PORT, *_storage.HDFS_PORTS.values()])],
    'venv': _cluster.NODE_VENV,
    'python': _cluster.NODE_VENV + '/bin/python',
    'strategies': list(STRATEGIES),
    # Seconds a server or worker outlives a silent leader: the supervisor's own default.
    'gone_grace': int(GONE_GRACE),
}


def tf_default(name):
    try:
        return DEFAULTS[name]
    except KeyError:
        raise AnsibleFilterError('tf_default: no default named %r (known: %s)' % (name, ', '.join(DEFAULTS))) from None


def tf_tasks(hostvars, hosts=None, default_port=_cluster.DEFAULT_PORT, groups=None, cluster_group=None, role_groups=None):
    try:
        return _cluster.tasks(hostvars, hosts, default_port, groups, cluster_group, role_groups)
    except _cluster.ClusterError as e:
        raise AnsibleFilterError(str(e)) from e


def tf_task_layout(workers, ps=0, evaluators=0, port_base=None, chiefs=1):
    return _cluster.layout(workers, ps, evaluators, port_base, chiefs)


def tf_task_name(task):
    return _cluster.task_name(task['type'], task['index'])


def tf_group(cluster, role=None):
    return _cluster.group_name(cluster, role)


def tf_launch_order(tasks):
    return _cluster.launch_order(tasks)


def tf_task_folders(tasks, work_dir):
    return _cluster.task_folders(tasks, work_dir)


def tf_cluster_spec(tasks):
    return _cluster.cluster_spec(tasks)


def tf_flags(task, cluster_spec, interface='tf_config', chief_name='chief'):
    return _cluster.flags(task, cluster_spec, interface, chief_name)


def tf_launches(tasks, work_dir, cluster, cluster_spec, leader, python, interface='tf_config', chief_name='chief',
                script_args=(), watch_files=()):
    return _cluster.launches(tasks, work_dir, cluster, cluster_spec, leader, python, interface, chief_name,
                             script_args, watch_files)


def tf_config(task, cluster_spec, chief_name='chief'):
    try:
        return _cluster.tf_config(task, cluster_spec, chief_name)
    except _cluster.ClusterError as e:
        raise AnsibleFilterError(str(e)) from e


def tf_leader(tasks):
    try:
        return _cluster.leader(tasks)
    except _cluster.ClusterError as e:
        raise AnsibleFilterError(str(e)) from e


def tf_count_error(counts, strategy=None, field_prefix='tf_'):
    """'' when the task counts (a dict: chief, workers, ps, evaluators) make a cluster, else the message."""
    return _cluster.count_error(counts.get('chief', 1), counts.get('workers', 0), counts.get('ps', 0),
                                counts.get('evaluators', 0), strategy, field_prefix)


def tf_role_nodes(layout, node_specs, create_args=None, spot=False):
    """libcloud_node's roles option: per TF task type, its node settings and one node per task of the layout.

    spot true: every role's nodes are spot nodes; false: those whose node settings say spot.
    """
    entries = []
    for role in _cluster.TASK_TYPES:
        spec = dict(node_specs.get(role) or {})
        spec.update(role=role, count=sum(1 for t in layout if t['type'] == role))
        spec['spot'] = boolean(spot, strict=False) or boolean(spec.get('spot'), strict=False)
        if create_args:
            spec['create_args'] = dict(create_args, **(spec.get('create_args') or {}))
        entries.append(spec)
    return entries


def tf_cluster_name_error(name, field='cluster_name'):
    """'' for a valid cluster name, else the message that names the field and the rule."""
    try:
        _cluster.validate_cluster_name(name, field)
    except _cluster.ClusterError as e:
        return str(e)
    return ''


# A role's constraints (least vCPUs, memory, GPUs): keys of a cloud profile's role and of a RADL node alike.
_CONSTRAINT_KEYS = ('cpus', 'memory', 'gpus')


def tf_node_specs(profile_nodes, overrides, source=None, images=None):
    """Node settings per role (libcloud_node's roles[] options): the cloud profile's, with an override's on top.

    `images` (role -> image: the images baked for the cloud) replace the profile's. An override (a RADL system, from
    the file `source`) sets the image, and either the size or constraints (cpus, memory, gpus) from which
    libcloud_node picks the cheapest size; a size wins over constraints.
    """
    specs = {}
    for role in _cluster.TASK_TYPES:
        spec = dict(profile_nodes.get(role) or {})
        if spec and (images or {}).get(role):
            spec['image'] = images[role]
        constraints = dict((key, spec.pop(key)) for key in _CONSTRAINT_KEYS if spec.get(key) is not None)
        where = 'libcloud_nodes.%s' % role
        override = overrides.get(role) or {}
        wanted = dict((key, override[key]) for key in _CONSTRAINT_KEYS if override.get(key))
        if override.get('size') or wanted:
            # The profile's price is its size's: another size (or one chosen from constraints) has another price.
            if override.get('size') != spec.get('size'):
                spec.pop('price_per_hour', None)
        if override.get('size'):
            spec['size'], constraints = override['size'], {}
        elif wanted:
            spec.pop('size', None)
            constraints = wanted
            where = "%ssystem '%s'" % (source + ': ' if source else 'RADL ', override.get('system') or role)
        if override.get('image'):
            spec['image'] = override['image']
        if override.get('spot'):
            spec['spot'] = True
        if spec.get('size'):
            constraints = {}
        if any(constraints.values()):
            spec['constraints'] = dict(constraints, source=where)
        if spec:
            specs[role] = spec
    return specs


def tf_plan_line(role_spec, plan, nodes):
    """One line of the cluster plan for a role: how many of what, what deploy would create or remove, and, for a
    size chosen from constraints, why that size."""
    role = role_spec['role']
    todo = (plan or {}).get(role) or {}
    size = role_spec.get('size') or todo.get('size') or '?'
    if isinstance(size, list):
        size = size[0] if size else '?'  # sizes in order of preference: the others are the plan's fallbacks
    line = '%s: %s x %s (%s)' % (role, role_spec['count'], size, role_spec.get('image') or '?')
    if todo.get('zone'):
        line += ' in %s' % todo['zone']
    if todo.get('fallbacks'):
        line += ' (then %s)' % ', '.join(todo['fallbacks'])
    if todo.get('spot'):
        line += ', spot'
    if todo.get('price'):
        # Where the price comes from, unless it is libcloud's list (the usual case).
        source = todo.get('price_source')
        line += ', $%g/h each%s' % (todo['price'], ' (%s)' % source if source and source != 'list' else '')
    running = [n['name'] for n in nodes if n.get('role') == role]
    parts = []
    if running:
        parts.append('running ' + ', '.join(running))
    if todo.get('to_create'):
        parts.append('create ' + ', '.join(todo['to_create']))
    if todo.get('to_remove'):
        parts.append('remove ' + ', '.join(todo['to_remove']))
    if todo.get('size_reason'):
        parts.append('size ' + todo['size_reason'])
    return line + (': ' + '; '.join(parts) if parts else '')


def tf_budget_check(cost, budget, deadline='', fields=('budget', 'deadline')):
    """{error, warning} of the plan's cost (libcloud_node's) against a budget in dollars over a deadline (2h, 90m);
    each '' when there is none to give. `fields` names the budget and the deadline in the messages."""
    if budget in (None, '') or cost is None:
        return dict(error='', warning='')
    try:
        hours = parse_duration(deadline) / 3600.0 if deadline else None
    except ValueError as e:
        raise AnsibleFilterError('%s: %s' % (fields[1], e))
    error, warning = budget_check(cost, float(budget), hours, fields[0], fields[1], deadline)
    return dict(error=error, warning=warning)


def tf_routed_lines(result):
    """Lines that say which refusals libcloud_node's `result` routed around (`routed`) and where each role's new
    nodes went (`placed`); [] when it routed none."""
    if not result.get('routed'):
        return []
    placed = ', '.join('%s %s in %s' % (role, where['size'], where['zone'])
                       for role, where in sorted(result.get('placed', {}).items(),
                                                 key=lambda item: _cluster.TASK_TYPES.index(item[0])))
    return ['routed around: ' + entry['why'] for entry in result['routed']] + ['placed: ' + placed]


class FilterModule:
    def filters(self):
        return {
            'tf_default': tf_default,
            'tf_tasks': tf_tasks,
            'tf_task_layout': tf_task_layout,
            'tf_task_name': tf_task_name,
            'tf_group': tf_group,
            'tf_launch_order': tf_launch_order,
            'tf_cluster_spec': tf_cluster_spec,
            'tf_flags': tf_flags,
            'tf_launches': tf_launches,
            'tf_task_folders': tf_task_folders,
            'tf_config': tf_config,
            'tf_leader': tf_leader,
            'tf_count_error': tf_count_error,
            'tf_role_nodes': tf_role_nodes,
            'tf_cluster_name_error': tf_cluster_name_error,
            'tf_node_specs': tf_node_specs,
            'tf_plan_line': tf_plan_line,
            'tf_routed_lines': tf_routed_lines,
            'tf_budget_check': tf_budget_check,
        }
