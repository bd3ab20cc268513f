# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

"""deploy.yml's restart policy (tf_restart=on_failure), decided on the controller after a watch that failed.

What the job lost (from each host's training_watch result), whether to restart it, how long to wait first, and the
record of each restart that summary.json keeps (`restarts`). playbooks/tasks/restart.yml keeps only the order of
things (decide, wait, replace, install, relaunch, watch, record) and asks these through the filters of
plugins/filter/restart.py.

A restart record: restart (its number), at (Unix time the loss was seen), losses (see losses()), step and
target_steps (the leader's progress then), progressed (the lost run had taken a step since its launch),
backoff_seconds (the wait before the restart); once the job is relaunched, replaced (the nodes created or started
again), resumed_from (the checkpoint's step), steps_lost and finished_already (the job had reached its last step, so
nothing was relaunched).

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

# Kubernetes' CrashLoopBackOff: 10 s, doubled for each further failure in a row, at most 5 minutes.
FIRST_BACKOFF_SECONDS = 10
MAX_BACKOFF_SECONDS = 300


def losses(watch_results):
    """The TF tasks a job lost, one entry per task, sorted by task, from the `losses` of its hosts' watch results.

    Each entry has task, host, why, node_gone, returncode (None when no exit was seen) and error (the exception line
    of its log, or its last line). A task can be seen twice: by its own host's watch and, as "stopped answering", by
    the leader's host. The entry that knows more wins: a node that is gone, then an exit code.
    """
    found = {}
    for result in watch_results or []:
        for entry in (result or {}).get('losses') or []:
            known = found.get(entry['task'])
            if known is None or _knows(entry) > _knows(known):
                found[entry['task']] = entry
    return [found[name] for name in sorted(found)]


def _knows(loss):
    return (bool(loss.get('node_gone')), loss.get('returncode') is not None)


def failures(lost):
    """How the job's processes failed: a set of (task, exit code, error line), one for each lost task whose process
    exited. A node that is gone, or a task seen only as not answering, tells nothing about the job's code."""
    return set((loss['task'], loss['returncode'], loss.get('error') or '')
               for loss in lost or [] if loss.get('returncode') is not None and not loss.get('node_gone'))


def repeated_failures(previous, lost, progressed):
    """The failures of this launch that the launch before ended with too, sorted, when this launch never took a step:
    a job that fails the same way before its first new step fails so on every launch.

    Any one task failing the same way is enough: which of the job's other tasks its watch saw fail too depends on
    when it looked (the first failure stops the job).
    """
    if progressed or not previous:
        return []
    return sorted(failures(lost) & failures(previous.get('losses')))


def describe_failures(found):
    """'chief-0, worker-0: exit 1, "ModuleNotFoundError: No module named 'foo'"; ps-0: signal 9' for the failures
    (task, exit code, error line); tasks that failed alike are named together."""
    alike = {}
    for task, returncode, error in sorted(found):
        alike.setdefault((returncode, error), []).append(task)
    parts = []
    for (returncode, error), tasks in alike.items():
        how = 'exit %s' % returncode if returncode >= 0 else 'signal %s' % -returncode
        parts.append('%s: %s%s' % (', '.join(tasks), how, ', "%s"' % error if error else ''))
    return '; '.join(parts)


def backoff_seconds(restarts, progressed):
    """Seconds to wait before the next restart, CrashLoopBackOff's way: none after a run that trained, else 10 s,
    doubled for each loss in a row before it whose run took no step either, at most 5 minutes.

    A run that took steps is a restart that helped (Kubernetes forgets its backoff once a container ran 10 minutes):
    its loss is a one-off, such as a spot node taken back, and the idle cluster is paid for while it waits. A run
    that never trained is failing at its start; the wait gives what it needs (a peer, a port, the cloud's API) time.
    """
    if progressed:
        return 0
    in_a_row = 0
    for record in reversed(restarts or []):
        if record.get('progressed'):
            break
        in_a_row += 1
    return min(FIRST_BACKOFF_SECONDS * 2 ** in_a_row, MAX_BACKOFF_SECONDS)


