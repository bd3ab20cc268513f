# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""The storage policy: what a data or model URL means, who reads it, and how its bytes move.

One home for every rule about a URL: `classify` says what a setting's value is (built-in dataset,
local path, http(s), a storage URL, the cluster's own HDFS), `storage_plan` applies that to a job's
settings (what the controller reads and writes, what the chief does itself, what the nodes need),
and `filesystem` maps a storage URL to an fsspec file system. The playbooks use it through the
tfdist.cluster.storage_url and storage_plan filters, the storage module and the node-side training
program call it directly.

TensorFlow 2.21 has no hdfs:// or s3:// file system and tensorflow-io no longer loads on it, so tfdist
moves bytes with fsspec (s3fs for S3, its WebHDFS client for HDFS) and stages them on local disk.

Standard library besides fsspec (optional until bytes move): it is shipped to the nodes too.
Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import posixpath
import traceback
import urllib.parse

from ._files import FILE_MODE, make_folder


def fsspec_import_error():
    """None when fsspec imports, else why not (its traceback).

    fsspec is imported on first use, not with this file: planning (storage_url, storage_plan) runs in every task
    that templates the storage settings, each in a fresh worker process of the controller, and needs none of it
    (its import cost a tenth of a second per task).
    """
    try:
        import fsspec  # noqa: F401  pylint: disable=unused-import
    except ImportError:
        return traceback.format_exc()
    return None


# Folders and files read and written through fsspec.
SCHEMES = ('file', 'hdfs', 'webhdfs', 's3')
# What a dataset may also be: a built-in dataset of the training role, or a web download.
BUILTIN_PREFIX = 'builtin:'
# The ports of the cluster's own HDFS (Hadoop 3's numbers): the hdfs role's defaults, opened between the nodes.
HDFS_PORTS = {'namenode_rpc': 8020, 'namenode_http': 9870, 'datanode': 9866, 'datanode_http': 9864, 'datanode_ipc': 9867}
WEBHDFS_PORT = HDFS_PORTS['namenode_http']
# hdfs:///PATH names no NameNode: it is the cluster's own HDFS (tf_hdfs).
CLUSTER_HDFS = 'hdfs:///'
# What the nodes' virtualenv needs to reach storage URLs themselves.
NODE_PACKAGES = {'fsspec': 'fsspec==2026.9.0', 's3': 's3fs==2026.9.0'}


class StorageError(Exception):
    """Something about a storage setting the user can fix; the message starts with the setting's name."""


# ---------------------------------------------------------------- what a value means


def classify(value, field='url', cwd=None, hdfs_uri=None):
    """What a data or folder setting holds, as a dict.

    kind: builtin (a dataset of the training role), local (a path or file:// URL on this host),
    http (downloaded by whoever trains), storage (an hdfs://, webhdfs:// or s3:// URL moved with
    fsspec), unknown (another scheme) or empty. path: the local path of a local value.
    on_cluster: an hdfs:/// URL, the cluster's own HDFS. url: the value with a relative path made
    absolute against cwd, and hdfs:/// resolved against hdfs_uri when given.
    """
    value = (value or '').strip()
    info = {'field': field, 'value': value, 'kind': 'empty', 'scheme': '', 'url': value, 'path': '',
            'on_cluster': False}
    if not value:
        return info
    if value.startswith(BUILTIN_PREFIX):
        info.update(kind='builtin', scheme='builtin', path=value[len(BUILTIN_PREFIX):])
        return info
    scheme = urllib.parse.urlparse(value).scheme
    if len(scheme) < 2:  # a path (a one-letter scheme would be a Windows drive)
        path = value if os.path.isabs(value) or not cwd else os.path.join(cwd, value)
        info.update(kind='local', scheme='file', url=path, path=path)
        return info
    info['scheme'] = scheme
    if scheme == 'file':
        info.update(kind='local', path=urllib.parse.unquote(urllib.parse.urlparse(value).path))
    elif scheme in ('http', 'https'):
        info['kind'] = 'http'
    elif scheme in SCHEMES:
        info['kind'] = 'storage'
        if value.startswith(CLUSTER_HDFS):
            info['on_cluster'] = True
            if hdfs_uri:
                info['url'] = hdfs_uri.rstrip('/') + '/' + value[len(CLUSTER_HDFS):]
    else:
        info['kind'] = 'unknown'
    return info


def folder_url_error(value, field):
    """'' when value is a folder URL that can be written through fsspec (file://, hdfs://, webhdfs://, s3://),
    else the message that names the field."""
    if urllib.parse.urlparse(value).scheme in SCHEMES:
        return ''
    return '%s: %s must be a file://, hdfs://, webhdfs:// or s3:// folder URL' % (field, value)


