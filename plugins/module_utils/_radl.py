# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

"""Cluster shapes in RADL, the Infrastructure Manager's language: read them, write them back.

A cluster shape is a plain dict (see parse_cluster) that the lookup `tfdist.cluster.radl` returns
and the filter `tfdist.cluster.to_radl` turns back into RADL text.
Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import math
import re
import traceback
from collections.abc import Mapping

from ansible_collections.tfdist.cluster.plugins.module_utils._clouds import PROVIDERS
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._cluster import TASK_TYPES, count_error

try:
    from radl import radl_parse
    from radl.radl import RADLParseException, outport
except ImportError:
    HAS_RADL = False
    RADL_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_RADL = True
    RADL_IMPORT_ERROR = None

# A system named otherwise says its role with this feature.
ROLE_FEATURE = 'tfdist.role'

# How an IM image URL reads on each cloud (its file's `radl`), by the URL's scheme and by the cloud it deploys to.
URL_FORMS = dict((provider.radl.scheme, provider.radl) for provider in PROVIDERS.values() if provider.radl)
CLOUD_FORMS = dict((form.cloud, form) for form in URL_FORMS.values())
CLOUDS = tuple(CLOUD_FORMS)

DEFAULT_PORTS = (22,)

# What the RADL written back asks the IM to install on every system, and how.
COLLECTION = 'tfdist.cluster'
APPLICATION = 'ansible.collections.' + COLLECTION
# The IM's own RADL check takes a version of dotted numbers only (radl.radl.is_version).
VERSION_RE = re.compile(r'^[0-9]+(\.[0-9]+)*$')
# configure name -> (step, the roles it runs on, when the shape asks for it), in contextualization order.
CONFIGURE_STEPS = (('tensorflow', 1), ('hdfs', 2), ('training', 3))


class TfdistRadlError(Exception):
    """A RADL file the user can fix; the message starts with the file and says where."""


def load_cluster(path):
    """The cluster shape that the RADL file at `path` describes."""
    try:
        with open(path, encoding='utf-8-sig') as f:
            text = f.read()
    except FileNotFoundError:
        raise TfdistRadlError('radl: %s: no such file' % path) from None
    except UnicodeDecodeError as e:
        raise TfdistRadlError('radl: %s: not UTF-8 text (%s)' % (path, e.reason)) from None
    except OSError as e:
        raise TfdistRadlError('radl: %s: cannot read it: %s' % (path, e.strerror or e)) from None
    return parse_cluster(text, path)


def parse_cluster(text, source=None):
    """The cluster shape that RADL `text` describes; `source` (the file) starts every error message.

    Returns {source, chief, workers, ps, evaluators, nodes: {role: {size, image, gpus}}, cloud, region, endpoint,
    zones, ports}; chief is 1, or 0 for a RADL without a chief system (worker 0 leads the cluster). A size is a list
    when instance_type lists sizes in order of preference; zones are the availability_zone list, [] without one.
    """
    # The lexer knows no carriage return: it would drop it, or reject it once _strict() is on.
    text = text.replace('\r\n', '\n')
    where = _Where(source, text)
    doc = _parse(text, where)
    _check_radl(doc, where)
    roles = _roles(doc, where)
    counts = _counts(doc, roles, where)
    cluster = {
        'source': source,
        'chief': counts['chief'],
        'workers': counts['worker'],
        'ps': counts['ps'],
        'evaluators': counts['evaluator'],
        'nodes': {},
        'cloud': None,
        'region': None,
        'endpoint': None,
        'zones': [],
        'ports': _ports(doc),
    }
    placed = []  # (system, cloud, region, endpoint) of the systems with an image URL
    zoned = []  # (system, zones) of the systems with an availability_zone
    for role in TASK_TYPES:
        system = roles.get(role)
        if system is None or counts[role] == 0:
            continue
        node, place = _node(system, where)
        cluster['nodes'][role] = node
        if place:
            placed.append((system,) + place)
        zones = _names(system, 'availability_zone', 'zone', where)
        if zones:
            zoned.append((system, zones))
    cluster.update(_one_place(placed, where))
    cluster['zones'] = _one_zone_list(zoned, where)
    return cluster


def dump_cluster(cluster, collection_version=None):
    """RADL text for a cluster shape, as parse_cluster returns it; parses back to the same shape.

    Besides the systems and deploy lines, the text asks the Infrastructure Manager to make the VMs a TF cluster:
    every system needs the application ansible.collections.tfdist.cluster (`collection_version` when given, dotted
    numbers), and `configure` recipes run the tfdist roles by their full names, in `contextualize` steps: tensorflow
    on every system, then hdfs on the chief and workers when the shape says `hdfs: true`, then training everywhere.
    The IM names its inventory groups after the systems, which are named after the TF roles.
    """
    shape = _checked_shape(cluster)
    version = _collection_version(collection_version)
    counts = {'chief': shape['chief'], 'worker': shape['workers'], 'ps': shape['ps'],
              'evaluator': shape['evaluators']}
    summary = ', '.join('%d %s%s' % (n, role, 's' if n > 1 and role != 'ps' else '')
                        for role, n in counts.items() if n)
    if not shape['chief']:
        summary += ' (no chief: worker 0 leads)'
    lines = ['# tfdist cluster: %s.' % summary, '# Written by tfdist.cluster.to_radl.']
    if shape['source']:
        lines.append('# Based on %s.' % _one_line(shape['source']))
    public = ["outbound = 'yes'"]
    if shape['ports']:
        public.append('outports = %s' % _quote(','.join(_port_spec(p) for p in shape['ports'])))
    lines += ['network public (%s)' % ' and '.join(public), 'network private ()', '']
    # The leader (the chief, or the workers when there is none) is the SSH entry point; every TF task talks on the
    # private network.
    entry = 'chief' if counts['chief'] else 'worker'
    application = 'name = %s' % _quote(APPLICATION)
    if version:
        application += ' and version = %s' % _quote(version)
    roles = [role for role in TASK_TYPES if counts[role]]
    for role in roles:
        node = shape['nodes'][role]
        features = []
        if node['size']:
            features.append('instance_type = %s' % _quote(node['size']))
        if node['image']:
            url = image_url(shape['cloud'], node['image'], shape['region'], shape['endpoint'])
            features.append('disk.0.image.url = %s' % _quote(url))
        if node.get('spot'):
            features.append("spot = 'yes'")
        # A size chosen from constraints is written as the constraints, so the IM chooses on its cloud too.
        if node.get('cpus'):
            features.append('cpu.count >= %d' % node['cpus'])
        if node.get('memory'):
            features.append('memory.size >= %s' % node['memory'])
        if node['gpus']:
            features.append(('gpu.count >= %d' if node.get('cpus') or node.get('memory') or not node['size']
                             else 'gpu.count = %d') % node['gpus'])
        networks = ('public', 'private') if role == entry else ('private',)
        features += ["net_interface.%d.connection = '%s'" % (i, net) for i, net in enumerate(networks)]
        features.append('disk.0.applications contains (%s)' % application)
        lines += ['system %s (' % role, '    ' + ' and\n    '.join(features), ')', '']
    steps = _configure_steps(shape, roles)
    for name, recipe in _recipes(shape, counts).items():
        if any(step[1] == name for step in steps):
            lines += ['configure %s (' % name, '@begin', recipe.rstrip('\n'), '@end', ')', '']
    lines += ['contextualize (']
    lines += ['    system %s configure %s step %d' % step for step in steps]
    lines += [')', '']
    lines += ['deploy %s %d' % (role, counts[role]) for role in roles]
    return '\n'.join(lines) + '\n'


def _collection_version(version):
    if version is None or version == '':
        return None
    if not isinstance(version, str) or not VERSION_RE.match(version):
        raise TfdistRadlError("to_radl: collection_version %r: the IM's RADL takes a version of dotted numbers "
                              "(such as 1.2.0)" % (version,))
    return version


def _configure_steps(shape, roles):
    """(system, configure, step) in the order the IM runs them: by step, then the systems in role order."""
    where = {'tensorflow': roles, 'training': roles,
             'hdfs': [r for r in roles if r in ('chief', 'worker')] if shape['hdfs'] else []}
    return [(role, name, step) for name, step in CONFIGURE_STEPS for role in where[name]]


def _recipes(shape, counts):
    """configure name -> recipe: a YAML list of plays without `hosts:`, which the IM adds (IM_HOST)."""
    strategy = 'parameter_server' if counts['ps'] else 'multi_worker_mirrored'
    if counts['chief']:
        namenode = ['        hdfs_namenode_group: chief']
    else:
        namenode = ['        hdfs_namenode_host: "{{ groups[\'worker\'][0] }}"  # worker 0 leads without a chief']
    return {
        'tensorflow': '\n'.join([
            '---',
            '- name: Install TensorFlow',
            '  gather_facts: true',
            '  roles:',
            '    - role: %s.tensorflow' % COLLECTION,
        ]),
        'hdfs': '\n'.join([
            '---',
            '- name: Run HDFS, the NameNode on the leader and a DataNode on each worker',
            '  gather_facts: true',
            '  roles:',
            '    - role: %s.hdfs' % COLLECTION,
            '      vars:',
        ] + namenode + [
            '        hdfs_datanode_group: worker',
        ]),
        'training': '\n'.join([
            '---',
            '- name: Lay down and launch the training job',
            '  gather_facts: true',
            '  roles:',
            '    - role: %s.training' % COLLECTION,
            '      vars:',
            '        training_strategy: %s' % strategy,
        ]),
    }


def image_url(cloud, image, region=None, endpoint=None):
    """The IM image URL of `image` on `cloud` (the inverse of split_image_url)."""
    form = CLOUD_FORMS[cloud]
    place = '' if form.place is None else (endpoint if form.place == 'endpoint' else region) + '/'
    return '%s://%s%s' % (form.scheme, place, '/'.join(image.split(':')) if form.parts > 1 else image)


def split_image_url(url):
    """(cloud, image, region, endpoint) of an IM image URL; ValueError says what is wrong with it."""
    scheme, sep, rest = url.partition('://')
    form = URL_FORMS.get(scheme) if sep else None
    if form is None:
        known = ', '.join('%s://' % s for s in URL_FORMS)
        raise ValueError('image URL %r: unsupported scheme; known: %s' % (url, known))
    place = None
    if form.place is not None:
        place, dummy, rest = rest.partition('/')
    parts = rest.split('/') if form.parts > 1 else [rest]
    if place == '' or len(parts) != form.parts or not all(parts):
        raise ValueError('image URL %r: expected %s://%s' % (url, scheme, form.form))
    image = ':'.join(parts)
    if form.place == 'endpoint':
        return form.cloud, image, None, place
    return form.cloud, image, place, None


class _Where:
    """Prefixes messages with the source and a line number, and quotes source lines."""

    def __init__(self, source, text):
        self.source = source or '<radl text>'
        self.lines = text.split('\n')

    def error(self, msg, line=None):
        if line:
            return TfdistRadlError('%s: line %d: %s' % (self.source, line, msg))
        return TfdistRadlError('%s: %s' % (self.source, msg))

    def text(self, line):
        return self.lines[line - 1].strip() if line and line <= len(self.lines) else ''


def _parse(text, where):
    if not HAS_RADL:
        raise TfdistRadlError('%s: reading RADL needs the radl Python package (pip install radl)' % where.source)
    if not re.sub(r'#.*', '', text).strip():
        return radl_parse.RADL()  # the grammar wants one sentence at least; say what is missing later
    # RADLParser rather than parse_radl(): that one reads `text` as a file name when such a file exists.
    parser = radl_parse.RADLParser(lextab='radl')
    _strict(parser.lexer)
    try:
        doc = parser.parse(text + '\n')
    except RADLParseException as e:
        msg = _radl_message(e)
        token = re.match(r"Parse error in: LexToken\(\w+,(.*),\d+,\d+\)$", msg)
        if e.line is None and msg == 'Parse error in: None':
            raise where.error("unexpected end of file; is a ')' missing?", len(where.lines)) from None
        if token:
            msg = 'syntax error at %s' % token.group(1)
        if where.text(e.line):
            msg = '%s in: %s' % (msg, where.text(e.line))
        raise where.error(msg, e.line) from None
    except Exception as e:  # RADL.add() raises a bare Exception for a name defined twice, with no line
        line, msg = _duplicate(text)
        raise where.error(msg or str(e), line) from None
    return doc


def _strict(lexer):
    """Make the lexer fail on characters it does not know.

    By default it skips them without a word, so `deploy worker -1` deploys 1.
    """
    errorf = getattr(lexer, 'lexstateerrorf', None)
    if not isinstance(errorf, dict):  # another PLY: keep the radl package's own behaviour
        return

    def unexpected(tok):
        hint = ' (RADL strings take single quotes)' if tok.value[0] == '"' else ''
        raise RADLParseException('unexpected character %r%s' % (tok.value[0], hint), line=tok.lineno)

    for state in errorf:
        errorf[state] = unexpected
    lexer.lexerrorf = unexpected


def _duplicate(text):
    """(line, message) for the second definition of a system, network or configure name."""
    seen = {}
    for number, line in enumerate(text.split('\n'), 1):
        # `system X configure Y` lines of a contextualize block name systems, they do not define them.
        m = re.match(r'\s*(system|network|configure)\s+([A-Za-z_.][\w.-]*)(?![\w.-])(?!\s+configure\b)', line)
        if m:
            if m.groups() in seen:
                return number, '%s %s is already defined at line %d' % (m.group(1), m.group(2), seen[m.groups()])
            seen[m.groups()] = number
    return None, None


def _radl_message(e):
    # RADLParseException puts "Line N: " in front when it knows the line; we say it our way.
    msg = str(e)
    if e.line:
        msg = msg[len('Line %d: ' % e.line):] if msg.startswith('Line %d: ' % e.line) else msg
    return msg.rstrip('.')


def _check_radl(doc, where):
    """The radl package's own checks, with the element they concern in the message."""
    elements = [('network', n.id, n) for n in doc.networks] + [('system', s.name, s) for s in doc.systems]
    elements += [('configure', c.name, c) for c in doc.configures] + [('ansible', a.id, a) for a in doc.ansible_hosts]
    for kind, name, element in elements:
        try:
            element.check(doc)
        except RADLParseException as e:
            raise where.error('%s %r: %s' % (kind, name, _radl_message(e)), e.line or element.line) from None
    _check_deploys(doc, where)
    try:
        doc.check()
    except RADLParseException as e:
        raise where.error(_radl_message(e), e.line) from None


