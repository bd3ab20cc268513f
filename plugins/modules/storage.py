#!/usr/bin/python
# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r'''
module: storage
short_description: Check, upload or download a dataset or model at a file://, hdfs:// or s3:// URL
description:
  - Moves training data and models between the controller and storage that TensorFlow 2.21 cannot open itself, namely
    V(file://) paths, V(hdfs://) through the NameNode's WebHDFS interface, and V(s3://) on AWS or any
    S3-compatible endpoint, with fsspec and s3fs.
  - With O(src) uploads a local file or folder to O(url); with O(dest) downloads O(url) to a local file;
    with neither, only checks that O(url) can be read (O(check=read), an existing file) or written
    (O(check=write), the bucket or NameNode answers).
  - Every error starts with O(field), the name of the user's setting that holds the URL, so that a bad
    bucket, NameNode address, credentials or path is reported against that setting (C(tf_data), C(tf_model_url)).
  - S3 credentials come from the standard AWS environment variables (or the instance's role); they are never
    module arguments, so they are never logged.
version_added: 0.3.0
author: tfdist maintainers (@tfdist)
extends_documentation_fragment:
  - tfdist.cluster.attributes
attributes:
  check_mode:
    support: full
    details: Checks that the source can be read and the target written, and copies nothing.
  diff_mode:
    support: none
  idempotent:
    support: full
    details: A copy onto a file that already has the same size changes nothing.
options:
  url:
    description: The storage URL, V(file:///path), V(hdfs://namenode[:port]/path), V(webhdfs://namenode:9870/path) or V(s3://bucket/key).
    type: str
    required: true
  field:
    description: Name of the setting that holds O(url), put at the start of every error message.
    type: str
    default: url
  src:
    description: Local file or folder (on the host running the module) to upload to O(url).
    type: path
  dest:
    description: Local file to download O(url) into.
    type: path
  check:
    description: Without O(src) and O(dest), what to check about O(url).
    type: str
    choices: [read, write]
    default: read
  force:
    description: Copy even when the target already holds a file of the same size.
    type: bool
    default: false
  s3_endpoint_url:
    description: S3 endpoint of a non-AWS store; default E(AWS_ENDPOINT_URL_S3) or E(AWS_ENDPOINT_URL).
    type: str
  webhdfs_port:
    description:
      - The NameNode's HTTP port for V(hdfs://) URLs (the port in an C(hdfs://) URL is the RPC port).
      - Default E(TFDIST_WEBHDFS_PORT), else V(9870).
    type: int
  hdfs_user:
    description:
      - HDFS user name for WebHDFS (simple authentication).
      - Default E(HADOOP_USER_NAME), else the login name, as Hadoop's own client does.
    type: str
requirements:
  - fsspec
  - s3fs (for s3:// URLs)
  - requests (for hdfs:// URLs)
'''

EXAMPLES = r'''
- name: Stage the dataset into S3 before training
  tfdist.cluster.storage:
    src: data/train.npz
    url: s3://my-bucket/datasets/train.npz
    field: tf_stage_data

- name: Stop early when the dataset is not there
  tfdist.cluster.storage:
    url: hdfs://namenode:8020/datasets/train.npz
    field: tf_data
    check: read

- name: Keep the trained model in HDFS
  tfdist.cluster.storage:
    src: artifacts/demo/model/model.keras
    url: hdfs://namenode:8020/models/demo/model.keras
    field: tf_model_url
'''

RETURN = r'''
url:
  description: The URL worked on.
  returned: always
  type: str
  sample: s3://my-bucket/datasets/train.npz
written:
  description: Paths written at O(url) by an upload.
  returned: when O(src) is given
  type: list
  elements: str
  sample: ["my-bucket/datasets/train.npz"]
size:
  description: Bytes downloaded into O(dest).
  returned: when O(dest) is given and a copy happened
  type: int
  sample: 183960
'''

import os

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist import _idle_guard
from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist._storage import (
    StorageError,
    check,
    download,
    fsspec_import_error,
    same_content,
    upload,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type='str', required=True),
            field=dict(type='str', default='url'),
            src=dict(type='path'),
            dest=dict(type='path'),
            check=dict(type='str', choices=['read', 'write'], default='read'),
            force=dict(type='bool', default=False),
            s3_endpoint_url=dict(type='str'),
            webhdfs_port=dict(type='int'),
            hdfs_user=dict(type='str'),
        ),
        mutually_exclusive=[['src', 'dest']],
        supports_check_mode=True,
    )
    _idle_guard.heartbeat()  # the controller is heard from (see the idle_guard module)
    import_error = fsspec_import_error()
    if import_error:
        module.fail_json(msg=missing_required_lib('fsspec'), exception=import_error)
    p = module.params
    url, field, options = p['url'], p['field'], dict((k, p[k]) for k in ('s3_endpoint_url', 'webhdfs_port', 'hdfs_user'))
    result = dict(changed=False, url=url)
    try:
        if p['src']:
            if not os.path.exists(p['src']):
                raise StorageError('%s: %s does not exist on %s' % (field, p['src'], 'this host'))
            check(url, field, 'write', options)
            if p['force'] or os.path.isdir(p['src']) or not same_content(p['src'], url, field, options):
                result['changed'] = True
                if not module.check_mode:
                    result['written'] = upload(p['src'], url, field, options)
        elif p['dest']:
            check(url, field, 'read', options)
            if p['force'] or not (os.path.exists(p['dest']) and same_content(p['dest'], url, field, options)):
                result['changed'] = True
                if not module.check_mode:
                    result['size'] = download(url, p['dest'], field, options)
        else:
            check(url, field, p['check'], options)
    except StorageError as e:
        module.fail_json(msg=str(e), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
