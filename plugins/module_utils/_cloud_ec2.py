# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

"""Amazon EC2 (libcloud provider `ec2`): credentials, region, tags, batched create and destroy, image lookup,
and the cluster's key pair and security group.

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

from ansible_collections.tfdist.cluster.plugins.module_utils._access import ClusterAccess, PartlyFound, access_parts, port_text, retry_while_in_use
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._cluster import TAG_CLUSTER, TAG_FIRST_INDEX, TAG_INDEX, TAG_OWNER, node_name
from ansible_collections.tfdist.cluster.plugins.module_utils._images import TAG_IMAGE, CloudImages, describe, is_baked, wait_until
from ansible_collections.tfdist.cluster.plugins.module_utils._provider import CloudProvider, RadlImages, Refusal, TfdistCloudError, run_parallel
from ansible_collections.tfdist.cluster.plugins.module_utils._sizes import SizeFacts, to_int

# Constructor argument -> (credentials key, environment variables, required).
CREDENTIALS = {
    'key': ('access_key', ('AWS_ACCESS_KEY_ID',), True),
    'secret': ('secret_key', ('AWS_SECRET_ACCESS_KEY',), True),
    'token': ('session_token', ('AWS_SESSION_TOKEN',), False),
}
REGION_ENV = ('AWS_DEFAULT_REGION', 'AWS_REGION')

# What RunInstances makes besides the instances, tagged with the instances' tags at creation (libcloud's create_node
# tags only the instances): a root volume or an interface that outlives its node still names its cluster.
MADE_WITH_INSTANCES = ('volume', 'network-interface')


def tags_on_what_instances_make(params):
    """RunInstances query params with a TagSpecification for each of MADE_WITH_INSTANCES that has none, carrying the
    instance's tags but its Name (the node's, not theirs); any other request's params unchanged."""
    if params.get('Action') != 'RunInstances':
        return params
    specs = {}
    for key, value in params.items():
        if key.startswith('TagSpecification.'):
            number, dummy, field = key[len('TagSpecification.'):].partition('.')
            specs.setdefault(int(number), {})[field] = value
    instance = [fields for fields in specs.values() if fields.get('ResourceType') == 'instance']
    if not instance:
        return params
    tags = [(key, instance[0][field[:-len('Key')] + 'Value']) for field, key in instance[0].items()
            if field.startswith('Tag.') and field.endswith('.Key') and key != 'Name']
    params = dict(params)
    number = max(specs)
    for resource in MADE_WITH_INSTANCES:
        if resource in [fields.get('ResourceType') for fields in specs.values()]:
            continue
        number += 1
        params['TagSpecification.%d.ResourceType' % number] = resource
        for m, (key, value) in enumerate(tags, 1):
            params.update({'TagSpecification.%d.Tag.%d.Key' % (number, m): key,
                           'TagSpecification.%d.Tag.%d.Value' % (number, m): value})
    return params


def named_by_identity(nodes):
    """The nodes, each named {cluster}-{role}-{index} after its identity (_libcloud.node_identity), not after its Name
    tag, which the nodes of one RunInstances share (batch_create): the name tfdist knows a node by (its inventory
    host, known_hosts line, results) on every cloud. A node without an index keeps the name of its Name tag."""
    # Imported here: _libcloud imports this file (through _clouds).
    from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import node_identity
    for node in nodes:
        identity = node_identity(node)
        if identity and identity.index is not None:
            node.name = node_name(*identity)
    return nodes


try:
    from libcloud.compute.drivers.ec2 import EC2Connection, EC2NodeDriver
except ImportError:  # _libcloud.HAS_LIBCLOUD tells the modules
    TaggingEc2NodeDriver = None