def _check_deploys(doc, where):
    names = [s.name for s in doc.systems]
    first = {}
    for d in doc.deploys:
        said = 'deploy %s %s' % (d.id, d.vm_number)
        if d.id not in names:
            systems = ', '.join(sorted(names)) or 'none'
            raise where.error('deploy %r: no system named %r (systems: %s)' % (d.id, d.id, systems), d.line)
        if not isinstance(d.vm_number, int) or d.vm_number < 0:
            raise where.error('%s: the count must be a whole number, 1 or more' % said, d.line)
        if d.vm_number == 0:
            # Leaving the line out is how a system stays undeployed; a 0 is more likely a slip.
            raise where.error('%s: a deploy line with no VMs; remove the line (the system is then not deployed) '
                              'or give a count of 1 or more' % said, d.line)
        if d.id in first:
            # IM would deploy the nodes of both lines; say so rather than pick one.
            raise where.error('%s: system %s is already deployed with %s at line %s; use one deploy line per system'
                              % (said, d.id, first[d.id].vm_number, first[d.id].line), d.line)
        first[d.id] = d


def _roles(doc, where):
    """role -> system, from the system names or their tfdist.role feature."""
    roles = {}
    for system in doc.systems:
        declared = system.getValue(ROLE_FEATURE)
        what = 'system %r' % system.name
        if declared is not None and declared not in TASK_TYPES:
            raise where.error('%s: %s %r is not a TF role; use chief, worker, ps or evaluator'
                              % (what, ROLE_FEATURE, declared), system.line)
        if system.name in TASK_TYPES and declared not in (None, system.name):
            raise where.error('%s: %s %r contradicts the system name' % (what, ROLE_FEATURE, declared), system.line)
        role = declared or system.name
        if role not in TASK_TYPES:
            raise where.error("%s: not a TF role; name systems chief, worker, ps or evaluator (or set %s = 'worker')"
                              % (what, ROLE_FEATURE), system.line)
        if role in roles:
            other = roles[role]
            raise where.error('%s: role %s is already taken by system %r (line %s); one system per role'
                              % (what, role, other.name, other.line), system.line)
        roles[role] = system
    return roles


