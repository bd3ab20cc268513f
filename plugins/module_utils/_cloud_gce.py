# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

"""Google Compute Engine (libcloud provider `gce`): service-account credentials, zone, labels, image lookup by
name or family, and the cluster's firewall rules on a network tag.

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import re

from ansible_collections.tfdist.cluster.plugins.module_utils._access import ClusterAccess, access_cluster, port_text
from ansible_collections.tfdist.cluster.plugins.module_utils._images import CloudImages, is_baked
from ansible_collections.tfdist.cluster.plugins.module_utils._provider import CloudProvider, RadlImages
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


class GceAccess(ClusterAccess):
    """Two firewall rules on the network, tfdist-<cluster>-ssh and -internal, aimed at the network tag
    tfdist-<cluster> that every node of the cluster carries. The key goes into each node's metadata."""

    def _wanted(self):
        network = self.options.get('network', 'default')
        ssh = dict(allowed=[{'IPProtocol': 'tcp', 'ports': [port_text(*r) for r in self.public]}], source_ranges=self.ssh_cidrs,
                   source_tags=None, target_tags=[self.name], network=network)
        internal = dict(allowed=[{'IPProtocol': 'tcp', 'ports': [port_text(*r) for r in self.ports]}],
                        source_ranges=None, source_tags=[self.name], target_tags=[self.name], network=network)
        wanted = {self.name + '-ssh': ssh}
        if self.ports:  # GCE reads an empty port list as every port
            wanted[self.name + '-internal'] = internal
        return wanted

    def _existing(self):
        return dict((fw.name, fw) for fw in self.driver.ex_list_firewalls()
                    if fw.name in (self.name + '-ssh', self.name + '-internal'))

    @staticmethod
    def _differs(firewall, spec):
        def norm(value):
            return sorted(value or [], key=str)
        return (norm(firewall.allowed) != norm(spec['allowed']) or norm(firewall.source_ranges) != norm(spec['source_ranges'])
                or norm(firewall.source_tags) != norm(spec['source_tags'])
                or norm(firewall.target_tags) != norm(spec['target_tags'])
                or str(firewall.network.name if hasattr(firewall.network, 'name') else firewall.network)
                != spec['network'])

    def present(self, public_key, check_mode=False):
        existing, wanted = self._existing(), self._wanted()
        for name in sorted(set(existing) - set(wanted)):
            self.changed('firewall %s removed' % name)
            if not check_mode:
                self.driver.ex_destroy_firewall(existing[name])
        for name, spec in sorted(wanted.items()):
            firewall = existing.get(name)
            if firewall is None:
                self.changed('firewall %s' % name)
                if not check_mode:
                    self.driver.ex_create_firewall(name, description='tfdist cluster %s' % self.cluster, **spec)
            elif self._differs(firewall, spec):
                self.changed('firewall %s rules' % name)
                if not check_mode:
                    for attr in ('allowed', 'source_ranges', 'source_tags', 'target_tags'):
                        setattr(firewall, attr, spec[attr])
                    self.driver.ex_update_firewall(firewall)
        facts = self.facts(self.name)
        facts['public_key'] = public_key
        return facts

    def absent(self, check_mode=False):
        for name, firewall in sorted(self._existing().items()):
            self.changed('firewall %s' % name)
            if not check_mode:
                self.driver.ex_destroy_firewall(firewall)

    @staticmethod
    def found(driver, options):
        """Every cluster's firewall rules, tfdist-<cluster>-ssh and -internal (GCE firewalls carry no labels)."""
        found = []
        for firewall in driver.ex_list_firewalls():
            for suffix in ('-ssh', '-internal'):
                cluster = access_cluster(firewall.name, suffix)
                if cluster:
                    found.append(('firewall rule', str(firewall.id), firewall.name, cluster))
                    break
        return found

    @staticmethod
    def node_kwargs(driver, access):
        return {'ex_tags': [access['name']], 'ex_network': access['options'].get('network', 'default'),
                'ex_metadata': {'ssh-keys': '%s:%s' % (access['ssh_user'], access['public_key'])}}


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


PROVIDER = CloudProvider(
    'gce',
    credentials=CREDENTIALS,
    # GCE works per zone.
    region_arg='datacenter',
    region_env=('CLOUDSDK_COMPUTE_ZONE',),
    # GCE's ex_tags are network (firewall) tags: tfdist's tags are labels.
    tag_arg='ex_labels',
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
)