def _split(value):
    if isinstance(value, (list, tuple)):
        items = value
    else:
        items = (value or '').split(',')
    return [item.strip() for item in items if item and item.strip()]


def storage_plan(tf_data, tf_stage_data='', tf_model_url='', tf_checkpoint_url='', tf_hdfs=False, cwd=None,
                 cache_dir=None, hdfs_uri=None):
    """What a job does with its storage settings (the tf_* variables of deploy.yml), as a dict.

    data: classify(tf_data) plus `reader`: controller (a storage URL off the cluster, read with the
    controller's credentials and staged, so nodes hold none), nodes (http(s), or the cluster's HDFS,
    which only the nodes reach) or copy (built-in or local: the training role copies it); `staged`, the
    controller path a read URL lands at; `node_value`, what the training program is given.
    stage: the local file copied to tf_data first, and who does it: the chief (on_chief, to the cluster HDFS) or
    the controller (on_controller).
    model_urls: every tf_model_url folder; controller_model_urls the ones the controller writes,
    chief_model_url the one on the cluster HDFS, which the chief writes itself.
    checkpoint_url: resolved. controller_checks: the URLs the controller checks before anything is made;
    chief_checks: the URLs the chief checks itself before training.
    node_packages: what the nodes' virtualenv needs for what they reach.
    errors: the messages of settings that cannot work, each starting with the setting's name.
    """
    data = classify(tf_data, 'tf_data', cwd, hdfs_uri)
    stage = classify(tf_stage_data, 'tf_stage_data', cwd)
    models = [classify(url, 'tf_model_url', cwd, hdfs_uri) for url in _split(tf_model_url)]
    checkpoint = classify(tf_checkpoint_url, 'tf_checkpoint_url', cwd, hdfs_uri)
    _add_reader(data, cache_dir)
    reached = _reached_by_nodes(data, checkpoint, models)
    controller_model_urls = [item['value'].rstrip('/') for item in models if not item['on_cluster']]
    return {
        'data': data,
        'stage': dict(stage, on_chief=stage['kind'] != 'empty' and data['on_cluster'],
                      on_controller=stage['kind'] == 'local' and not data['on_cluster']),
        'model_urls': [item['value'] for item in models],
        'controller_model_urls': controller_model_urls,
        'chief_model_url': next((item['url'] for item in models if item['on_cluster']), ''),
        'checkpoint_url': checkpoint['url'],
        'controller_checks': _controller_checks(data, bool(tf_stage_data), controller_model_urls),
        # What the chief checks itself before training: what it reads from the cluster HDFS, and the folders it writes.
        'chief_checks': [{'field': item['field'], 'url': item['url'], 'check': check} for item, check in reached],
        'node_packages': _node_packages(reached),
        'errors': _plan_errors(data, stage, models, checkpoint, tf_hdfs),
    }


def _plan_errors(data, stage, models, checkpoint, tf_hdfs):
    """The messages of the settings that cannot work together, each starting with the setting's name."""
    errors = []
    for item in [item for item in [data, checkpoint] + models if item['on_cluster']]:
        if not tf_hdfs:
            errors.append('%s: %s is on the cluster HDFS (hdfs:/// names no NameNode): add -e tf_hdfs=true, '
                          'or name the NameNode (hdfs://HOST:PORT/PATH)' % (item['field'], item['value']))
        elif len(item['value']) <= len(CLUSTER_HDFS) or item['value'][len(CLUSTER_HDFS)] == '/':
            errors.append('%s: %s names no file or folder' % (item['field'], item['value']))
    if data['kind'] == 'unknown':
        errors.append('tf_data: %s: unsupported URL scheme %r; use builtin:NAME, a path, http(s)://, %s'
                      % (data['value'], data['scheme'], ', '.join('%s://' % s for s in SCHEMES)))
    if checkpoint['value'] and folder_url_error(checkpoint['value'], 'tf_checkpoint_url'):
        errors.append(folder_url_error(checkpoint['value'], 'tf_checkpoint_url'))
    if len([item for item in models if item['on_cluster']]) > 1:
        errors.append('tf_model_url: give at most one folder on the cluster HDFS (hdfs:///...)')
    if stage['kind'] != 'empty' and data['kind'] != 'storage':
        errors.append('tf_stage_data: %s is copied to tf_data, which must then be an s3:// or hdfs:// URL (got %s)'
                      % (stage['value'], data['value']))
    return errors


def _add_reader(data, cache_dir):
    """Add to classify(tf_data) who reads it (reader), where the controller stages it (staged) and what the
    training program is given (node_value)."""
    if data['kind'] == 'storage' and not data['on_cluster']:
        data['reader'] = 'controller'
    elif data['kind'] in ('http', 'storage'):
        data['reader'] = 'nodes'
    else:
        data['reader'] = 'copy'
    data['staged'] = ''
    if data['reader'] == 'controller' and cache_dir:
        digest = hashlib.sha1(data['value'].encode()).hexdigest()[:12]
        data['staged'] = os.path.join(cache_dir, '%s-%s' % (digest, posixpath.basename(data['value'])))
    data['node_value'] = data['staged'] or data['url']