def _counts(doc, roles, where):
    """role -> number of VMs. A chief system is one VM unless its deploy line says otherwise; no chief system, no chief."""
    deploys = {d.id: d for d in doc.deploys}
    systems = ', '.join(sorted(s.name for s in doc.systems)) or 'none'
    counts = {}
    for role, system in roles.items():
        d = deploys.get(system.name)
        # A system without a deploy line is not deployed, except the chief: the cluster has one anyway.
        counts[role] = d.vm_number if d else (1 if role == 'chief' else 0)
        if role == 'chief' and counts[role] > 1:
            raise where.error('deploy %s %d: a cluster has one chief, or none (leave the chief system out: '
                              'worker 0 leads then)' % (system.name, counts[role]), d.line)
    if counts.get('worker', 0) < 1:
        system = roles.get('worker')
        if system is None:
            needs = ('a cluster needs at least one worker' if 'chief' in roles
                     else 'a cluster without a chief needs at least one worker: worker 0 leads it')
            what = 'no worker system' if 'chief' in roles else 'no chief and no worker system'
            raise where.error('%s; %s (systems: %s)' % (what, needs, systems))
        raise where.error('system %r: no deploy line; a cluster needs at least one worker' % system.name,
                          system.line)
    counts = {role: counts.get(role, 0) for role in TASK_TYPES}
    problem = count_error(counts['chief'], counts['worker'], counts['ps'], counts['evaluator'], field_prefix='')
    if problem:  # the cluster model's own rule, should it ever be stricter than the checks above
        raise where.error(problem)
    return counts


