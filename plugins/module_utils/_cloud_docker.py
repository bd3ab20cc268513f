# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

"""The local Docker Engine as a cloud (provider `docker`): a libcloud driver whose nodes are containers reached
over SSH like VMs. No credentials (the socket's permissions apply), no region, no key pair or firewall of its own.

Each node is a container of a local image (`make images` builds tfdist's), attached only to a user-defined bridge
network of its cluster (`tfdist-<cluster>`), with no published ports: the host reaches it on its bridge IP, the other
nodes on the same network on any port. Containers and networks carry the label `tfdist.managed=true`; the driver
lists, changes and removes nothing else. A node boots one of two ways:

- without user-data, sshd is its only process (under tini), and root logs in with the key given at creation;
- with user-data (`ex_userdata`, as EC2 takes it), it boots like a cloud VM: its image's own init (tfdist/node-vm:
  systemd as PID 1, unprivileged) and cloud-init, which reads the user-data from a NoCloud seed written into the
  container before its first boot. `systemctl poweroff` stops it; started again it boots from its disk, and cloud-init
  knows the instance (its id is the container's) and makes no user or key again.

A node's stopped container, committed, is a baked image (create_image, DockerImages): a local image labelled
tfdist_image, which delete_image removes only when asked (libcloud_image removes no image it did not bake).

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import datetime
import io
import tarfile
import threading
import time
import traceback

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._cluster import TAG_CLUSTER
from ansible_collections.tfdist.cluster.plugins.module_utils._images import CloudImages
from ansible_collections.tfdist.cluster.plugins.module_utils._provider import CloudProvider, RadlImages, TfdistCloudError

try:
    import docker
    from docker.errors import APIError, DockerException, NotFound
except ImportError:
    HAS_DOCKER = False
    DOCKER_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_DOCKER = True
    DOCKER_IMPORT_ERROR = None

try:
    from libcloud.compute.base import Node, NodeAuthSSHKey, NodeDriver, NodeImage, NodeLocation, NodeSize
except ImportError:
    NodeDriver = object  # the modules report the missing library before any driver is built

MANAGED_LABEL = 'tfdist.managed'
SIZE_LABEL = 'tfdist.size'
GIB = 1024 ** 3

# Size id -> (CPUs, memory in GiB); None: no limit. `host` shares the whole machine.
SIZES = {
    'small': (1, 2),
    'medium': (2, 4),
    'large': (4, 8),
    'host': (None, None),
}

# Docker container state -> libcloud NodeState value.
_STATES = {
    'running': 'running',
    'created': 'pending',
    'restarting': 'pending',
    'paused': 'paused',
    'exited': 'stopped',
    'removing': 'terminated',
    'dead': 'terminated',
}

# Installs the key given in the environment, makes this container's own host key, then serves SSH.
# One ed25519 host key (ssh-keygen -A also makes an RSA one: 0.1 to 0.5 s of CPU at every node's start).
_NODE_COMMAND = r'''set -e
mkdir -p /run/sshd /root/.ssh
chmod 700 /root/.ssh
if [ -n "$TFDIST_AUTHORIZED_KEY" ]; then
    printf '%s\n' "$TFDIST_AUTHORIZED_KEY" > /root/.ssh/authorized_keys
    chmod 600 /root/.ssh/authorized_keys
fi
host_key=/etc/ssh/ssh_host_ed25519_key
[ -f "$host_key" ] || ssh-keygen -q -t ed25519 -N '' -f "$host_key"
exec /usr/sbin/sshd -D -e -o HostKey="$host_key"
'''

# What systemd as PID 1 needs in an unprivileged container (the engine refuses --privileged, and none is needed): the
# cgroup tree to read, and its own /run. The image stops with SIGRTMIN+3, systemd's orderly shutdown.
_VM_VOLUMES = {'/sys/fs/cgroup': {'bind': '/sys/fs/cgroup', 'mode': 'ro'}}
_VM_TMPFS = {'/run': '', '/run/lock': ''}
# cloud-init's NoCloud datasource reads user-data and meta-data from this folder (tfdist/node-vm looks nowhere else).
SEED_DIR = '/var/lib/cloud/seed/nocloud'

# Threads of one process (libcloud_node creates nodes in parallel) must not create a cluster network twice:
# Docker allows two networks of the same name.
_NETWORK_LOCK = threading.Lock()
# A network with no container left may still refuse removal for its 'active endpoints' while the engine releases
# them. Once, with 32 containers removed in parallel on 2 cores, the engine kept one for good (until it restarted).
_ENDPOINT_RELEASE_SECONDS = 3.0


def network_name(cluster):
    return 'tfdist-%s' % cluster


def node_state(docker_state):
    return _STATES.get(docker_state, 'unknown')


def size_limits(size_id):
    """docker run keyword arguments limiting a container to the size `size_id`."""
    if size_id not in SIZES:
        raise TfdistCloudError('Unknown docker size %r; known sizes: %s' % (size_id, ', '.join(SIZES)))
    cpus, memory = SIZES[size_id]
    limits = {}
    if cpus:
        limits['nano_cpus'] = cpus * 10 ** 9
    if memory:
        limits['mem_limit'] = memory * GIB
    return limits


class DockerNodeDriver(NodeDriver):
    """Nodes are containers of the local Docker Engine; no credentials (the socket's permissions apply)."""

    name = 'Docker Engine (tfdist)'
    website = 'https://docs.docker.com/engine/'
    type = 'docker'
    features = {'create_node': ['ssh_key']}

    def __init__(self, host=None, timeout=60, region=None, **kwargs):
        """`host`: the engine's URL (unix:///var/run/docker.sock, tcp://...), else DOCKER_HOST or the default socket.

        `region` is accepted and ignored, as a local engine has none.
        """
        if not HAS_DOCKER:
            raise TfdistCloudError(missing_required_lib('docker', reason='provider docker'))
        try:
            if host:
                self.client = docker.DockerClient(base_url=host, timeout=timeout)
            else:
                self.client = docker.from_env(timeout=timeout)
        except DockerException as e:
            raise TfdistCloudError('Cannot reach the Docker engine at %s: %s (is dockerd running? '
                                   'see scripts/ensure-docker.sh)' % (host or 'the default socket', e)) from e
        self.api = self.client.api  # the low-level API: one HTTP call per method
        self.connection = None

    # Sizes, images, locations

    def list_sizes(self, location=None):
        return [NodeSize(id=size_id, name=size_id, ram=memory * 1024 if memory else 0, disk=0, bandwidth=0,
                         price=0, driver=self, extra={'cpus': cpus})
                for size_id, (cpus, memory) in SIZES.items()]

    def list_images(self, location=None, ex_only_active=True):
        """One image per local tag (the tag is both id and name), so an image is picked by its tag."""
        images = []
        for image in self.api.images():
            for tag in image.get('RepoTags') or []:
                if tag != '<none>:<none>':
                    images.append(NodeImage(id=tag, name=tag, driver=self,
                                            extra={'image_id': image['Id'], 'size': image.get('Size'),
                                                   'labels': image.get('Labels') or {}}))
        return images

    def create_image(self, node, name, description=None, ex_labels=None):
        """Save the node's container as the local image `name` (a tag, `name:latest` unless it names its own tag).

        The container is stopped first, as a cloud stops a VM for a consistent disk. The image carries ex_labels, and
        none of the labels the container got as a node: the engine keeps a committed container's labels in its image,
        and every container made from it, so those are emptied (a container of the image is nobody's node until its
        creation labels it).
        """
        container = self.client.containers.get(node.id)
        if container.status == 'running':
            container.stop(timeout=10)
        source_labels = container.image.labels or {}
        labels = dict((key, '') for key, value in (container.labels or {}).items() if source_labels.get(key) != value)
        labels.update((str(key), str(value)) for key, value in (ex_labels or {}).items())
        repository, dummy, tag = name.partition(':')
        self.api.commit(container.id, repository=repository, tag=tag or 'latest', message=description,
                        conf={'Labels': labels})
        reference = '%s:%s' % (repository, tag or 'latest')
        return next(image for image in self.list_images() if image.id == reference)

    def delete_image(self, node_image):
        """Remove the image's tag, and the image with its last tag (the engine refuses while a container uses it)."""
        self.api.remove_image(node_image.id)
        return True

    def list_locations(self):
        return [NodeLocation(id='local', name='local', country='', driver=self)]

    # Nodes

    def list_nodes(self):
        """The containers labelled tfdist.managed=true, in any state, from one API call."""
        summaries = self.api.containers(all=True, filters={'label': '%s=true' % MANAGED_LABEL})
        return [self._to_node(summary) for summary in summaries]

    def create_node(self, name, size, image, location=None, auth=None, ex_metadata=None, ex_network=None,
                    ex_authorized_key=None, ex_env=None, ex_volumes=None, ex_userdata=None, **kwargs):
        """Run a container `name` of `image` (a tag) serving SSH on the cluster network; returns its Node.

        ex_metadata: labels (the tfdist tags); ex_network: the network (default tfdist-<tfdist_cluster tag>);
        ex_authorized_key: public key text for root (or `auth`, a NodeAuthSSHKey); ex_env: environment dict;
        ex_volumes: volumes as a dict, as docker-py's run() takes them; ex_userdata: user-data (str or bytes) for
        cloud-init: the container boots its image's own init instead of sshd alone, and the key arguments are left to
        the user-data. Other keyword arguments go to docker-py's containers.create() as they are.
        """
        size_id = getattr(size, 'id', size)
        labels = dict((str(key), str(value)) for key, value in (ex_metadata or {}).items())
        labels.update({MANAGED_LABEL: 'true', SIZE_LABEL: size_id})
        cluster = labels.get(TAG_CLUSTER)
        network = ex_network or (cluster and network_name(cluster))
        if not network:
            raise TfdistCloudError('create_node %s: give ex_network or a %s tag in ex_metadata'
                                   % (name, TAG_CLUSTER))
        if ex_userdata is None:
            if auth is not None and isinstance(auth, NodeAuthSSHKey):
                ex_authorized_key = ex_authorized_key or auth.pubkey
            boot = dict(command=['/bin/sh', '-c', _NODE_COMMAND], volumes=ex_volumes,
                        environment=dict(ex_env or {}, TFDIST_AUTHORIZED_KEY=(ex_authorized_key or '').strip()),
                        init=True)  # tini as PID 1 reaps the processes that daemonize under sshd
        else:
            boot = dict(command=None, volumes=dict(_VM_VOLUMES, **(ex_volumes or {})), environment=ex_env,
                        tmpfs=dict(_VM_TMPFS))
        create_kwargs = dict(size_limits(size_id), **kwargs)
        self._ensure_network(network, cluster)
        container = self.client.containers.create(
            getattr(image, 'id', image), name=name, hostname=name, labels=labels, network=network,
            **dict(boot, **create_kwargs))
        try:
            if ex_userdata is not None:
                self._write_seed(container.id, name, ex_userdata)
            container.start()
        except Exception:
            # Not left behind as a pending node that later runs would wait for.
            self.api.remove_container(container.id, force=True)
            raise
        return self._get_node(container.id)

    def reboot_node(self, node):
        self.api.restart(node.id, timeout=10)
        return True

    def start_node(self, node):
        self.api.start(node.id)
        return True

    def stop_node(self, node):
        self.api.stop(node.id, timeout=10)
        return True

    def destroy_node(self, node):
        """Remove the container; then its network too if tfdist made it and no container is left on it."""
        try:
            self.api.remove_container(node.id, force=True)
        except NotFound:
            pass  # already gone: what destroy wants
        network = (node.extra or {}).get('network')
        if network:
            self._remove_network_if_unused(network)
        return True

    def wait_until_running(self, nodes, wait_period=5, timeout=600, ssh_interface='public_ips', force_ipv4=True,
                           ex_list_nodes_kwargs=None):
        # Containers have no public IP: the cluster-network IP is the address to wait for, whatever was asked.
        return super().wait_until_running(nodes, wait_period=wait_period, timeout=timeout,
                                          ssh_interface='private_ips', force_ipv4=force_ipv4,
                                          ex_list_nodes_kwargs=ex_list_nodes_kwargs)

    def ex_destroy_leftovers(self, cluster, check_mode=False):
        """What the cluster left once it has no container: its network, when tfdist made it (a destroy cut short between
        the last container and the network, or a create that failed before the first container). Removed unless
        check_mode; returns their descriptions."""
        network = network_name(cluster)
        return ['network %s' % network] if self._remove_network_if_unused(network, check_mode) else []

    def ex_audit_found(self, options=None):
        """The cluster networks (labelled tfdist.managed=true) as the leak audit lists them: [(kind, id, name, cluster)]
        (the containers are the nodes). A network outlives its cluster when a destroy stopped before it or no container was
        ever created on it; the next destroy removes it (ex_destroy_leftovers)."""
        found = []
        for network in self.api.networks(filters={'label': '%s=true' % MANAGED_LABEL}):
            labels = network.get('Labels') or {}
            name = network.get('Name')
            cluster = labels.get(TAG_CLUSTER) or (name[len(network_name('')):] if name.startswith(network_name('')) else None)
            if cluster:
                found.append(('network', network.get('Id'), name, cluster))
        return found

    # Helpers

    def _write_seed(self, container_id, name, user_data):
        """cloud-init's NoCloud seed on the container's disk, before its first boot: the user-data, and meta-data
        with the container's id as the instance id (root's only: user-data may hold secrets)."""
        files = {'user-data': user_data if isinstance(user_data, bytes) else user_data.encode(),
                 'meta-data': ('instance-id: %s\nlocal-hostname: %s\n' % (container_id, name)).encode()}
        archive = io.BytesIO()
        with tarfile.open(fileobj=archive, mode='w') as tar:
            folder = SEED_DIR.lstrip('/')
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o700
            tar.addfile(info)
            for file_name, data in files.items():
                info = tarfile.TarInfo('%s/%s' % (folder, file_name))
                info.size, info.mode = len(data), 0o600
                tar.addfile(info, io.BytesIO(data))
        self.api.put_archive(container_id, '/', archive.getvalue())

    def _get_node(self, container_id):
        summaries = self.api.containers(all=True, filters={'id': container_id})
        if not summaries:
            raise TfdistCloudError('container %s vanished right after it was created' % container_id)
        return self._to_node(summaries[0])

    def _to_node(self, summary):
        labels = summary.get('Labels') or {}
        network = (summary.get('HostConfig') or {}).get('NetworkMode')
        networks = (summary.get('NetworkSettings') or {}).get('Networks') or {}
        ip = (networks.get(network) or {}).get('IPAddress')
        size = next((s for s in self.list_sizes() if s.id == labels.get(SIZE_LABEL)), None)
        image = NodeImage(id=summary.get('Image'), name=summary.get('Image'), driver=self)
        return Node(
            id=summary['Id'],
            name=(summary.get('Names') or ['/' + summary['Id'][:12]])[0].lstrip('/'),
            state=node_state(summary.get('State')),
            public_ips=[],
            private_ips=[ip] if ip else [],
            driver=self,
            size=size,
            image=image,
            created_at=datetime.datetime.fromtimestamp(summary.get('Created', 0), datetime.timezone.utc),
            extra={
                'container_id': summary['Id'],
                'tags': labels,
                'network': network,
                'image': summary.get('Image'),
                'image_id': summary.get('ImageID'),
                'docker_state': summary.get('State'),
                'status': summary.get('Status'),
            },
        )

    def _ensure_network(self, network, cluster):
        with _NETWORK_LOCK:
            try:
                self.api.inspect_network(network)
                return
            except NotFound:
                pass
            labels = {MANAGED_LABEL: 'true'}
            if cluster:
                labels[TAG_CLUSTER] = cluster
            self.api.create_network(network, driver='bridge', labels=labels, check_duplicate=True)

    def _remove_network_if_unused(self, network, check_mode=False):
        """True when the network was tfdist's and had no container left: removed, unless check_mode."""
        with _NETWORK_LOCK:
            try:
                labels = self.api.inspect_network(network).get('Labels') or {}
            except NotFound:
                return False
            if labels.get(MANAGED_LABEL) != 'true':
                return False  # the user's own network: never ours to remove
            deadline = time.monotonic() + _ENDPOINT_RELEASE_SECONDS
            while True:
                if self.api.containers(all=True, filters={'network': network}):
                    return False  # a container is on it (another run joined it meanwhile): it stays
                if check_mode:
                    return True
                try:
                    self.api.remove_network(network)
                    return True
                except NotFound:
                    return False
                except APIError as e:
                    if 'active endpoints' not in str(e):
                        raise
                    if time.monotonic() > deadline:
                        raise TfdistCloudError(
                            'network %s has no container left, yet the engine still counts active endpoints on it '
                            '%.0f s later and refuses to remove it; restart the Docker engine, then: docker network rm %s'
                            % (network, _ENDPOINT_RELEASE_SECONDS, network)) from e
                time.sleep(0.2)  # no container left: the engine may still be releasing their endpoints


class DockerImages(CloudImages):
    """Baked images of the local engine: a node's container committed (create_image), tfdist's labels on the image; an
    image's name is its tag (`name:latest`)."""

    def create(self, node, name, tags):
        return self.driver.create_image(node, name, description='tfdist baked image', ex_labels=tags)

    def named(self, name):
        return [image for image in self.driver.list_images() if image.name in (name, name + ':latest')]


PROVIDER = CloudProvider('docker', driver=DockerNodeDriver, tag_arg='ex_metadata', user_data_arg='ex_userdata',
                         images=DockerImages, radl=RadlImages('docker', 'docker', form='IMAGE[:TAG]'))
