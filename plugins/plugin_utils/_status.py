# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""What playbooks/status.yml shows: each cluster's nodes, job, uptime and cost, as JSON and as a few lines.

The inputs are what the run already holds: each node's inventory variables, one tfdist.cluster.training_status
answer per node, the deploy's summary.json and the audit's clusters; nothing here reaches a node or a cloud API
(list prices come from libcloud's bundled price list). The report's keys are documented by the JSON Schema
docs/schemas/status.schema.json (SCHEMA_VERSION): a pipeline may rely on them.

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import datetime

from ansible_collections.tfdist.cluster.plugins.module_utils._liveness import format_duration
from ansible_collections.tfdist.cluster.plugins.module_utils._sizes import cluster_cost

# Raised when a key of status.json changes meaning or goes away; a new key keeps it.
SCHEMA_VERSION = 1

# The job's states: the leader's own word (status.json) where it has one, else what its tasks' records say.
NO_ANSWER = 'unknown'  # no node of the cluster answered
NOT_STARTED = 'not started'
# Where libcloud's price list is keyed otherwise than by the provider's name (its EC2 list is per OS).
PRICE_LIST_NAMES = {'ec2': 'ec2_linux'}
# Where a node's creation time is in libcloud's `extra` (EC2, GCE, OpenStack and Azure).
CREATED_KEYS = ('launch_time', 'creationTimestamp', 'created', 'created_at')


def list_price(provider, size, region=None):
    """The size's on-demand price per hour in libcloud's bundled price list, None where it knows none."""
    if not size:
        return None
    try:
        from libcloud.pricing import get_size_price
        price = get_size_price('compute', PRICE_LIST_NAMES.get(provider, provider), size, region)
    except Exception:  # libcloud raises KeyError, or others for a driver without prices: no price known
        return None
    try:
        return float(price) if price and float(price) > 0 else None
    except (TypeError, ValueError):
        return None


def created_at(extra):
    """Seconds since the epoch when the cloud made the node, from libcloud's `extra`; None where it does not say."""
    for key in CREATED_KEYS:
        value = (extra or {}).get(key)
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str) and value:
            try:
                moment = datetime.datetime.fromisoformat(value.replace('Z', '+00:00'))
            except ValueError:
                continue
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=datetime.timezone.utc)
            return moment.timestamp()
    return None


def _task_state(task):
    """'running', 'not started', or how it ended ('exited 0', 'ended by signal 15 (stopped)', ...)."""
    if task.get('running'):
        return 'running'
    if task.get('pid') is None:
        return NOT_STARTED
    code = task.get('returncode')
    if code is None:
        ended = 'died'
    else:  # a negative code is the signal that ended it (Python's subprocess convention)
        ended = 'exited %d' % code if code >= 0 else 'ended by signal %d' % -code
    reason = task.get('reason')
    return ended + (' (%s)' % reason if reason and reason not in ('exited', NOT_STARTED) else '')


def job_state(status, result, tasks, failed_tasks, answered):
    """The job's state from the leader's status.json and result.json and every task's record.

    failed: a task ended badly; done: the leader's result is written; the leader's own state while a task of the job
    runs (starting, running, done); stopped: no task runs any more before the end; not started: no task ever ran.
    """
    if not answered:
        return NO_ANSWER
    if failed_tasks:
        return 'failed'
    if result is not None:
        return 'done'
    if not tasks or all(task.get('pid') is None for task in tasks):
        return NOT_STARTED
    said = (status or {}).get('state')
    if any(task.get('running') for task in tasks):
        return said or 'running'
    return said if said in ('done', 'failed') else 'stopped'


def restarts(summary, tasks):
    """The restarts the deploy recorded for this run (summary.json, written when the deploy ends), or None while a
    deploy that has not ended yet holds them."""
    if not summary:
        return None
    runs = set(str(task.get('started_at')) for task in tasks if task.get('started_at') is not None)
    if summary.get('leader_run') and runs and str(summary['leader_run']) not in runs:
        return None  # the summary of an earlier run of the job
    return len(summary.get('restarts') or [])