else:
    class TaggingEc2Connection(EC2Connection):
        """EC2's signed connection, with the tags of tags_on_what_instances_make (added before the signature)."""

        def add_default_params(self, params):
            return super().add_default_params(tags_on_what_instances_make(params))

    class TaggingEc2NodeDriver(EC2NodeDriver):
        """libcloud's EC2 driver, whose RunInstances also tags the volumes and network interfaces it makes, and whose
        nodes, listed or made, go by their tfdist names (named_by_identity)."""

        connectionCls = TaggingEc2Connection

        def list_nodes(self, *args, **kwargs):
            return named_by_identity(super().list_nodes(*args, **kwargs))

        def create_node(self, *args, **kwargs):
            made = super().create_node(*args, **kwargs)
            named_by_identity(made if isinstance(made, list) else [made])
            return made


def list_images(driver, wanted):
    """The images with the wanted AMI ids or names: listing every image means every public AMI (minutes)."""
    images = []
    ids = [value for value in wanted if str(value).startswith('ami-')]
    names = [value for value in wanted if value not in ids]
    for image_id in ids:
        try:
            images += driver.list_images(ex_image_ids=[image_id])
        except Exception as e:  # an unknown id is an error on EC2; find_by_id_or_name names the field
            if 'InvalidAMIID' not in str(e) and getattr(e, 'code', None) != 400:
                raise
    if names:
        images += driver.list_images(ex_filters={'name': names})
    return images


def index_runs(requests):
    """The requests' positions in runs of consecutive indexes (tfdist_index tags 0, 1, 2, 5: [[0, 1, 2], [3]])."""
    runs = []
    for position, request in enumerate(requests):
        index = int(request['ex_metadata'][TAG_INDEX])
        if runs and index == int(requests[runs[-1][-1]]['ex_metadata'][TAG_INDEX]) + 1:
            runs[-1].append(position)
        else:
            runs.append([position])
    return runs


def batch_create(driver, connect, requests):
    """The requests' nodes (one role's, alike but for name and index: _libcloud._batches), each run of consecutive
    indexes in one RunInstances (the runs side by side), whole at creation: no call per node, which would be slow
    for many nodes and throttled by AWS.

    A run's nodes get the tags of its requests but tfdist_index, tfdist_first_index (the run's first index) instead,
    and the Name {cluster}-{role}-{first}-{last}; EC2 numbers them 0, 1, ... (their launch index), which
    _libcloud.node_identity adds to the first index. A lone index is created as its request says (its own index and
    name). Returns a Node or the exception per request, in their order.
    """
    def launch(drv, run):
        if len(run) == 1:
            return [drv.create_node(**requests[run[0]])]
        first = requests[run[0]]
        tags = dict(first['ex_metadata'])
        tags[TAG_FIRST_INDEX] = tags.pop(TAG_INDEX)
        last = requests[run[-1]]['ex_metadata'][TAG_INDEX]
        nodes = drv.create_node(**dict(first, name='%s-%s' % (first['name'], last), ex_metadata=tags,
                                       ex_mincount=len(run), ex_maxcount=len(run)))
        # The node of launch index k is the run's request k (node_identity reads it so); a cloud that gives no launch
        # index leaves them in its answer's order, and libcloud_node refuses nodes whose name is not their request's.
        return sorted(nodes if isinstance(nodes, list) else [nodes],
                      key=lambda node: node.extra.get('launch_index') or 0)

    runs = index_runs(requests)
    results = [None] * len(requests)
    for run, made in zip(runs, run_parallel(connect, launch, runs)):
        if isinstance(made, Exception):
            made = [made] * len(run)
        # MinCount = MaxCount: EC2 starts the whole run or none; should a cloud start fewer, each missing node fails.
        made += [TfdistCloudError('the cloud started %d nodes instead of %d' % (len(made), len(run)))] \
            * (len(run) - len(made))
        for position, result in zip(run, made):
            results[position] = result
    return results


def batch_destroy(driver, nodes):
    """One TerminateInstances for all nodes (EC2 takes many InstanceId.N): None per node, or the exception."""
    params = {'Action': 'TerminateInstances'}
    params.update(('InstanceId.%d' % (n + 1), node.id) for n, node in enumerate(nodes))
    try:
        driver.connection.request(driver.path, params=params)
    except Exception as e:
        return [e] * len(nodes)
    return [None] * len(nodes)


