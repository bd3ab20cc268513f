# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

"""Sizes chosen from constraints: the cheapest size of a cloud with at least the vCPUs, memory and GPUs asked for.

Constraints are a dict {cpus, memory, gpus} of least values, as a RADL system writes them (`cpu.count >= 4 and
memory.size >= 16g and gpu.count >= 1`) or a cloud profile's role does (`cpus: 4, memory: 16g, gpus: 1`).
What a size has is read by its cloud's `size_facts` (in _cloud_<name>.py), since every libcloud driver keeps
vCPUs and GPUs under other keys of NodeSize.extra; memory is NodeSize.ram (MiB) everywhere.

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import re
from collections import namedtuple

from ansible_collections.tfdist.cluster.plugins.module_utils._provider import TfdistCloudError

# What one size offers; None where its cloud does not say. arch: 'x86_64', 'arm64' or None.
SizeFacts = namedtuple('SizeFacts', ['cpus', 'gpus', 'arch'])

# Images are x86_64 unless the cloud says otherwise: an arm64 size would not boot them.
DEFAULT_ARCH = 'x86_64'

# RADL's memory units (radl.radl.UnitToValue): k, m, g, t are powers of 1000, ki, mi, gi, ti of 1024; b optional.
_UNITS = {'': 1, 'k': 1000, 'm': 1000 ** 2, 'g': 1000 ** 3, 't': 1000 ** 4,
          'ki': 1024, 'mi': 1024 ** 2, 'gi': 1024 ** 3, 'ti': 1024 ** 4}
_MEMORY_RE = re.compile(r'^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?)?(b)?\s*$', re.IGNORECASE)
MIB = 1024 ** 2

# (key, RADL feature) in the order the constraints are written.
FEATURES = (('cpus', 'cpu.count'), ('memory', 'memory.size'), ('gpus', 'gpu.count'))


def memory_mib(text, field='memory'):
    """MiB (a float) of a memory size as RADL writes it: 16g, 16gi, 512m, 2048mb; a unit is required."""
    match = _MEMORY_RE.match(str(text))
    if not match or not (match.group(2) or match.group(3)):
        raise TfdistCloudError('%s: %r is no memory size; write a number and a unit, for example 16g or 512m '
                               '(k, m, g, t are powers of 1000, ki, mi, gi, ti of 1024, as in RADL)' % (field, text))
    return float(match.group(1)) * _UNITS[(match.group(2) or '').lower()] / MIB


def check_constraints(constraints, field='constraints'):
    """{cpus, memory, gpus} with unset ones None; TfdistCloudError names the bad field. {} or None: no constraints."""
    constraints = dict(constraints or {})
    unknown = sorted(set(constraints) - set(key for key, dummy in FEATURES) - {'source'})
    if unknown:
        raise TfdistCloudError('%s: unknown key(s) %s; use cpus, memory and gpus' % (field, ', '.join(unknown)))
    checked = {}
    for key in ('cpus', 'gpus'):
        value = constraints.get(key)
        if value in (None, ''):
            checked[key] = None
            continue
        if isinstance(value, bool) or not str(value).isdigit():
            raise TfdistCloudError('%s.%s: must be a whole number, 0 or more, got %r' % (field, key, value))
        checked[key] = int(value)
    memory = constraints.get('memory')
    if memory in (None, ''):
        checked['memory'] = None
    else:
        memory_mib(memory, field + '.memory')
        checked['memory'] = str(memory).strip().lower()
    return checked


def has_constraints(constraints):
    return any(value for key, value in (constraints or {}).items() if key != 'source')


def constraints_text(constraints):
    """The constraints as RADL writes them: 'cpu.count >= 4 and memory.size >= 16g'."""
    return ' and '.join('%s >= %s' % (feature, constraints[key])
                        for key, feature in FEATURES if constraints.get(key))


def _gib(ram):
    return '%g GiB' % round(ram / 1024.0, 2)


def describe(size, facts):
    """'g4dn.xlarge: 4 vCPUs, 16 GiB, 1 GPU, $0.526/h' (unknown values say so)."""
    parts = ['%s vCPU%s' % (facts.cpus, '' if facts.cpus == 1 else 's') if facts.cpus is not None else 'vCPUs unknown',
             _gib(size.ram) if size.ram else 'memory unknown',
             '%s GPU%s' % (facts.gpus, '' if facts.gpus == 1 else 's') if facts.gpus is not None else 'GPUs unknown',
             '$%g/h' % size.price if priced(size) else 'price unknown']
    if facts.arch and facts.arch != DEFAULT_ARCH:
        parts.append(facts.arch)
    return '%s: %s' % (size.name or size.id, ', '.join(parts))


def priced(size):
    """A price libcloud knows: drivers without pricing data give None or 0 (EC2 for some types, Azure always)."""
    return isinstance(size.price, (int, float)) and size.price > 0


def hourly_price(size):
    """The size's price per node and hour as libcloud knows it (its on-demand list price), or None."""
    return float(size.price) if size is not None and priced(size) else None


