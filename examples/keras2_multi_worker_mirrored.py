#!/usr/bin/env python3
"""A tf.keras script as TF's multi-worker tutorial writes it: MultiWorkerMirroredStrategy and model.fit.

    ansible-playbook playbooks/deploy.yml -e tf_script=examples/keras2_multi_worker_mirrored.py \
        -e tf_keras=true -e tf_strategy=multi_worker_mirrored -e tf_workers=2

Keras 3 (TensorFlow's own tf.keras since 2.16) cannot fit() under this strategy (keras #20585); with
-e tf_keras=true every node has tf-keras and every task TF_USE_LEGACY_KERAS=1, so tf.keras is Keras 2.
Every task (the chief and the workers) runs the same fit() from TF_CONFIG; each saves the model, as the
collective ops need, the chief into $TFDIST_WORK_DIR/model/model.keras (what tfdist collects), the others
into their own task folder. This one fits y = 3x + 2.
"""

import json
import os
import time

import numpy as np
import tensorflow as tf

STEPS = 100
GLOBAL_BATCH = 64

strategy = tf.distribute.MultiWorkerMirroredStrategy()
task = json.loads(os.environ["TF_CONFIG"])["task"]
is_chief = task["type"] == "chief"

x = np.random.RandomState(0).uniform(-1, 1, (4096, 1)).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((x, 3 * x + 2)).repeat().batch(GLOBAL_BATCH)

with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Input((1,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")

started = time.time()
history = model.fit(dataset, epochs=1, steps_per_epoch=STEPS, verbose=2)
seconds = time.time() - started

own_dir = os.environ["TFDIST_WORK_DIR"] if is_chief else os.environ["TFDIST_TASK_DIR"]
os.makedirs(os.path.join(own_dir, "model"), exist_ok=True)
model.save(os.path.join(own_dir, "model", "model.keras"))
if is_chief:
    with open(os.path.join(own_dir, "result.json"), "w") as handle:
        json.dump({"steps": STEPS, "initial_step": 0, "final_loss": float(history.history["loss"][-1]),
                   "examples_per_sec": STEPS * GLOBAL_BATCH / seconds, "training_seconds": seconds}, handle)
