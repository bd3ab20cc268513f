# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

"""Google Compute Engine (libcloud provider `gce`): service-account credentials, zone, labels, image lookup by
name or family, and the cluster's network, subnet and firewall rules on a network tag.

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

from ansible_collections.tfdist.cluster.plugins.module_utils._access import ClusterAccess, access_cluster, port_text, retry_while_in_use
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._cluster import TAG_OWNER
from ansible_collections.tfdist.cluster.plugins.module_utils._images import CloudImages, is_baked
from ansible_collections.tfdist.cluster.plugins.module_utils._provider import CloudProvider, RadlImages, Refusal, TfdistCloudError
from ansible_collections.tfdist.cluster.plugins.module_utils._sizes import SizeFacts, to_int

# Constructor argument -> (credentials key, environment variables, required).
CREDENTIALS = {
    'user_id': ('service_account_email', ('GCE_SERVICE_ACCOUNT_EMAIL',), True),
    'key': ('credentials_file', ('GCE_CREDENTIALS_FILE', 'GOOGLE_APPLICATION_CREDENTIALS'), True),
    'project': ('project', ('GCE_PROJECT',), True),
}


def list_images(driver, wanted):
    """The images named (or of the family named) by `wanted`, one call each: listing them all takes minutes."""
    from libcloud.common.google import ResourceNotFoundError
    images = []
    for value in wanted:
        try:
            images.append(driver.ex_get_image(value))
        except ResourceNotFoundError:
            pass
    return [image for image in images if image is not None]


# Firewall priorities. GCE applies the rule with the lowest number first, and a deny before an allow of the same
# number; gcloud gives a new rule 1000, the default network's own rules have 65534. tfdist's allow rules come first
# of all and its deny rule right below them, so that on a network of the user's no rule of theirs opens the cluster's
# nodes unless it too has priority 0.
ALLOW_PRIORITY = 0
DENY_PRIORITY = 1
# The range of the subnet that tfdist makes in each cluster's network (4,092 nodes). Each cluster has a network of
# its own, so every cluster may use the same range.
SUBNET_RANGE = '10.42.0.0/20'
# The scope of a service account that a profile names: its IAM roles decide what the nodes may do (Google's advice).
SERVICE_ACCOUNT_SCOPES = ['cloud-platform']
# The firewall rules of a cluster: tfdist-<cluster> and these suffixes.
RULE_SUFFIXES = ('-ssh', '-internal', '-deny')
# The fields of a firewall rule that decide what comes in, and its description (the owner's mark): compared with
# what tfdist wants, and corrected.
RULE_FIELDS = ('network', 'direction', 'priority', 'disabled', 'allowed', 'denied', 'sourceRanges', 'sourceTags',
               'sourceServiceAccounts', 'targetTags', 'targetServiceAccounts', 'destinationRanges', 'description')


def _items(driver, path):
    """Every item of a GCE list (all pages), as GCE's JSON: libcloud's ex_list_firewalls and ex_list_networks get one
    page, and its firewall objects cost a request each for their network."""
    return driver.connection.paginated_request(path, method='GET')['items']


def _subnets(driver):
    """Every subnet of the project, in every region, as GCE's JSON."""
    regions = driver.connection.request_aggregated_items('subnetworks')['items']
    return [subnet for region in regions.values() for subnet in region.get('subnetworks', [])]


def _rule_field(value):
    """A firewall field as GCE answers it, comparable: unset, false and empty are one; lists in any order."""
    if value in (None, False, [], ''):
        return None
    if isinstance(value, list):
        return sorted(value, key=lambda item: json.dumps(item, sort_keys=True))
    return value


def described_owner(resource):
    """The owner's mark in the description of a network, subnet or firewall rule (GceAccess._description), or None."""
    match = re.search(r'\b%s=([0-9a-f]+)' % TAG_OWNER, resource.get('description') or '')
    return match.group(1) if match else None


def _tcp(ranges):
    return [{'IPProtocol': 'tcp', 'ports': [port_text(*r) for r in ranges]}]