def _node(system, where):
    """({size, image, gpus[, cpus, memory, system]}, (cloud, region, endpoint) or None) of a system.

    size is the instance_type: one size, or a list of sizes in order of preference (the next is taken when the cloud
    has no capacity of one in any zone).
    gpus is the least gpu.count (0 when unset); cpus (the least cpu.count) and memory (the least memory.size as
    RADL writes it, '16g') are there only when the system sets them and no instance_type, and system (its
    name) only when it names its role with tfdist.role. Without an instance_type, the cheapest size meeting gpus, cpus and memory is
    chosen at deploy time (libcloud_node's roles[].constraints).
    """
    what = 'system %r' % system.name
    size = _names(system, 'instance_type', 'size', where)
    node = {'size': size, 'image': None, 'gpus': _at_least(system, 'gpu.count', where)}
    # An instance_type wins over the constraints; they are checked all the same.
    cpus = _at_least(system, 'cpu.count', where)
    memory = _memory_at_least(system, where)
    if cpus and size is None:
        node['cpus'] = cpus
    if memory and size is None:
        node['memory'] = memory
    if system.getValue(ROLE_FEATURE) is not None:
        node['system'] = system.name
    # The Infrastructure Manager's own attribute for spot (preemptible) VMs.
    if str(system.getValue('spot') or '').lower() == 'yes':
        node['spot'] = True
    url = system.getValue('disk.0.image.url')
    if isinstance(url, list):
        if len(url) != 1:
            raise where.error('%s: disk.0.image.url lists %d images; tfdist deploys one image per role'
                              % (what, len(url)), _line(system, 'disk.0.image.url'))
        url = url[0]
    if url is None:
        return node, None
    try:
        cloud, image, region, endpoint = split_image_url(url)
    except ValueError as e:
        raise where.error('%s: %s' % (what, e), _line(system, 'disk.0.image.url')) from None
    node['image'] = image
    return node, (cloud, region, endpoint)