def describe_key_pairs(driver, params=None):
    """[(name, id, tags)] of DescribeKeyPairs (libcloud's own listing drops the tags), with extra request params."""
    from libcloud.utils.xml import findall, findtext
    from libcloud.compute.drivers.ec2 import NAMESPACE
    answer = driver.connection.request(driver.path, params=dict(params or {}, Action='DescribeKeyPairs')).object
    pairs = []
    for item in findall(answer, 'keySet/item', NAMESPACE):
        name = findtext(item, 'keyName', NAMESPACE)
        tags = dict((findtext(tag, 'key', NAMESPACE), findtext(tag, 'value', NAMESPACE))
                    for tag in findall(item, 'tagSet/item', NAMESPACE))
        pairs.append((name, findtext(item, 'keyPairId', NAMESPACE) or name, tags))
    return pairs


def goes_with_its_node(extra):
    """Whether a volume or network interface (its extra, or an interface's attachment) is attached to an instance
    that deletes it on termination: it is the node's, listed with it, gone with it (even while the instance shuts
    down after a destroy)."""
    return str((extra or {}).get('delete')).lower() == 'true'


def in_vpc(group, vpc_id):
    """Whether a security group belongs to the profile's VPC (any group when the profile names none)."""
    return not vpc_id or group.extra.get('vpc_id') in (None, vpc_id)


def owner_mark(name, tags):
    """The owner's mark of a key pair or security group: its tfdist_owner tag, else the owner's part of its name."""
    return tags.get(TAG_OWNER) or access_parts(name)[1]


# What EC2 answers a call that the credentials' policy does not allow (a permission missing); libcloud raises it as a
# BaseHTTPError (HTTP 403) whose message starts with the code. Wrong credentials (AuthFailure) are another error.
NOT_ALLOWED_CODES = ('UnauthorizedOperation', 'AccessDenied')


def not_allowed(error):
    """Whether an EC2 error says the credentials may not make the call: a permission their policy lacks."""
    return error_code(str(error)) in NOT_ALLOWED_CODES


# EC2's error codes by what they mean for a create (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/
# errors-overview.html). libcloud raises each as a BaseHTTPError whose message is 'Code: Message'.
CREDENTIALS_CODES = ('AuthFailure', 'InvalidClientTokenId', 'SignatureDoesNotMatch', 'UnrecognizedClientException')
# On-demand vCPUs and instances, and spot instances: a Service Quotas limit of the account in the region.
QUOTA_CODES = ('VcpuLimitExceeded', 'InstanceLimitExceeded', 'MaxSpotInstanceCountExceeded')
CAPACITY_CODES = ('InsufficientInstanceCapacity',)
# A spot request whose highest price is below the zone's spot price.
SPOT_PRICE_CODES = ('SpotMaxPriceTooLow',)
# The zone does not offer the instance type.
SIZE_CODES = ('Unsupported',)

# Service Quotas names the vCPU quotas after instance families ('Running On-Demand G and VT instances', 'All G and VT
# Spot Instance Requests'); the family is the instance type's letters before its generation (g4dn.xlarge: g).
QUOTA_FAMILIES = dict({'g': 'G and VT', 'vt': 'G and VT', 'p': 'P', 'f': 'F', 'inf': 'Inf', 'x': 'X'},
                      **dict((letter, 'Standard (A, C, D, H, I, M, R, T, Z)') for letter in 'acdhimrtz'))


def error_code(text):
    """The code an EC2 error's message starts with ('VcpuLimitExceeded: You have requested...'), or ''."""
    match = re.match(r'(?:Client\.|Server\.)?([A-Za-z][\w.]*): ', text)
    return match.group(1) if match else ''


def quota_advice(size, spot):
    """(the quota's family, what to ask for) of an instance type's vCPU quota, on-demand or spot."""
    family = re.match(r'[a-z]+', str(size or '').lower())
    label = QUOTA_FAMILIES.get(family.group(0) if family else '')
    if label is None:
        return 'its family', 'ask for a quota increase in Service Quotas (Amazon EC2)'
    quota = ('All %s Spot Instance Requests' if spot else 'Running On-Demand %s instances') % label
    return label, 'ask for a quota increase (Service Quotas "%s")' % quota