def _reached_by_nodes(data, checkpoint, models):
    """[(item, 'read' or 'write')] of the settings whose bytes the nodes move through fsspec themselves: what is on
    the cluster HDFS, and the checkpoint folder (http(s) needs nothing)."""
    return [(item, check) for item, check in [(data, 'read'), (checkpoint, 'write')] + [(m, 'write') for m in models]
            if item['on_cluster'] or (item is checkpoint and item['kind'] != 'empty')]


def _node_packages(reached):
    """What the nodes' virtualenv needs for what they reach."""
    packages = [NODE_PACKAGES['fsspec']] if reached else []
    if any(item['scheme'] == 's3' for item, check in reached):
        packages.append(NODE_PACKAGES['s3'])
    return packages


def _controller_checks(data, stages_data, controller_model_urls):
    """What the controller checks before anything is made: the dataset it reads (or writes, staging tf_stage_data
    there), and the model folders it writes."""
    checks = []
    if data['reader'] == 'controller':
        checks.append({'field': 'tf_data', 'url': data['value'], 'check': 'write' if stages_data else 'read'})
    return checks + [{'field': 'tf_model_url', 'url': url, 'check': 'write'} for url in controller_model_urls]


# ---------------------------------------------------------------- moving bytes


def filesystem(url, field='url', options=None):
    """(fsspec file system, path) of a storage URL; `field` names the setting in every error.

    hdfs://NAMENODE[:RPC_PORT]/PATH goes through WebHDFS on NAMENODE:webhdfs_port (no Hadoop client),
    as options['hdfs_user'], else $HADOOP_USER_NAME, else the login name. s3:// uses the standard AWS
    variables (AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL for another S3 store); credentials are never
    passed through here.
    """
    options = options or {}
    parsed = urllib.parse.urlparse(url)
    scheme = parsed.scheme if len(parsed.scheme) > 1 else 'file'
    if scheme not in SCHEMES:
        raise StorageError('%s: %r: unsupported URL scheme %r; use %s'
                           % (field, url, scheme, ', '.join('%s://' % s for s in SCHEMES)))
    try:
        import fsspec
    except ImportError:
        raise StorageError('%s: %s: this URL needs the fsspec package (and s3fs for s3://); '
                           'TensorFlow 2.21 itself reads no hdfs:// or s3://' % (field, url)) from None
    if scheme == 'file':
        return fsspec.filesystem('file'), urllib.parse.unquote(parsed.path) if parsed.scheme else url
    if not parsed.netloc:
        raise StorageError('%s: %r has no %s' % (field, url, 'bucket' if scheme == 's3' else 'namenode host'))
    if scheme == 's3':
        client_kwargs = {}
        endpoint = (options.get('s3_endpoint_url') or os.environ.get('AWS_ENDPOINT_URL_S3')
                    or os.environ.get('AWS_ENDPOINT_URL'))
        if endpoint:
            client_kwargs['endpoint_url'] = endpoint
        region = options.get('s3_region') or os.environ.get('AWS_DEFAULT_REGION') or os.environ.get('AWS_REGION')
        if region:
            client_kwargs['region_name'] = region
        fs = fsspec.filesystem('s3', client_kwargs=client_kwargs, skip_instance_cache=True)
        return fs, parsed.netloc + parsed.path
    port = (parsed.port if scheme == 'webhdfs' and parsed.port else None) or options.get('webhdfs_port') \
        or os.environ.get('TFDIST_WEBHDFS_PORT') or WEBHDFS_PORT
    user = options.get('hdfs_user') or os.environ.get('HADOOP_USER_NAME') or getpass.getuser()
    fs = fsspec.filesystem('webhdfs', host=parsed.hostname, port=int(port), user=user, skip_instance_cache=True)
    return fs, parsed.path or '/'


def explain(field, url, error):
    """A message for a storage error that names the setting and says what to check."""
    text = str(error) or type(error).__name__
    if isinstance(error, PermissionError) or any(word in text for word in (
            'InvalidAccessKeyId', 'SignatureDoesNotMatch', 'AccessDenied', 'Forbidden', 'NoCredentialsError',
            'Unable to locate credentials')):
        return ('%s: %s: the storage refused the credentials (%s); check AWS_ACCESS_KEY_ID and '
                'AWS_SECRET_ACCESS_KEY' % (field, url, text))
    if 'NoSuchBucket' in text or 'bucket does not exist' in text.lower():
        return '%s: %s: the bucket does not exist (%s)' % (field, url, text)
    if (isinstance(error, (ConnectionError, OSError)) and not isinstance(error, FileNotFoundError)) \
            or 'Max retries' in text or 'Connection refused' in text or 'Name or service not known' in text:
        return '%s: %s: cannot reach the storage (%s); check the namenode or endpoint address' % (field, url, text)
    return '%s: %s: %s' % (field, url, text)