def _names(system, prop, kind, where):
    """A feature naming one `kind` ('a') or several in order of preference (['a', 'b']), as written; None if unset."""
    value = system.getValue(prop)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(name, str) and name for name in value):
        return value
    raise where.error("system %r: %s must be a %s or a list of them in order of preference ('a' or ['a', 'b']), got %r"
                      % (system.name, prop, kind, value), _line(system, prop))


def _memory_at_least(system, where):
    """The least memory.size as RADL writes it ('16g', '512m', '2048b' for a plain number of bytes), or None."""
    bounds = system.props.get('memory.size')
    if bounds is None:
        return None
    if not isinstance(bounds, tuple):
        raise where.error('system %r: memory.size must be a number with a unit (16g), got %r'
                          % (system.name, system.getValue('memory.size')), _line(system, 'memory.size'))
    low = bounds[0]
    if low is None or not low.value:
        return None
    return '%g%s' % (low.value, (low.unit or 'b').lower())


def _at_least(system, prop, where):
    """The least count a numeric feature allows: `gpu.count >= 1` and `gpu.count > 0` are 1, `<= 2` is 0."""
    bounds = system.props.get(prop)
    if bounds is None:
        return 0
    if not isinstance(bounds, tuple):  # a string value is kept as a single feature
        raise where.error('system %r: %s must be a number, got %r' % (system.name, prop, system.getValue(prop)),
                          _line(system, prop))
    low = bounds[0]
    if low is None:
        return 0
    value = low.getValue()
    if value < 0:
        raise where.error('system %r: %s must be 0 or more, got %s' % (system.name, prop, value), low.line)
    return int(value) + 1 if low.operator == '>' and value == int(value) else int(math.ceil(value))