def refusal(error, text, attempt):
    """The Refusal of an EC2 error by its code; None for a code this does not know."""
    code = error_code(text)
    if code in CREDENTIALS_CODES:
        return Refusal('credentials', text, '')
    if code in NOT_ALLOWED_CODES:
        action = re.search(r'perform: ([\w-]+:\w+)', text)
        why = 'the credentials may not call %s' % (action.group(1) if action else 'it')
        return Refusal('permission', '%s (%s)' % (why, code),
                       "add %s to their IAM policy" % (action.group(1) if action else 'the permission'))
    if code in QUOTA_CODES:
        family, ask = quota_advice(attempt.size, attempt.spot or code == 'MaxSpotInstanceCountExceeded')
        limit = re.search(r'vCPU limit of (\d+)', text)
        why = "your account's quota for %s%s instances is %s" % (
            family, ' spot' if code == 'MaxSpotInstanceCountExceeded' else '',
            '%s vCPUs' % limit.group(1) if limit else 'used up')
        return Refusal('quota', '%s (%s)' % (why, code), '%s or choose another size' % ask)
    if code in CAPACITY_CODES + SPOT_PRICE_CODES:
        # EC2 names the zone it tried (its choice where the request names none) and those that have the size now:
        # "... in the Availability Zone you requested (us-east-1a). ... or choosing us-east-1b, us-east-1c."
        zone = re.search(r'Availability Zone you requested \(([\w-]+)\)', text)
        there = 'in %s' % zone.group(1) if zone and zone.group(1) != attempt.zone else 'there'
        others = re.search(r'choosing ([\w-]+(?:, [\w-]+)*)', text)
        where = 'another zone%s' % (' (AWS suggests %s)' % others.group(1) if others else '')
        if attempt.spot or code in SPOT_PRICE_CODES:
            why = ('the spot price %s is above the highest price the request allows' % there
                   if code in SPOT_PRICE_CODES else 'no spot capacity of this size %s now' % there)
            return Refusal('spot_capacity', '%s (%s)' % (why, code),
                           'try %s or size, on-demand nodes (spot: false), or again later' % where)
        return Refusal('capacity', 'no capacity of this size %s now (%s)' % (there, code),
                       'try %s or size, or again later' % where)
    if code in SIZE_CODES or (code == 'InvalidParameterValue' and attempt.size and str(attempt.size) in text):
        return Refusal('size_unavailable', 'the zone does not offer this size (%s)' % code,
                       'choose another zone or size')
    return None