def cluster_status(cluster, now):
    """One cluster's entry of the report.

    cluster: {name, cloud, provider, region, source, ssh_config, nodes: [{name, state, address, size, price_per_hour,
    created_at, probe, unreachable}], summary}; probe is the node's training_status answer (None where it did not
    answer), price_per_hour the profile's price of the node (None: libcloud's list price of its size).
    """
    nodes, tasks, failed, answered = [], [], [], False
    status, result = None, None
    for node in cluster['nodes']:
        probe = node.get('probe') or None
        answered = answered or probe is not None
        # The profile's price (the plan's) over libcloud's list price, as the plan counts it.
        price = node.get('price_per_hour') or list_price(cluster.get('provider'), node.get('size'),
                                                         cluster.get('region'))
        nodes.append(dict(name=node['name'], state=node.get('state'), address=node.get('address'),
                          size=node.get('size'), price_per_hour=price, reachable=probe is not None,
                          error=node.get('unreachable'),
                          tasks=[task['name'] for task in (probe or {}).get('tasks') or []]))
        if probe is None:
            continue
        for task in probe.get('tasks') or []:
            tasks.append(dict(name=task['name'], host=node['name'], state=_task_state(task),
                              running=bool(task.get('running')), pid=task.get('pid'),
                              returncode=task.get('returncode'), started_at=task.get('started_at'),
                              finished_at=task.get('finished_at')))
        failed += probe.get('failed_tasks') or []
        # The leader's host has its status.json: the newest one found is the job's.
        seen = probe.get('status')
        if seen and (status is None or (seen.get('updated_at') or 0) > (status.get('updated_at') or 0)):
            status = seen
        result = probe.get('result') if probe.get('result') is not None else result

    status = status or {}
    state = job_state(status, result, tasks, failed, answered)
    starts = [node['created_at'] for node in cluster['nodes'] if node.get('created_at')]
    # Nodes of the cloud: since the first was made. This machine (cloud=local): since the job's tasks started.
    uptime_from = 'nodes' if starts else 'job'
    if not starts:
        starts = [task['started_at'] for task in tasks if task['started_at']]
    up_since = min(starts) if starts else None
    uptime = round(max(0.0, now - up_since), 1) if up_since else None
    sized = [node for node in nodes if node['size']]
    cost = cluster_cost([dict(role=node['name'], count=1, size=node['size'], price=node['price_per_hour'],
                              spot=False) for node in sized])
    cost = dict(per_hour=cost['per_hour'], unpriced=cost['unpriced'],
                so_far=round(cost['per_hour'] * (uptime or 0) / 3600.0, 4),
                summary=cost['summary'] if sized else 'no cost: the nodes are this machine')
    return dict(
        name=cluster['name'], cloud=cluster.get('cloud'), local_state=True, source=cluster.get('source'),
        ssh_config=cluster.get('ssh_config'),
        nodes=nodes, tasks=sorted(tasks, key=lambda task: task['name']), uptime_seconds=uptime,
        uptime_from=uptime_from if uptime is not None else None, cost=cost,
        job=dict(state=state, step=status.get('step'), target_steps=status.get('target_steps'),
                 loss=status.get('loss'), examples_per_sec=status.get('examples_per_sec'),
                 eta_seconds=status.get('eta_seconds') if state in ('starting', 'running') else None,
                 failed_tasks=sorted(set(failed)), restarts=restarts(cluster.get('summary'), tasks),
                 updated_at=status.get('updated_at')),
    )


def cloud_only(audit, known):
    """The clusters the cloud's audit found that this controller holds no state of: [{name, standing, nodes}]."""
    found = {}
    for resource in audit.get('resources') or []:
        name = resource.get('cluster')
        if not name or name in known:
            continue
        entry = found.setdefault(name, dict(name=name, standing=resource.get('standing'), nodes=0))
        entry['nodes'] += resource.get('kind') == 'node'
    return [found[name] for name in sorted(found)]