def _line(system, prop):
    feature = system.props.get(prop)
    if isinstance(feature, tuple):
        feature = feature[0] or feature[1]
    return getattr(feature, 'line', None) or system.line


def _one_place(placed, where):
    """cloud, region and endpoint shared by every system with an image URL: one cluster, one cloud account."""
    place = {'cloud': None, 'region': None, 'endpoint': None}
    first = None
    for system, cloud, region, endpoint in placed:
        if first is None:
            first = system
            place.update(cloud=cloud, region=region, endpoint=endpoint)
            continue
        for key, value, scope in (('cloud', cloud, 'on one cloud'), ('region', region, 'in one region'),
                                  ('endpoint', endpoint, 'on one OpenStack server')):
            if value != place[key]:
                raise where.error('system %r: its image has %s %s, but system %r (line %s) has %s; a cluster runs %s'
                                  % (system.name, key, value, first.name, first.line, place[key], scope),
                                  _line(system, 'disk.0.image.url'))
    return place


def _one_zone_list(zoned, where):
    """The availability zones, as a list, of the systems that name some, which must name the same ones in the same
    order: tfdist keeps a cluster's nodes in one zone (the first with capacity), so it has one list to try."""
    if not zoned:
        return []
    first, zones = zoned[0]
    for system, other in zoned[1:]:
        if _as_list(other) != _as_list(zones):
            raise where.error('system %r: availability_zone = %r, but system %r (line %s) has %r; tfdist keeps '
                              'a cluster in one zone, so the systems that name zones name the same ones, '
                              'in the same order'
                              % (system.name, other, first.name, _line(first, 'availability_zone'), zones),
                              _line(system, 'availability_zone'))
    return _as_list(zones)