class Ec2Access(ClusterAccess):
    """A key pair and a security group named tfdist-<cluster>-<owner's part>, both tagged tfdist_cluster=<cluster> and
    tfdist_owner=<owner>. Those of another owner's cluster of the same name are left alone."""

    def _tag_filter(self):
        return {'tag:%s' % TAG_CLUSTER: self.cluster}

    def _request(self, params):
        return self.driver.connection.request(self.driver.path, params=params).object

    def _key_pairs(self):
        """Names of this controller's key pairs of the cluster: tagged with the cluster or named after it (imported
        untagged), and its own by their owner's mark."""
        pairs = {}
        for params in ({'Filter.1.Name': 'tag:%s' % TAG_CLUSTER, 'Filter.1.Value.1': self.cluster},
                       {'Filter.1.Name': 'key-name', 'Filter.1.Value.1': self.name,
                        'Filter.1.Value.2': self.unmarked_name}):
            pairs.update((pair[0], pair) for pair in describe_key_pairs(self.driver, params))
        return sorted(name for name, ident, tags in pairs.values() if self.owns(owner_mark(name, tags)))

    def _groups(self):
        found = dict((g.id, g) for g in self.driver.ex_get_security_groups(filters=self._tag_filter()))
        for name in sorted(set((self.name, self.unmarked_name))):
            for group in self.driver.ex_get_security_groups(filters={'group-name': name}):
                found.setdefault(group.id, group)
        return [g for g in found.values() if in_vpc(g, self.options.get('vpc_id'))
                and self.owns(owner_mark(g.name, g.extra.get('tags') or {}))]

    def present(self, public_key, check_mode=False):
        if self.name not in self._key_pairs():
            self.changed('key pair %s' % self.name)
            if not check_mode:
                import base64
                # ImportKeyPair with a tag specification: libcloud's import_key_pair_from_string tags nothing.
                params = {'Action': 'ImportKeyPair', 'KeyName': self.name,
                          'PublicKeyMaterial': base64.b64encode(public_key.encode()).decode(),
                          'TagSpecification.1.ResourceType': 'key-pair'}
                tags = dict({TAG_CLUSTER: self.cluster}, **self.owner_tags())
                for m, (key, value) in enumerate(sorted(tags.items()), 1):
                    params.update({'TagSpecification.1.Tag.%d.Key' % m: key, 'TagSpecification.1.Tag.%d.Value' % m: value})
                self._request(params)
        groups = [g for g in self._groups() if g.name == self.name]
        if groups:
            group = groups[0]
        elif check_mode:
            self.changed('security group %s' % self.name)
            return self.facts()
        else:
            self.changed('security group %s' % self.name)
            created = self.driver.ex_create_security_group(
                self.name, 'tfdist cluster %s: SSH from the controller, TF and HDFS within' % self.cluster,
                vpc_id=self.options.get('vpc_id'))
            self.driver.ex_create_tags(SimpleNamespace(id=created['group_id']),
                                       dict({TAG_CLUSTER: self.cluster}, **self.owner_tags()))
            group = self.driver.ex_get_security_groups(group_ids=[created['group_id']])[0]
        self._sync_rules(group, check_mode)
        return self.facts(group.id)

    def _wanted_rules(self, group_id):
        rules = set(('cidr', low, high, cidr) for cidr in self.ssh_cidrs for low, high in self.public)
        rules.update(('group', low, high, group_id) for low, high in self.ports)
        return rules

    @staticmethod
    def _current_rules(group):
        rules = set()
        for rule in group.ingress_rules:
            if rule.get('protocol') != 'tcp':
                # AWS revokes a rule only when given its protocol, ports and source.
                sources = ([('cidr', cidr) for cidr in rule.get('cidr_ips') or []]
                           + [('group', pair['group_id']) for pair in rule.get('group_pairs') or []])
                rules.update(('other', rule.get('protocol'), rule.get('from_port'), rule.get('to_port'), source)
                             for source in sources)
                continue
            low, high = int(rule['from_port']), int(rule['to_port'])
            rules.update(('cidr', low, high, cidr) for cidr in rule.get('cidr_ips') or [])
            rules.update(('group', low, high, pair['group_id']) for pair in rule.get('group_pairs') or [])
        return rules

    @staticmethod
    def _source(kind, source):
        """The keyword arguments of libcloud's ingress calls for a rule from a CIDR or from a group."""
        return {'cidr_ips': [source]} if kind == 'cidr' else {'group_pairs': [{'group_id': source}]}

    def _sync_rules(self, group, check_mode):
        wanted, current = self._wanted_rules(group.id), self._current_rules(group)
        for rule in sorted(wanted - current, key=str):
            kind, low, high, source = rule
            self.changed('allow tcp %s from %s' % (port_text(low, high), source))
            if not check_mode:
                self.driver.ex_authorize_security_group_ingress(group.id, low, high, **self._source(kind, source))
        # Anything else opens the cluster wider than asked (a hand-made rule, an old controller address).
        for rule in sorted(current - wanted, key=str):
            if rule[0] == 'other':
                protocol, low, high, (kind, source) = rule[1:]
                self.changed('revoke %s%s from %s' % (protocol, '' if low is None else ' %s-%s' % (low, high), source))
                if not check_mode:
                    params = {'Action': 'RevokeSecurityGroupIngress', 'GroupId': group.id,
                              'IpPermissions.1.IpProtocol': protocol}
                    if low is not None:
                        params.update({'IpPermissions.1.FromPort': low, 'IpPermissions.1.ToPort': high})
                    params['IpPermissions.1.IpRanges.1.CidrIp' if kind == 'cidr'
                           else 'IpPermissions.1.Groups.1.GroupId'] = source
                    self._request(params)
                continue
            kind, low, high, source = rule
            self.changed('revoke tcp %s from %s' % (port_text(low, high), source))
            if not check_mode:
                self.driver.ex_revoke_security_group_ingress(group.id, low, high, **self._source(kind, source))

    def absent(self, check_mode=False):
        for key in self._key_pairs():
            self.changed('key pair %s' % key)
            if not check_mode:
                self._request({'Action': 'DeleteKeyPair', 'KeyName': key})
        for group in self._groups():
            self.changed('security group %s (%s)' % (group.name, group.id))
            if not check_mode:
                retry_while_in_use(lambda: self.driver.ex_delete_security_group_by_id(group.id),
                                   'security group %s (%s)' % (group.name, group.id))

    @staticmethod
    def found(driver, options):
        """Every cluster's key pairs and security groups: tagged tfdist_cluster, or named tfdist-<cluster>; and the
        network interfaces tagged tfdist_cluster (at creation, tags_on_what_instances_make) that would outlive
        their node. Credentials that may not list the interfaces leave them out (PartlyFound says so): the audit names
        the permission missing rather than failing."""
        found, unchecked = [], []
        try:
            interfaces = driver.ex_list_network_interfaces()
        except Exception as e:  # libcloud raises the cloud's refusal as a plain HTTP error
            if not not_allowed(e):
                raise
            interfaces = []
            unchecked.append('network interfaces: the credentials may not list them (permission '
                             'ec2:DescribeNetworkInterfaces missing): %s' % e)
        for interface in interfaces:
            cluster = (interface.extra.get('tags') or {}).get(TAG_CLUSTER)
            if cluster and not goes_with_its_node(interface.extra.get('attachment')):
                found.append(('network interface', interface.id, interface.name, cluster,
                              interface.extra['tags'].get(TAG_OWNER)))
        # With their owner's mark: tagged tfdist_owner, or named tfdist-<cluster>-<owner's part>.
        for name, ident, tags in describe_key_pairs(driver):
            cluster = tags.get(TAG_CLUSTER) or access_parts(name)[0]
            if cluster:
                found.append(('key pair', ident, name, cluster, owner_mark(name, tags)))
        for group in driver.ex_get_security_groups():
            tags = group.extra.get('tags') or {}
            cluster = tags.get(TAG_CLUSTER) or access_parts(group.name)[0]
            if cluster and in_vpc(group, (options or {}).get('vpc_id')):
                found.append(('security group', group.id, group.name, cluster, owner_mark(group.name, tags)))
        if unchecked:
            raise PartlyFound(found, unchecked)
        return found

    @staticmethod
    def node_kwargs(driver, access):
        kwargs = {'ex_keyname': access['name']}
        # In a chosen subnet EC2 wants group ids; in the default VPC the name is enough.
        if access['options'].get('subnet_id'):
            kwargs['ex_subnet'] = SimpleNamespace(id=access['options']['subnet_id'])
            kwargs['ex_security_group_ids'] = [access['firewall_id']]
        else:
            kwargs['ex_securitygroup'] = [access['name']]
        return kwargs