class GceAccess(ClusterAccess):
    """The cluster's network: a VPC network tfdist-<cluster> (custom subnet mode) with one subnet tfdist-<cluster> in
    the profile's region, made and removed with the cluster; or the network (and subnet) the profile names, left to the
    user. On it, firewall rules aimed at the network tag tfdist-<cluster> that every node carries: -ssh (SSH and the
    public ports from the controller), -internal (the internal ports from the cluster's nodes, by their tag), and on a
    network of the user's -deny (everything else from anywhere, right below), so that its rules do not reach the
    cluster. The key goes into each node's metadata, the project's keys and service account stay out of the nodes.

    GCE networks, subnets and firewall rules carry no labels: tfdist finds them by name, and writes the owner's mark
    (tfdist_owner=<id>) into their description."""

    def _description(self):
        text = 'tfdist cluster %s' % self.cluster
        return text if self.owner is None else '%s (%s=%s)' % (text, TAG_OWNER, self.owner)

    @staticmethod
    def _get(lookup, *args):
        """What one of the driver's ex_get_* methods finds, or None where GCE has nothing of the name."""
        from libcloud.common.google import ResourceNotFoundError
        try:
            return lookup(*args)
        except ResourceNotFoundError:
            return None

    def _region(self):
        if self.driver.region is None:
            raise TfdistCloudError('region: tfdist needs the zone of the cluster (its subnet is in the zone\'s region)')
        return self.driver.region

    def _users_network(self):
        """(network link, subnet link or None) of the network the profile names: it must exist, tfdist makes none."""
        network = self._get(self.driver.ex_get_network, self.options['network'])
        if network is None:
            raise TfdistCloudError('network: project %s has no network %s'
                                   % (self.driver.project, self.options['network']))
        if not self.options.get('subnet'):
            return network.extra['selfLink'], None
        subnet = self._get(self.driver.ex_get_subnetwork, self.options['subnet'], self._region())
        if subnet is None:
            raise TfdistCloudError('subnet: network %s has no subnet %s in region %s'
                                   % (network.name, self.options['subnet'], self._region().name))
        return network.extra['selfLink'], subnet.extra['selfLink']

    def _own_network(self, check_mode):
        """(network link, subnet link) of the cluster's own network and subnet, made where missing (None for what
        check mode would make)."""
        region = self._region()
        network = self._get(self.driver.ex_get_network, self.name)
        if network is None:
            self.changed('network %s' % self.name)
            if not check_mode:
                network = self.driver.ex_create_network(self.name, None, description=self._description(),
                                                        mode='custom')
        subnet = None if network is None else self._get(self.driver.ex_get_subnetwork, self.name, region)
        if subnet is None:
            subnet_range = self.options.get('subnet_range', SUBNET_RANGE)
            self.changed('subnet %s (%s in %s)' % (self.name, subnet_range, region.name))
            if not check_mode:
                subnet = self.driver.ex_create_subnetwork(self.name, cidr=subnet_range, network=network,
                                                          region=region, description=self._description())
        return network and network.extra['selfLink'], subnet and subnet.extra['selfLink']

    def _wanted(self, network):
        """The cluster's firewall rules on `network` (a link), as GCE's JSON."""
        def rule(priority, **fields):
            return dict(network=network, direction='INGRESS', priority=priority, targetTags=[self.name],
                        description=self._description(), **fields)

        wanted = {self.name + '-ssh': rule(ALLOW_PRIORITY, allowed=_tcp(self.public), sourceRanges=self.ssh_cidrs)}
        if self.ports:  # GCE reads an empty port list as every port
            # By the network tag, not the subnet's range: on a network of the user's, the subnet holds other VMs.
            wanted[self.name + '-internal'] = rule(ALLOW_PRIORITY, allowed=_tcp(self.ports), sourceTags=[self.name])
        if self.options.get('network'):
            wanted[self.name + '-deny'] = rule(DENY_PRIORITY, denied=[{'IPProtocol': 'all'}],
                                               sourceRanges=['0.0.0.0/0'])
        return wanted

    def _existing(self, prefixes=None):
        names = [prefix + suffix for prefix in prefixes or [self.name] for suffix in RULE_SUFFIXES]
        return dict((rule['name'], rule) for rule in _items(self.driver, '/global/firewalls') if rule['name'] in names)

    def _send(self, method, path, name, spec):
        # Through the driver's connection (which waits for GCE's operation): libcloud's ex_update_firewall sends no
        # priority, and GCE's PUT resets what it is not given, which would put the deny rule level with the allows.
        body = dict((key, value) for key, value in spec.items() if value is not None)
        body['name'] = name
        self.driver.connection.async_request(path, method=method, data=body)

    def _sync_rules(self, wanted, check_mode):
        existing = self._existing()
        for name in sorted(set(existing) - set(wanted)):
            self.changed('firewall %s removed' % name)
            if not check_mode:
                self.driver.ex_destroy_firewall(SimpleNamespace(name=name))
        for name, spec in sorted(wanted.items()):
            rule = existing.get(name)
            if rule is None:
                self.changed('firewall %s' % name)
                if not check_mode:
                    self._send('POST', '/global/firewalls', name, spec)
            elif any(_rule_field(rule.get(key)) != _rule_field(spec.get(key)) for key in RULE_FIELDS):
                self.changed('firewall %s rules' % name)
                if check_mode:
                    continue
                if rule['network'] == spec['network']:
                    self._send('PUT', '/global/firewalls/' + name, name, spec)
                else:  # GCE moves no rule to another network
                    self.driver.ex_destroy_firewall(SimpleNamespace(name=name))
                    self._send('POST', '/global/firewalls', name, spec)

    def present(self, public_key, check_mode=False):
        if self.options.get('network'):
            network, subnet = self._users_network()
        else:
            network, subnet = self._own_network(check_mode)
        self._sync_rules(self._wanted(network), check_mode)
        facts = self.facts(self.name)
        facts.update(public_key=public_key, network=network, subnet=subnet)
        return facts

    def absent(self, check_mode=False):
        """The cluster's firewall rules, then its own subnets (in any region) and network, never the user's."""
        prefixes = [self.name]
        if self.unmarked_name != self.name and self.owns(None):
            # Rules made before owners were marked (tfdist-<cluster>-ssh, on the network the nodes were on).
            prefixes.append(self.unmarked_name)
        for name in sorted(self._existing(prefixes)):
            self.changed('firewall %s' % name)
            if not check_mode:
                self.driver.ex_destroy_firewall(SimpleNamespace(name=name))
        if self.options.get('network') == self.name:
            return
        network = self._get(self.driver.ex_get_network, self.name)
        if network is None:
            return
        for subnet in _subnets(self.driver):
            if subnet['name'] == self.name and subnet['network'] == network.extra['selfLink']:
                region = subnet['region'].rsplit('/', 1)[1]
                self.changed('subnet %s (%s)' % (self.name, region))
                if not check_mode:
                    # Until GCE has deleted the nodes, their subnet is in use.
                    retry_while_in_use(lambda: self.driver.ex_destroy_subnetwork(self.name, region),
                                       'subnet %s in %s' % (self.name, region))
        self.changed('network %s' % self.name)
        if not check_mode:
            retry_while_in_use(lambda: self.driver.ex_destroy_network(network), 'network %s' % self.name)

    @staticmethod
    def found(driver, options):
        """Every cluster's networks and subnets (tfdist-<cluster>) and firewall rules (tfdist-<cluster>-ssh,
        -internal, -deny): by name, as GCE keeps no labels on them; the owner's mark from the description."""
        found = []
        for network in _items(driver, '/global/networks'):
            cluster = access_cluster(network['name'])
            if cluster:
                found.append(('network', network['id'], network['name'], cluster, described_owner(network)))
        for subnet in _subnets(driver):
            cluster = access_cluster(subnet['name'])
            if cluster:
                found.append(('subnet', subnet['id'], subnet['name'], cluster, described_owner(subnet)))
        for rule in _items(driver, '/global/firewalls'):
            for suffix in RULE_SUFFIXES:
                cluster = access_cluster(rule['name'], suffix)
                if cluster:
                    found.append(('firewall rule', rule['id'], rule['name'], cluster, described_owner(rule)))
                    break
        return found

    @staticmethod
    def node_kwargs(driver, access):
        """The node on the cluster's network and subnet with its tag; the cluster's key for the login user, and no
        project-wide key; no service account (libcloud gives the project's default one unless told) unless the
        profile names one."""
        options = access['options']
        account = options.get('service_account')
        kwargs = {'ex_tags': [access['name']],
                  'ex_network': access.get('network') or options.get('network') or access['name'],
                  'ex_metadata': {'ssh-keys': '%s:%s' % (access['ssh_user'], access['public_key']),
                                  'block-project-ssh-keys': 'true'},
                  'ex_service_accounts': [{'email': account, 'scopes': SERVICE_ACCOUNT_SCOPES}] if account else []}
        if access.get('subnet'):
            kwargs['ex_subnetwork'] = access['subnet']
        return kwargs