def _as_list(names):
    return [names] if isinstance(names, str) else list(names)


def _ports(doc):
    """Inbound ports of the networks' outports: a plain TCP port as an int, anything else as IM writes it.

    Written here rather than with str(outport), which writes every mapping as a range.
    """
    ports = []
    for net in doc.networks:
        for p in net.getOutPorts() or []:
            if p.is_range():
                port = '%d:%d' % (p.port_init, p.port_end)
            elif p.port_init != p.port_end:
                port = '%d-%d' % (p.port_init, p.port_end)  # public port to the node's port
            else:
                port = '%d' % p.port_init
            port = '%s%s/%s' % (p.remote_cidr + '-' if p.remote_cidr else '', port, p.protocol)
            if re.match(r'^\d+/tcp$', port):
                port = p.port_init
            if port not in ports:
                ports.append(port)
    return ports


def _checked_shape(cluster):
    """The shape with defaults filled in; TfdistRadlError names the bad field."""
    if not isinstance(cluster, Mapping):
        raise TfdistRadlError('to_radl: expected a cluster dict (as the tfdist.cluster.radl lookup returns), got %s'
                              % type(cluster).__name__)
    shape = {
        'source': cluster.get('source'),
        'chief': _count(cluster, 'chief', 0, 1),
        'workers': _count(cluster, 'workers', 1, None),
        'ps': _count(cluster, 'ps', 0, 0),
        'evaluators': _count(cluster, 'evaluators', 0, 0),
        'cloud': cluster.get('cloud'),
        'region': cluster.get('region'),
        'endpoint': cluster.get('endpoint'),
        'ports': cluster.get('ports', list(DEFAULT_PORTS)),
        'hdfs': cluster.get('hdfs') or False,
        'nodes': {},
    }
    problem = count_error(shape['chief'], shape['workers'], shape['ps'], shape['evaluators'], field_prefix='')
    if problem:
        raise TfdistRadlError('to_radl: ' + problem)
    if not isinstance(shape['hdfs'], bool):
        raise TfdistRadlError('to_radl: hdfs must be true or false, got %r' % (shape['hdfs'],))
    if shape['cloud'] is not None and shape['cloud'] not in CLOUDS:
        raise TfdistRadlError('to_radl: cloud %r: not one RADL can name; use %s or none'
                              % (shape['cloud'], ', '.join(CLOUDS)))
    for key in ('region', 'endpoint'):
        if '/' in (_text(shape[key], key) or ''):
            raise TfdistRadlError("to_radl: %s %r: has a '/', so the image URL would not read back" % (key, shape[key]))
    nodes = cluster.get('nodes') or {}
    if not isinstance(nodes, Mapping):
        raise TfdistRadlError('to_radl: nodes must be a dict of role -> {size, image, gpus}, got %s'
                              % type(nodes).__name__)
    for role in nodes:
        if role not in TASK_TYPES:
            raise TfdistRadlError('to_radl: nodes.%s: not a TF role; use chief, worker, ps or evaluator' % role)
    for role in TASK_TYPES:
        node = nodes.get(role) or {}
        if not isinstance(node, Mapping):
            raise TfdistRadlError('to_radl: nodes.%s must be a dict with size, image and gpus, got %s'
                                  % (role, type(node).__name__))
        # Constraints (cpus, memory, gpus) come bare from the lookup, or under `constraints` from tf_node_specs.
        wanted = dict(node.get('constraints') or {}, **{k: node[k] for k in ('cpus', 'memory', 'gpus') if node.get(k)})
        size = node.get('size')
        # A profile's sizes in order of preference: RADL's instance_type is one, the first.
        size = size[0] if isinstance(size, (list, tuple)) and size else size
        checked = {'size': _text(size, 'nodes.%s.size' % role),
                   'image': _text(node.get('image'), 'nodes.%s.image' % role),
                   'gpus': _count(wanted, 'gpus', 0, 0, 'nodes.%s.' % role)}
        if not checked['size']:
            if wanted.get('cpus'):
                checked['cpus'] = _count(wanted, 'cpus', 1, None, 'nodes.%s.' % role)
            if wanted.get('memory'):
                checked['memory'] = _text(str(wanted['memory']).lower(), 'nodes.%s.memory' % role)
        if node.get('spot') in (True, 'true', 'yes'):
            checked['spot'] = True
        if checked['image']:
            _check_image(shape, role, checked['image'])
        shape['nodes'][role] = checked
    if not isinstance(shape['ports'], (list, tuple)):
        raise TfdistRadlError('to_radl: ports must be a list, got %r' % (shape['ports'],))
    for port in shape['ports']:
        _port_spec(port)
    return shape