# Where a role's price comes from: libcloud's price list (its bundled one, or the one the user fetched with
# libcloud.pricing.download_pricing_file), or the role's own price_per_hour (the cloud profile's), which wins.
FROM_LIST = 'list'
FROM_PROFILE = 'profile'


def role_price(size, price_per_hour=None, field='price_per_hour'):
    """(price of one node an hour, where it comes from): the role's price_per_hour over libcloud's list price of its
    size; (None, None) when neither knows one. TfdistCloudError naming `field` for a price_per_hour that is no
    positive number."""
    if price_per_hour not in (None, ''):
        try:
            price = float(price_per_hour)
        except (TypeError, ValueError):
            price = 0
        if isinstance(price_per_hour, bool) or not price > 0:
            raise TfdistCloudError('%s: must be a price in dollars an hour, more than 0, got %r' % (field, price_per_hour))
        return price, FROM_PROFILE
    price = hourly_price(size)
    return (price, FROM_LIST) if price is not None else (None, None)


def price_list():
    """The price list libcloud reads: its own bundled one ('' here), or the path of the one the user fetched with
    libcloud.pricing.download_pricing_file(), which libcloud reads instead from ~/.libcloud/pricing.json."""
    try:
        from libcloud import pricing
        path = pricing.get_pricing_file_path()
    except Exception:  # no libcloud: no list at all
        return ''
    return '' if path == pricing.DEFAULT_PRICING_FILE_PATH else path


def cluster_cost(roles):
    """What a cluster costs an hour, from [{role, count, size, price, spot, price_source}] (price per node, None:
    unknown; price_source FROM_LIST, the default, or FROM_PROFILE).

    {per_hour, spot_per_hour, nodes, spot_nodes, unpriced, summary}: per_hour sums the known prices (on-demand
    prices: spot capacity is billed less, at the cloud's current spot price), spot_per_hour is the part of it on spot
    nodes, unpriced the sizes without a known price; summary is the plan's line.
    """
    roles = [entry for entry in roles if entry['count'] > 0]
    per_hour = sum(entry['count'] * entry['price'] for entry in roles if entry['price'] is not None)
    spot_per_hour = sum(entry['count'] * entry['price'] for entry in roles if entry['price'] is not None and entry['spot'])
    nodes = sum(entry['count'] for entry in roles)
    spot_nodes = sum(entry['count'] for entry in roles if entry['spot'])
    unpriced = sorted(set(str(entry['size']) for entry in roles if entry['price'] is None))
    from_profile = [entry['role'] for entry in roles
                    if entry['price'] is not None and entry.get('price_source') == FROM_PROFILE]
    summary = 'cost: $%.4g/h for %d node%s at list prices' % (per_hour, nodes, '' if nodes == 1 else 's')
    if price_list():
        summary += ' of %s' % price_list()
    if from_profile:
        summary += ', %s nodes priced by the profile' % ', '.join(from_profile)
    if unpriced:
        summary += ', not counting %s (no price known)' % ', '.join(unpriced)
    if spot_nodes:
        share = ' (%d%% of the price)' % round(100.0 * spot_per_hour / per_hour) if per_hour else ''
        summary += '; spot: %d of %d nodes%s, billed at the lower spot price' % (spot_nodes, nodes, share)
    return dict(per_hour=round(per_hour, 6), spot_per_hour=round(spot_per_hour, 6), nodes=nodes,
                spot_nodes=spot_nodes, unpriced=unpriced, summary=summary)


def budget_check(cost, budget, hours, budget_field='budget', hours_field='deadline', hours_text=None):
    """(error, warning) of a plan against a budget in dollars per run, each '' when there is none to give.

    `cost` is cluster_cost()'s, `hours` how long the job may run (None: no limit). Error: the plan's price over the
    run passes the budget (both figures named). Warning: what cannot be checked (no limit, or sizes of no known
    price); the deploy goes on then, and the watch stops the job once its known price reaches the budget.
    """
    if not budget:
        return '', ''
    per_hour = cost['per_hour']
    unpriced = ' (not counting %s: no price known)' % ', '.join(cost['unpriced']) if cost['unpriced'] else ''
    if hours and per_hour * hours > budget:
        return ('%s: the plan costs $%.4g/h%s; with %s=%s that is $%.2f, over the budget of $%.2f'
                % (budget_field, per_hour, unpriced, hours_field, hours_text or '%gh' % hours, per_hour * hours,
                   budget)), ''
    if cost['unpriced']:
        return '', ('%s: cannot check the plan against the budget of $%.2f: no price is known for %s (give the role '
                    'a price_per_hour in the cloud profile)' % (budget_field, budget, ', '.join(cost['unpriced'])))
    if not hours:
        return '', ('%s: the plan costs $%.4g/h; without %s the run has no end to price it by: the job is stopped '
                    'once it has cost the budget of $%.2f' % (budget_field, per_hour, hours_field, budget))
    return '', ''