def label_value(value):
    """A label value GCE takes (lowercase letters, digits, _ and -, at most 63): a version 2.21.0 becomes 2-21-0."""
    return re.sub(r'[^a-z0-9_-]', '-', str(value).lower())[:63]


class GceImages(CloudImages):
    """Images of the driver's project, made from a node's boot disk once the node is stopped (GCE saves the disk of a
    running node only when forced), labelled with tfdist's tags."""

    def create(self, node, name, tags):
        self.driver.ex_stop_node(node)
        labels = dict((key, label_value(value)) for key, value in tags.items())
        return self.driver.ex_create_image(name, node.extra['boot_disk'], description='tfdist baked image',
                                           use_existing=False, wait_for_completion=True, ex_labels=labels)

    def reference(self, image):
        return image.name  # tfdist finds GCE images by name (list_images above)

    def _project_images(self):
        return self.driver.ex_list_project_images(ex_project=self.driver.project, ex_include_deprecated=True)

    def named(self, name):
        return [image for image in self._project_images() if image.name == name]

    def found(self):
        return [image for image in self._project_images() if is_baked(image)]

    def delete(self, image):
        self.driver.ex_delete_image(image)


# Machine type series of Arm CPUs (Tau T2A, Axion C4A, N4A).
ARM_SERIES = ('t2a', 'c4a', 'n4a')