# A node the cloud's listing shows that the cluster's inventory source leaves out: it lists running nodes only.
NOT_RUNNING = 'not running'


def with_stopped_nodes(cluster, audit):
    """The cluster with the nodes of it that the audit found and its inventory did not (powered off by the idle
    guard, stopped, or on their way up or out), as nodes that do not answer."""
    listed = set(node['name'] for node in cluster['nodes'])
    more = sorted(set(resource.get('name') for resource in (audit or {}).get('resources') or []
                      if resource.get('kind') == 'node' and resource.get('cluster') == cluster['name']
                      and resource.get('name') and resource.get('name') not in listed))
    return dict(cluster, nodes=cluster['nodes'] + [
        dict(name=name, state=NOT_RUNNING, address=None, size=None, created_at=None, probe=None,
             unreachable='the cloud lists it, not running') for name in more])


def report(clusters, now, cloud=None, audit=None):
    """The whole report (status.json's content when one cluster is asked for, else every cluster's)."""
    entries = [cluster_status(with_stopped_nodes(cluster, audit), now) for cluster in clusters]
    known = set(entry['name'] for entry in entries)
    return dict(schema_version=SCHEMA_VERSION, generated_at=round(now, 3), cloud=cloud, clusters=entries,
                cloud_only=cloud_only(audit or {}, known) if audit is not None else [])


def _job_line(job):
    parts = ['job ' + job['state']]
    if job['step'] is not None:
        target = job['target_steps'] or 0
        share = ' (%d%%)' % (100.0 * job['step'] / target) if target else ''
        parts.append('step %s/%s%s' % (job['step'], target, share))
    if job['examples_per_sec']:
        parts.append('%.0f examples/s' % job['examples_per_sec'])
    if job['eta_seconds'] is not None:
        parts.append('ETA ' + format_duration(job['eta_seconds']))
    if job['failed_tasks']:
        parts.append('failed: ' + ', '.join(job['failed_tasks']))
    parts.append('restarts %s' % ('?' if job['restarts'] is None else job['restarts']))
    return ', '.join(parts)


def lines(status, detail=False):
    """The report as short lines for the user (detail: each TF task too)."""
    out = []
    for cluster in status['clusters']:
        up = format_duration(cluster['uptime_seconds']) if cluster['uptime_seconds'] is not None else '?'
        cost = cluster['cost']
        money = cost['summary']  # nodes without a size are this machine's
        if any(node['size'] for node in cluster['nodes']):
            unpriced = ', not counting ' + ', '.join(cost['unpriced']) if cost['unpriced'] else ''
            money = '$%.4g so far ($%.4g/h%s)' % (cost['so_far'], cost['per_hour'], unpriced)
        job = _job_line(cluster['job'])
        out.append('%s (cloud=%s): %s; up %s, %s' % (cluster['name'], cluster['cloud'], job, up, money))
        for node in cluster['nodes']:
            out.append('  %s %s %s%s' % (node['name'], node['state'] or '?', node['address'] or '-',
                                         ' (no answer: %s)' % node['error'] if not node['reachable'] else ''))
        if not cluster['nodes']:
            stopped = '' if status['cloud'] else ' (-e cloud=NAME also lists the stopped ones)'
            out.append('  no running node' + stopped)
        if cluster['ssh_config'] and cluster['nodes']:
            out.append('  ssh -F %s %s' % (cluster['ssh_config'], cluster['nodes'][0]['name']))
        if detail:
            for task in cluster['tasks']:
                out.append('    %s on %s: %s' % (task['name'], task['host'], task['state']))
    for cluster in status['cloud_only']:
        out.append('%s (cloud=%s): no local state here; %d node(s), %s' % (
            cluster['name'], status['cloud'], cluster['nodes'],
            'this controller\'s (an orphan: audit.yml -e remove_orphans=true removes it)'
            if cluster['standing'] in ('orphan', 'mine', 'unmarked') else cluster['standing'] or 'whose unknown'))
    return out or ['no tfdist cluster known here' + (' or on cloud=%s' % status['cloud'] if status['cloud'] else '')]