def _check_bucket(fs, bucket, field, url):
    """HeadBucket: a missing bucket and refused credentials are told apart (exists() says False to both)."""
    try:
        fs.call_s3('head_bucket', Bucket=bucket)
    except FileNotFoundError:
        raise StorageError('%s: %s: the bucket %r does not exist' % (field, url, bucket))


def check(url, field, mode='read', options=None):
    """Raise StorageError naming `field` unless url can be read (an existing file) or written (its parent)."""
    fs, path = filesystem(url, field, options)
    try:
        # The store itself first: exists() would report a wrong NameNode or a missing bucket as a missing file.
        if url.startswith(('hdfs://', 'webhdfs://')):
            fs.ls('/')
        elif url.startswith('s3://'):
            _check_bucket(fs, path.split('/', 1)[0], field, url)
        if mode == 'read':
            if not fs.exists(path):
                raise StorageError('%s: %s does not exist' % (field, url))
            if fs.isdir(path):
                raise StorageError('%s: %s is a folder; give a file' % (field, url))
        elif '://' not in url or url.startswith('file://'):
            existing = os.path.dirname(path.rstrip('/')) or '/'
            while not os.path.exists(existing):
                existing = os.path.dirname(existing)
            if not os.access(existing, os.W_OK):
                raise StorageError('%s: %s: cannot write under %s' % (field, url, existing))
    except StorageError:
        raise
    except Exception as e:
        raise StorageError(explain(field, url, e))


def ensure_folder(url, field, options=None):
    """(fs, path) of a folder URL made ready for writing. A missing S3 bucket is an error: fsspec would create it."""
    fs, path = filesystem(url, field, options)
    try:
        if url.startswith('s3://'):
            _check_bucket(fs, path.split('/', 1)[0], field, url)
        else:
            fs.makedirs(path, exist_ok=True)
    except StorageError:
        raise
    except Exception as e:
        raise StorageError(explain(field, url, e))
    return fs, path


def version(url, field, options=None):
    """Size and modification time of a URL ('' for http): new content at the same URL is fetched again."""
    if urllib.parse.urlparse(url).scheme in ('http', 'https'):
        return ''
    fs, path = filesystem(url, field, options)
    try:
        info = fs.info(path)
    except Exception as e:
        raise StorageError(explain(field, url, e))
    return '%s:%s' % (info.get('size'), info.get('modificationTime') or info.get('LastModified') or info.get('mtime'))


def upload(local, url, field, options=None):
    """Copy a local file (or a folder, recursively) to url; returns the list of paths written."""
    fs, path = filesystem(url, field, options)
    try:
        if os.path.isdir(local):
            fs.put(local.rstrip('/') + '/', path.rstrip('/') + '/', recursive=True)
        else:
            parent = path.rsplit('/', 1)[0]
            if parent and not url.startswith('s3://'):
                fs.makedirs(parent, exist_ok=True)
            fs.put_file(local, path)
        return sorted(fs.find(path)) if os.path.isdir(local) else [path]
    except Exception as e:
        raise StorageError(explain(field, url, e))


def download(url, local, field, options=None):
    """Copy url (a storage or http(s) URL) to the local file `local`, atomically; returns its size in bytes. The file
    and the folders made for it are the user's alone, as the job's own files (_files)."""
    make_folder(os.path.dirname(local) or '.')
    part = '%s.part.%d' % (local, os.getpid())
    try:
        if urllib.parse.urlparse(url).scheme in ('http', 'https'):
            # Standard library only (this file runs on the nodes too), hence no ansible.module_utils.urls.
            from urllib.request import build_opener  # on first use, as fsspec (see fsspec_import_error)
            with build_opener().open(url, timeout=60) as response, open(part, 'wb') as handle:
                for chunk in iter(lambda: response.read(1 << 20), b''):
                    handle.write(chunk)
        else:
            fs, path = filesystem(url, field, options)
            fs.get_file(path, part)
    except StorageError:
        raise
    except Exception as e:
        if os.path.exists(part):
            os.remove(part)
        raise StorageError(explain(field, url, e))
    os.chmod(part, FILE_MODE)
    os.replace(part, local)
    return os.path.getsize(local)


def same_content(local, url, field, options=None):
    """True when url holds a file of the same size as local (cheap idempotence for uploads)."""
    fs, path = filesystem(url, field, options)
    try:
        return fs.exists(path) and fs.size(path) == os.path.getsize(local)
    except Exception:
        return False