def _count(mapping, key, least, default, prefix=''):
    value = mapping.get(key)
    if value is None:
        value = default
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise TfdistRadlError('to_radl: %s%s must be a whole number, %d or more, got %r' % (prefix, key, least, value))
    return value


def _text(value, field):
    if value is None or value == '':
        return None
    # The radl lexer has no escape for a backslash before the closing quote, nor for line breaks.
    if not isinstance(value, str) or re.search(r"[\\'\n\r]", value):
        raise TfdistRadlError('to_radl: %s must be a string without quotes, backslashes or line breaks, got %r'
                              % (field, value))
    return value


def _check_image(shape, role, image):
    cloud = shape['cloud']
    field = 'nodes.%s.image %r' % (role, image)
    if cloud is None:
        raise TfdistRadlError('to_radl: %s: set cloud (%s) to write its image URL' % (field, ', '.join(CLOUDS)))
    form = CLOUD_FORMS[cloud]
    needs = 'endpoint' if form.place == 'endpoint' else 'region'
    if form.place is not None and not shape[needs]:
        # What the URL holds there, as its form says (REGION, ZONE, SERVER[:PORT]).
        raise TfdistRadlError('to_radl: %s: its %s:// URL needs %s (%s)' % (field, form.scheme, needs, form.form.split('/')[0]))
    if form.parts > 1 and (len(image.split(':')) != form.parts or not all(image.split(':'))):
        raise TfdistRadlError('to_radl: %s: an image on cloud %s is %s' % (field, cloud, form.form.replace('/', ':')))


def _port_spec(port):
    """IM outports text of a port entry: 22 -> 22/tcp; strings are IM's own notation already."""
    if isinstance(port, int) and not isinstance(port, bool) and 0 < port < 65536:
        return '%d/tcp' % port
    if isinstance(port, str) and port.strip().isdigit():
        return _port_spec(int(port))
    if isinstance(port, str) and not re.search(r"[\s',\\]", port) and _is_outport(port):
        return port
    raise TfdistRadlError("to_radl: ports: %r is not a port; use a number (22) or IM's notation "
                          "('8000:8010/tcp', '53/udp')" % (port,))


def _is_outport(text):
    if not HAS_RADL:
        return True  # nothing to check it with; the lookup will
    try:
        outport.parseOutPorts(text)
    except RADLParseException:
        return False
    return True


def _quote(value):
    return "'%s'" % value


def _one_line(value):
    return ' '.join(str(value).split())