def snapshots_of(image):
    """The ids of the EBS snapshots an AMI's block devices are made from."""
    return [snapshot for snapshot in ((mapping.get('ebs') or {}).get('snapshot_id')
                                      for mapping in image.extra.get('block_device_mapping') or []) if snapshot]


class Ec2Images(CloudImages):
    """AMIs of this account: CreateImage with the image's tags (AWS reboots the instance for a consistent disk), a wait
    until the AMI is available, then its snapshots tagged alike; removed with its snapshots, which a deregistered AMI
    leaves behind, still billed."""

    def create(self, node, name, tags):
        from libcloud.utils.xml import findtext
        from libcloud.compute.drivers.ec2 import NAMESPACE
        params = {'Action': 'CreateImage', 'InstanceId': node.id, 'Name': name, 'NoReboot': 'false',
                  'Description': 'tfdist baked image', 'TagSpecification.1.ResourceType': 'image'}
        for m, (key, value) in enumerate(sorted(tags.items()), 1):
            params.update({'TagSpecification.1.Tag.%d.Key' % m: key, 'TagSpecification.1.Tag.%d.Value' % m: value})
        answer = self.driver.connection.request(self.driver.path, params=params).object
        image_id = findtext(answer, 'imageId', NAMESPACE)
        image = wait_until(lambda: self._available(image_id), 'image %s (%s)' % (name, image_id), self.wait_timeout)
        # The snapshots exist once the AMI is available; tagged, the console tells them from others.
        for snapshot in snapshots_of(image):
            self.driver.ex_create_tags(SimpleNamespace(id=snapshot), tags)
        return image

    def _available(self, image_id):
        try:
            images = self.driver.list_images(ex_image_ids=[image_id])
        except Exception as e:  # EC2 is eventually consistent: a new AMI may not be listed yet
            if 'InvalidAMIID' not in str(e):
                raise
            return None
        if not images:
            return None
        image = images[0]
        state = image.extra.get('state')
        if state in ('failed', 'error', 'deregistered'):
            raise TfdistCloudError('%s: EC2 says its state is %s' % (describe(image), state))
        return image if state == 'available' else None

    def named(self, name):
        # AMI names are unique per account and region: other accounts' images of the name do not matter.
        return self.driver.list_images(ex_owner='self', ex_filters={'name': name})

    def found(self):
        return [image for image in self.driver.list_images(ex_owner='self', ex_filters={'tag-key': TAG_IMAGE})
                if is_baked(image)]

    def delete(self, image):
        snapshots = snapshots_of(image)
        super().delete(image)
        for snapshot in snapshots:
            self.driver.connection.request(self.driver.path, params={'Action': 'DeleteSnapshot', 'SnapshotId': snapshot})