def size_facts(size):
    """vCPUs (extra guestCpus), GPUs (the count of the accelerators attached to the machine type, as A2, A3 and G2
    types have) and architecture of a machine type."""
    extra = size.extra or {}
    gpus = sum(to_int(acc.get('guestAcceleratorCount')) or 0 for acc in extra.get('accelerators') or [])
    arch = 'arm64' if str(size.name).split('-', maxsplit=1)[0] in ARM_SERIES else 'x86_64'
    return SizeFacts(to_int(extra.get('guestCpus')), gpus, arch)


# Compute Engine's error codes by what they mean for a create (libcloud's GoogleBaseError and its subclasses keep the
# code in .code): a quota of the project (https://cloud.google.com/docs/quotas/troubleshoot), and a zone without the
# hardware now (https://cloud.google.com/compute/docs/resource-error), which no quota increase helps.
QUOTA_CODES = ('QUOTA_EXCEEDED', 'quotaExceeded')
CAPACITY_CODES = ('ZONE_RESOURCE_POOL_EXHAUSTED', 'ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS')


def refusal(error, text, attempt):
    """The Refusal of a Compute Engine error by its code; None for a code this does not know."""
    from libcloud.common.google import GoogleAuthError, ResourceNotFoundError
    code = getattr(error, 'code', None)
    if isinstance(error, GoogleAuthError):
        return Refusal('credentials', text, '')
    if code in QUOTA_CODES:
        # "Quota 'NVIDIA_T4_GPUS' exceeded.  Limit: 0.0 in region us-central1."
        quota = re.search(r"Quota '(\w+)' exceeded\.\s*Limit: ([\d.]+)", text)
        why = ("your project's quota %s allows %s" % quota.groups() if quota else "a quota of your project is used up")
        return Refusal('quota', '%s (%s)' % (why, code),
                       'ask for a quota increase (Google Cloud console, IAM & Admin > Quotas%s) or choose another size'
                       % (', %s' % quota.group(1) if quota else ''))
    if code in CAPACITY_CODES:
        kind, what = ('spot_capacity', 'no preemptible capacity') if attempt.spot else ('capacity', 'no capacity')
        standard = ', standard nodes (spot: false)' if attempt.spot else ''
        return Refusal(kind, '%s of this size in the zone now (%s)' % (what, code),
                       'try another zone or size%s, or again later' % standard)
    # "Required 'compute.instances.create' permission for 'projects/...'" (HTTP 403, reason forbidden).
    permission = re.search(r"Required '([\w.]+)' permission", text)
    if permission:
        return Refusal('permission', 'the service account may not use %s (%s)' % (permission.group(1), code),
                       'grant it a role with %s in the project (IAM)' % permission.group(1))
    if isinstance(error, ResourceNotFoundError) and 'machineTypes/' in text:
        return Refusal('size_unavailable', 'the zone does not offer this machine type (%s)' % code,
                       'choose another zone or size')
    return None


PROVIDER = CloudProvider(
    'gce',
    credentials=CREDENTIALS,
    # GCE works per zone.
    region_arg='datacenter',
    region_env=('CLOUDSDK_COMPUTE_ZONE',),
    # GCE's ex_tags are network (firewall) tags: tfdist's tags are labels.
    tag_arg='ex_labels',
    tags_hold_keys=False,
    list_images=list_images,
    access=GceAccess,
    size_facts=size_facts,
    # scheduling.preemptible (libcloud 3.9 knows no provisioningModel SPOT): no automatic restart, no live migration.
    spot_args={'ex_preemptible': True, 'ex_automatic_restart': False, 'ex_on_host_maintenance': 'TERMINATE'},
    spot_name='preemptible',
    # A cluster made with another zone's profile is still found.
    audit_args={'ex_zone': 'all'},
    # The instance metadata's user-data, which cloud-init reads on GCE; next to the ssh-keys of GceAccess.node_kwargs.
    user_data_arg=('ex_metadata', 'user-data'),
    images=GceImages,
    radl=RadlImages('gce', 'gce', place='zone', form='ZONE/IMAGE'),
    title='GCE',
    refusal=refusal,
)
