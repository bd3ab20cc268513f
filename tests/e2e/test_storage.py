"""Data in and model out through storage URLs (here s3:// on the emulator's S3), on cloud=local."""

import json
import os
import shutil
import uuid

import numpy as np
import pytest

from ansible_cli import REPO, run_playbook, tail
from emulators.ec2 import Ec2Emulator
from processes import free_port_block

DIGITS = os.path.join(REPO, "roles", "training", "files", "data", "digits.npz")


@pytest.fixture
def bucket(ec2_emulator):
    name = f"b{uuid.uuid4().hex[:10]}"
    ec2_emulator.boto3_client("s3").create_bucket(Bucket=name)
    return name


def test_dataset_staged_into_s3_trains_and_the_model_lands_in_s3(ec2_emulator, bucket, cluster_name, tmp_path):
    env = dict(ec2_emulator.env, AWS_ENDPOINT_URL_S3=ec2_emulator.endpoint)
    result = run_playbook("playbooks/deploy.yml", f"cluster_name={cluster_name}", "tf_train_steps=300",
                          f"tf_port_base={free_port_block(4)}", f"tf_stage_data={DIGITS}", f"tf_data=s3://{bucket}/datasets/digits.npz",
                          f"tf_model_url=s3://{bucket}/models/{cluster_name}", env=env)
    assert result.returncode == 0, tail(result)

    s3 = ec2_emulator.boto3_client("s3")
    staged = s3.get_object(Bucket=bucket, Key="datasets/digits.npz")["Body"].read()
    assert staged == open(DIGITS, "rb").read()

    # The model fetched back from the bucket loads and predicts.
    model_file = tmp_path / "model.keras"
    model_file.write_bytes(s3.get_object(Bucket=bucket, Key=f"models/{cluster_name}/model.keras")["Body"].read())
    import keras
    model = keras.models.load_model(str(model_file))
    with np.load(DIGITS) as data:
        x, y = data["x"].astype("float32").reshape(len(data["x"]), -1), data["y"]
    accuracy = float((model.predict(x, verbose=0).argmax(axis=1) == y).mean())
    assert accuracy > 0.8
    summary = json.loads(s3.get_object(Bucket=bucket, Key=f"models/{cluster_name}/summary.json")["Body"].read())
    assert summary["cluster"] == cluster_name
    shutil.rmtree(os.path.join(REPO, "artifacts", cluster_name), ignore_errors=True)


@pytest.mark.parametrize("extra, message", [
    (["tf_data=s3://no-such-bucket-x/digits.npz"],
     "tf_data: s3://no-such-bucket-x/digits.npz: the bucket 'no-such-bucket-x' does not exist"),
    (["tf_data=s3://BUCKET/missing.npz"], "tf_data: s3://BUCKET/missing.npz does not exist"),
    (["tf_model_url=s3://no-such-bucket-y/models"],
     "tf_model_url: s3://no-such-bucket-y/models: the bucket 'no-such-bucket-y' does not exist"),
    (["tf_data=hdfs://namenode.invalid:8020/data/digits.npz"],
     "tf_data: hdfs://namenode.invalid:8020/data/digits.npz: cannot reach the storage"),
    (["tf_stage_data=/nonexistent/digits.npz", "tf_data=s3://BUCKET/d.npz"], "tf_stage_data: /nonexistent/digits.npz does not exist"),
    (["tf_model_url=s3://BUCKET/models,s3://no-such-bucket-z/m"],
     "tf_model_url: s3://no-such-bucket-z/m: the bucket 'no-such-bucket-z' does not exist"),
    # The cluster's own HDFS (hdfs:///): needs tf_hdfs, and cluster nodes to run on.
    (["tf_data=hdfs:///datasets/digits.npz"],
     "tf_data: hdfs:///datasets/digits.npz is on the cluster HDFS (hdfs:/// names no NameNode): add -e tf_hdfs=true"),
    (["tf_checkpoint_url=hdfs:///checkpoints"], "tf_checkpoint_url: hdfs:///checkpoints is on the cluster HDFS"),
    (["tf_hdfs=true"], "tf_hdfs: cloud=local has no cluster nodes to run HDFS on"),
    (["tf_checkpoint_url=ftp://host/ckpt"], "tf_checkpoint_url: ftp://host/ckpt must be a file://, hdfs://, webhdfs:// or s3:// folder URL"),
])
def test_bad_storage_settings_are_named_before_anything_is_made(ec2_emulator, bucket, cluster_name, extra, message):
    extra = [e.replace("BUCKET", bucket) for e in extra]
    message = message.replace("BUCKET", bucket)
    result = run_playbook("playbooks/deploy.yml", f"cluster_name={cluster_name}", *extra,
                          env=dict(ec2_emulator.env, AWS_ENDPOINT_URL_S3=ec2_emulator.endpoint))
    assert result.returncode != 0
    assert message in " ".join(result.stdout.split()), tail(result)
    assert not os.path.exists(os.path.join(REPO, "inventories", "clusters", f"{cluster_name}.local.yml"))
    assert not os.path.exists(os.path.join(REPO, "artifacts", cluster_name))


def test_storage_credentials_the_store_refuses_are_named(cluster_name):
    with Ec2Emulator(check_credentials=True) as strict:
        result = run_playbook("playbooks/deploy.yml", f"cluster_name={cluster_name}",
                              "tf_model_url=s3://models/x", env=dict(strict.env, AWS_ACCESS_KEY_ID="AKIAWRONGSTORE0000"))
    assert result.returncode != 0
    assert "tf_model_url: s3://models/x: the storage refused the credentials" in " ".join(result.stdout.split()), \
        tail(result)