# EC2 sizes with AMD GPUs (no CUDA): tfdist's GPUs are NVIDIA's.
NON_CUDA_GPU_FAMILIES = ('g4ad',)


def size_facts(size):
    """vCPUs, NVIDIA GPUs and architecture of an instance type, from libcloud's offline data (extra vcpu, gpu,
    physicalProcessor: the Graviton types are arm64)."""
    extra = size.extra or {}
    gpus = to_int(extra.get('gpu')) or 0
    if str(size.id).split('.', maxsplit=1)[0] in NON_CUDA_GPU_FAMILIES:
        gpus = 0
    arch = 'arm64' if 'graviton' in str(extra.get('physicalProcessor', '')).lower() else 'x86_64'
    return SizeFacts(to_int(extra.get('vcpu')), gpus, arch)


PROVIDER = CloudProvider(
    'ec2',
    driver=TaggingEc2NodeDriver,
    credentials=CREDENTIALS,
    region_env=REGION_ENV,
    tag_arg='ex_metadata',
    list_images=list_images,
    batch_create=batch_create,
    batch_destroy=batch_destroy,
    access=Ec2Access,
    size_facts=size_facts,
    # InstanceMarketOptions.MarketType=spot in RunInstances (a one-time request at most the on-demand price).
    spot_args={'ex_spot': True},
    spot_name='spot',
    # A node that shuts itself down (an idle guard, a halted job) is terminated, not kept stopped and billed for disk.
    node_defaults={'ex_terminate_on_shutdown': True},
    # RunInstances' UserData (libcloud encodes it).
    user_data_arg='ex_userdata',
    images=Ec2Images,
    radl=RadlImages('aws', 'aws', place='region', form='REGION/AMI'),
    title='AWS',
    refusal=refusal,
)
