#!/usr/bin/env python3
"""Bring your own training script: the classic flags interface.

    ansible-playbook playbooks/deploy.yml -e tf_script=examples/own_script_flags.py \
        -e tf_script_interface=flags

Every task gets --ps_hosts --worker_hosts --chief_host --job_name --task_index; parameter
servers and workers serve and wait (tfdist stops them once the chief is gone), the chief
trains with ParameterServerStrategy. What tfdist collects: $TFDIST_WORK_DIR/model/model.keras
and $TFDIST_WORK_DIR/result.json (plus status.json and history.csv for progress, optional).
This one fits y = 3x + 2.
"""

import argparse
import json
import os
import time

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("--ps_hosts", required=True)
parser.add_argument("--worker_hosts", required=True)
parser.add_argument("--chief_host", required=True)
parser.add_argument("--job_name", required=True, choices=["chief", "worker", "ps"])
parser.add_argument("--task_index", type=int, required=True)
parser.add_argument("--steps", type=int, default=200)
args = parser.parse_args()

import tensorflow as tf  # noqa: E402  (after the flags, so --help is instant)
import keras  # noqa: E402

cluster = tf.train.ClusterSpec({
    "chief": [args.chief_host],
    "worker": args.worker_hosts.split(","),
    "ps": args.ps_hosts.split(","),
})

if args.job_name in ("ps", "worker"):
    tf.distribute.Server(cluster, job_name=args.job_name, task_index=args.task_index, protocol="grpc").join()

resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(cluster, task_type="chief", task_id=0, rpc_layer="grpc")
strategy = tf.distribute.ParameterServerStrategy(resolver)
coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
with strategy.scope():
    weight = tf.Variable(0.0)
    bias = tf.Variable(0.0)


def dataset_fn():
    x = np.random.RandomState(0).uniform(-1, 1, (1024, 1)).astype("float32")
    return tf.data.Dataset.from_tensor_slices((x, 3 * x + 2)).repeat().batch(32)


iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))


@tf.function
def train_step(batches):
    x, y = next(batches)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(weight * x + bias - y))
    grad_w, grad_b = tape.gradient(loss, [weight, bias])
    weight.assign_sub(0.1 * grad_w)
    bias.assign_sub(0.1 * grad_b)
    return loss


started = time.time()
for _ in range(args.steps):
    last = coordinator.schedule(train_step, args=(iterator,))
coordinator.join()
seconds = time.time() - started

model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
model.layers[0].set_weights([np.array([[weight.numpy()]]), np.array([bias.numpy()])])
work_dir = os.environ["TFDIST_WORK_DIR"]
os.makedirs(os.path.join(work_dir, "model"), exist_ok=True)
model.save(os.path.join(work_dir, "model", "model.keras"))
with open(os.path.join(work_dir, "result.json"), "w") as handle:
    json.dump({"steps": args.steps, "initial_step": 0, "final_loss": float(last.fetch()),
               "examples_per_sec": args.steps * 32 / seconds, "training_seconds": seconds}, handle)
# The coordinator's threads would keep the process alive; leave at once.
os._exit(0)