def restart_line(record):
    """One line about a restart: what was lost, and at which step."""
    # Tasks lost the same way share one reason: a script that fails at import fails so on every task.
    reasons = {}
    for loss in record.get('losses') or []:
        reasons.setdefault(loss['why'], []).append('%s on %s' % (loss['task'], loss['host']))
    lost = ', '.join('%s (%s)' % (', '.join(tasks), why) for why, tasks in reasons.items())
    line = 'lost %s' % (lost or 'nothing')
    if record.get('step') is not None:
        line += ' at step %s' % record['step']
        if record.get('target_steps'):
            line += '/%s' % record['target_steps']
    if record.get('finished_already'):
        line += '; the job had reached its last step by then, nothing was relaunched'
    return line


def decide(watch_results, restarts, leader_result, max_restarts, at):
    """What the restart policy does after a watch that failed, given the restarts so far (their records), the leader's
    host's watch result (its status and whether its run progressed), tf_max_restarts and the time.

    A dict: restart (the record of this restart, see the module's doc), give_up (why the deploy stops here, '' when
    it restarts) and line (what to show when it restarts).
    """
    restarts, max_restarts = list(restarts or []), int(max_restarts)
    leader_result = leader_result or {}
    status = leader_result.get('status') or {}
    lost = losses(watch_results)
    progressed = bool(leader_result.get('progressed'))
    record = {'restart': len(restarts) + 1, 'at': at, 'losses': lost, 'step': status.get('step'),
              'target_steps': status.get('target_steps'), 'progressed': progressed,
              'backoff_seconds': backoff_seconds(restarts, progressed)}
    give_up = _give_up(watch_results, restarts, record, max_restarts)
    line = 'restart %s of at most %s (%s): ' % (record['restart'], max_restarts, restart_line(record))
    if record['backoff_seconds']:
        line += ('waiting %s s (the job took no step since its launch), then replacing what is gone and resuming '
                 'from the latest checkpoint' % record['backoff_seconds'])
    else:
        line += 'replacing what is gone, then resuming from the latest checkpoint'
    return {'restart': record, 'give_up': give_up, 'line': line}


def _give_up(watch_results, restarts, record, max_restarts):
    """Why the deploy stops instead of restarting, or ''."""
    if not record['losses']:
        # A deadline reached or a state that cannot be read: nothing that replacing and relaunching mends.
        why = [result.get('msg') or '' for result in watch_results or []
               if (result or {}).get('failed') and not result.get('stopped_by')]
        return 'the job failed and tf_restart=on_failure has nothing to replace: %s' % '; '.join(why)
    repeated = repeated_failures(restarts[-1] if restarts else None, record['losses'], record['progressed'])
    if repeated:
        return 'the job fails the same way on every launch (%s); not restarting' % describe_failures(repeated)
    if len(restarts) >= max_restarts:
        return ('tf_restart=on_failure gave up after %s restart(s) (tf_max_restarts=%s). What the job lost: %s. '
                'Nothing of the job is running; a re-run of deploy resumes from the latest checkpoint.'
                % (len(restarts), max_restarts, '; '.join(restart_line(r) for r in restarts + [record])))
    return ''


def resumed(record, replaced, resumed_from, finished_already):
    """The restart's record once the job was relaunched: the nodes replaced, the step it resumed from, the steps lost
    (those past the checkpoint), and whether the job had already finished (then nothing was relaunched)."""
    steps_lost = None
    if resumed_from is not None:
        steps_lost = max((record.get('step') or 0) - resumed_from, 0)
    return dict(record, replaced=list(replaced or []), resumed_from=resumed_from, steps_lost=steps_lost,
                finished_already=bool(finished_already))
