# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

"""Datasets and models at URLs: file://, hdfs:// (through WebHDFS), s3:// (AWS or any S3 endpoint).

TensorFlow 2.21 has no hdfs:// or s3:// file system and tensorflow-io no longer loads on it, so tfdist
moves bytes with fsspec (s3fs for S3, its webhdfs client for HDFS) and stages them on local disk.

Private to the collection (leading underscore): the API may change between releases.
"""

from __future__ import annotations

import os
import traceback
import urllib.parse

try:
    import fsspec
except ImportError:
    HAS_FSSPEC = False
    FSSPEC_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_FSSPEC = True
    FSSPEC_IMPORT_ERROR = None

SCHEMES = ('file', 'hdfs', 'webhdfs', 's3')
WEBHDFS_PORT = 9870


class StorageError(Exception):
    """Something about a storage setting the user can fix; the message starts with the setting's name."""


def _s3_endpoint(options):
    return (options.get('s3_endpoint_url') or os.environ.get('AWS_ENDPOINT_URL_S3')
            or os.environ.get('AWS_ENDPOINT_URL') or None)


def open_location(url, field, options=None):
    """(filesystem, path) for url; `field` names the setting in every error."""
    options = options or {}
    parsed = urllib.parse.urlparse(url)
    scheme = parsed.scheme or 'file'
    if scheme not in SCHEMES:
        raise StorageError('%s: %r: unsupported URL scheme %r; use %s'
                           % (field, url, scheme, ', '.join('%s://' % s for s in SCHEMES)))
    if scheme == 'file':
        return fsspec.filesystem('file'), urllib.parse.unquote(parsed.path) if parsed.scheme else url
    if not parsed.netloc:
        raise StorageError('%s: %r has no %s' % (field, url, 'bucket' if scheme == 's3' else 'namenode host'))
    if scheme == 's3':
        client_kwargs = {}
        endpoint = _s3_endpoint(options)
        if endpoint:
            client_kwargs['endpoint_url'] = endpoint
        region = options.get('s3_region') or os.environ.get('AWS_DEFAULT_REGION') or os.environ.get('AWS_REGION')
        if region:
            client_kwargs['region_name'] = region
        # Credentials: the standard AWS variables, read by botocore itself; never passed through here.
        fs = fsspec.filesystem('s3', client_kwargs=client_kwargs, skip_instance_cache=True)
        return fs, parsed.netloc + parsed.path
    # hdfs://namenode[:rpc port]/path: tfdist talks WebHDFS (HTTP) to the NameNode, so no Hadoop client is needed.
    port = options.get('webhdfs_port') or (parsed.port if scheme == 'webhdfs' and parsed.port else WEBHDFS_PORT)
    fs = fsspec.filesystem('webhdfs', host=parsed.hostname, port=int(port), user=options.get('hdfs_user') or 'root',
                           skip_instance_cache=True)
    return fs, parsed.path or '/'


def _explain(field, url, error):
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
    fs, path = open_location(url, field, options)
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
        raise StorageError(_explain(field, url, e))


def upload(local, url, field, options=None):
    """Copy a local file (or a folder, recursively) to url; returns the list of URLs written."""
    fs, path = open_location(url, field, options)
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
        raise StorageError(_explain(field, url, e))


def download(url, local, field, options=None):
    """Copy url to the local file `local` (atomically); returns its size in bytes."""
    fs, path = open_location(url, field, options)
    os.makedirs(os.path.dirname(local) or '.', exist_ok=True)
    part = '%s.part.%d' % (local, os.getpid())
    try:
        fs.get_file(path, part)
    except Exception as e:
        if os.path.exists(part):
            os.remove(part)
        raise StorageError(_explain(field, url, e))
    os.replace(part, local)
    return os.path.getsize(local)


def same_content(local, url, field, options=None):
    """True when url holds a file of the same size as local (cheap idempotence for uploads)."""
    fs, path = open_location(url, field, options)
    try:
        return fs.exists(path) and fs.size(path) == os.path.getsize(local)
    except Exception:
        return False