def budget_seconds(budget, per_hour):
    """How long a job may run before its price reaches the budget (seconds), None without a budget or a price."""
    if not budget or not per_hour:
        return None
    return 3600.0 * budget / per_hour


def _rank(pair):
    size, facts = pair
    return (not priced(size), size.price if priced(size) else 0, size.ram or 0, facts.cpus or 0, str(size.id))


def _meets(size, facts, key, least):
    if not least:
        return True
    have = {'cpus': facts.cpus, 'gpus': facts.gpus, 'memory': size.ram}[key]
    return have is not None and have >= least


def cheapest_size(sizes, constraints, size_facts, cloud, field, arch=None):
    """(size, reason): the cheapest of `sizes` (a driver's list_sizes()) meeting every constraint.

    `size_facts(size)` is the cloud's reading of a size (a SizeFacts). Sizes of another architecture than the
    image's (`arch`, default x86_64) are left out. Sizes with no known price rank after the priced ones, then
    by memory and vCPUs. TfdistCloudError starting with `field` when no size fits, naming the constraint that
    the fewest sizes meet.
    """
    arch = arch or DEFAULT_ARCH
    wanted = dict((key, constraints.get(key)) for key, dummy in FEATURES if constraints.get(key))
    least = dict(wanted)
    if 'memory' in least:
        least['memory'] = memory_mib(least['memory'], field + '.memory')
    candidates = [(size, size_facts(size)) for size in sizes]
    candidates = [(size, facts) for size, facts in candidates if facts.arch in (None, arch)]
    fitting = [(size, facts) for size, facts in candidates
               if all(_meets(size, facts, key, value) for key, value in least.items())]
    text = constraints_text(wanted)
    if not fitting:
        raise TfdistCloudError('%s: no %s size meets %s%s' % (field, cloud, text, _why_none(candidates, least, wanted, arch, cloud)))
    fitting.sort(key=_rank)
    size, facts = fitting[0]
    how = 'the cheapest' if priced(size) else 'the smallest (no price known)'
    reason = '%s: %s of %d %s size%s with %s' % (describe(size, facts), how, len(fitting), arch,
                                                 '' if len(fitting) == 1 else 's', text)
    return size, reason


def _why_none(candidates, least, wanted, arch, cloud):
    """Which constraint nothing (or the fewest sizes) met, and the most any size offers."""
    if not candidates:
        return ': the cloud lists no %s sizes' % arch
    counts = []
    for key, value in least.items():
        meeting = [pair for pair in candidates if _meets(pair[0], pair[1], key, value)]
        counts.append((len(meeting), key))
    fewest, key = min(counts)
    feature = dict(FEATURES)[key]
    if fewest:
        return (': %d of the %d %s sizes meet %s >= %s, but none of them meets all the constraints'
                % (fewest, len(candidates), arch, feature, wanted[key]))
    known = [pair for pair in candidates if _have(pair, key) is not None]
    if not known:
        return ': the %s size list does not say how many %s a size has; give the size (instance_type) instead' % (
            cloud, {'cpus': 'vCPUs', 'gpus': 'GPUs', 'memory': 'MiB'}[key])
    best = max(known, key=lambda pair: _have(pair, key))
    most = _have(best, key)
    shown = _gib(most) if key == 'memory' else str(most)
    unknown = len(candidates) - len(known)
    return ': %s >= %s is more than any of the %d %s sizes has (the most: %s, %s)%s' % (
        feature, wanted[key], len(known), arch, shown,
        best[0].name or best[0].id, '; %d more do not say' % unknown if unknown else '')


def _have(pair, key):
    size, facts = pair
    return {'cpus': facts.cpus, 'gpus': facts.gpus, 'memory': size.ram}[key]


def generic_facts(size):
    """vCPUs and GPUs of a size whose cloud has no reading of its own: the usual attribute and extra keys."""
    extra = size.extra or {}
    cpus = getattr(size, 'vcpus', None)
    for key in ('vcpus', 'vcpu', 'cpus', 'cpu', 'cores'):
        if cpus is None:
            cpus = extra.get(key)
    gpus = extra.get('gpus', extra.get('gpu'))
    return SizeFacts(_int(cpus), _int(gpus), None)


def _int(value):
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return None


to_int = _int
