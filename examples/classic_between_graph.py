#!/usr/bin/env python3
"""A classic TF1-era between-graph script: parameter servers and workers, no chief.

    ansible-playbook playbooks/deploy.yml -e tf_script=examples/classic_between_graph.py \
        -e tf_script_interface=flags -e tf_chief=0 -e tf_workers=2 -e tf_ps=1

Every task gets --ps_hosts --worker_hosts --job_name --task_index, as in the examples of that era.
Parameter servers serve; every worker runs the same graph with its variables placed on the ps
(replica_device_setter) and trains asynchronously; worker 0 is the chief: it initializes the
variables and writes $TFDIST_WORK_DIR/result.json. tfdist stops the ps and the other workers once
worker 0 is gone. This one fits y = 3x + 2 and writes no model file (tfdist says so and ends well).
"""

import argparse
import json
import os
import time

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("--ps_hosts", required=True)
parser.add_argument("--worker_hosts", required=True)
parser.add_argument("--job_name", required=True, choices=["worker", "ps"])
parser.add_argument("--task_index", type=int, required=True)
parser.add_argument("--steps", type=int, default=300)
args = parser.parse_args()

import tensorflow as tf  # noqa: E402  (after the flags, so --help is instant)

tf1 = tf.compat.v1
tf1.disable_eager_execution()
cluster = tf.train.ClusterSpec({"ps": args.ps_hosts.split(","), "worker": args.worker_hosts.split(",")})
server = tf.distribute.Server(cluster, job_name=args.job_name, task_index=args.task_index, protocol="grpc")
if args.job_name == "ps":
    server.join()

is_chief = args.task_index == 0
with tf1.device(tf1.train.replica_device_setter(worker_device="/job:worker/task:%d" % args.task_index,
                                                cluster=cluster)):
    global_step = tf1.train.get_or_create_global_step()
    x = tf1.placeholder(tf.float32, [None, 1])
    y = tf1.placeholder(tf.float32, [None, 1])
    weight = tf1.get_variable("weight", [1, 1], initializer=tf1.zeros_initializer())
    bias = tf1.get_variable("bias", [1], initializer=tf1.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, weight) + bias - y))
    train_op = tf1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)

rng = np.random.RandomState(args.task_index)
hooks = [tf1.train.StopAtStepHook(last_step=args.steps)]
started, last_loss, step = time.time(), None, 0
with tf1.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief, hooks=hooks,
                                        checkpoint_dir=None, save_summaries_steps=None) as session:
    while not session.should_stop():
        batch = rng.uniform(-1, 1, (32, 1)).astype("float32")
        unused, last_loss, step = session.run([train_op, loss, global_step], {x: batch, y: 3 * batch + 2})
seconds = time.time() - started

if is_chief:
    with open(os.path.join(os.environ.get("TFDIST_WORK_DIR", "."), "result.json"), "w") as handle:
        json.dump({"steps": args.steps, "last_step_seen": int(step), "initial_step": 0, "final_loss": float(last_loss),
                   "examples_per_sec": step * 32 / seconds, "training_seconds": seconds}, handle)
    print("worker 0: %d steps, loss %.5f" % (step, last_loss), flush=True)
