# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""The model: an MLP, its evaluation, and the trainable state (model, optimizer, step, checkpoints, export)."""

from __future__ import annotations

import os

from .progress import log


def build_model(keras, input_dim, hidden_units, num_classes, probabilities=False):
    """The MLP. Training uses logits; the exported copy ends in a softmax."""
    layers = [keras.Input(shape=(input_dim,), name="features")]
    for i, units in enumerate(hidden_units):
        layers.append(keras.layers.Dense(units, activation="relu", name="hidden_%d" % i))
    layers.append(keras.layers.Dense(num_classes, activation="softmax" if probabilities else None, name="output"))
    return keras.Sequential(layers, name="tfdist_mlp")


def evaluate(np, model_fn, x, y):
    """(accuracy, mean cross-entropy) of a model returning probabilities."""
    probs = np.concatenate([np.asarray(model_fn(x[i:i + 4096])) for i in range(0, len(x), 4096)])
    accuracy = float(np.mean(np.argmax(probs, axis=1) == y))
    loss = float(-np.mean(np.log(np.clip(probs[np.arange(len(y)), y], 1e-12, 1.0))))
    return accuracy, loss


class Trainable:
    """Model, optimizer and global step, created in the strategy's scope."""

    def __init__(self, tf, keras, args, data, strategy, io_device=None):
        tf.random.set_seed(args.seed)  # every task builds the same initial model
        with strategy.scope():
            self.model = build_model(keras, data["x"].shape[1], args.hidden_units, data["num_classes"])
            self.optimizer = keras.optimizers.Adam(args.learning_rate)
            self.optimizer.build(self.model.trainable_variables)
            self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
        self.checkpoint = tf.train.Checkpoint(model=self.model, optimizer=self.optimizer, step=self.step)
        self.ckpt_dir = os.path.join(args.work_dir, "checkpoints")
        self.new_manager = lambda: tf.train.CheckpointManager(self.checkpoint, self.ckpt_dir,
                                                              max_to_keep=args.keep_checkpoints)
        self.manager = self.new_manager()
        # With parameter servers the save/restore ops run where the variables live (the ps);
        # pin the file I/O to the chief so checkpoints land on its disk, whatever the host.
        self.options = tf.train.CheckpointOptions(experimental_io_device=io_device) if io_device else None

        self.mirror = None  # the chief's checkpoints.CheckpointMirror, with --checkpoint_url
        self.saved_step = None  # the step the latest checkpoint holds; None before there is one

    def save(self, step):
        self.manager.save(checkpoint_number=step, options=self.options)
        self.saved_step = step
        if self.mirror:
            self.mirror.push()

    def restore(self):
        if self.mirror:
            self.mirror.fetch()
            self.manager = self.new_manager()  # it reads the folder's state when created
        latest = self.manager.latest_checkpoint
        if latest:
            try:
                self.checkpoint.restore(latest, options=self.options).assert_existing_objects_matched()
            except Exception as e:
                raise SystemExit("cannot restore %s (%s); did the model or data change? Remove %s to start over"
                                 % (latest, e, self.ckpt_dir))
            self.saved_step = int(self.step.numpy())
            log("resumed from %s at step %d" % (latest, self.saved_step))
        if self.mirror:
            self.mirror.start()
        return int(self.step.numpy())

    def export(self, keras, np, args, data):
        """Copy the weights into a plain softmax model; evaluate it; save model.keras."""
        exported = build_model(keras, data["x"].shape[1], args.hidden_units, data["num_classes"], probabilities=True)
        exported.set_weights([np.asarray(v.numpy()) for v in self.model.weights])
        accuracy, test_loss = evaluate(np, lambda b: exported(b, training=False), data["x_test"], data["y_test"])
        model_dir = os.path.join(args.work_dir, "model")
        os.makedirs(model_dir, exist_ok=True)
        tmp = os.path.join(model_dir, ".model.tmp.%d.keras" % os.getpid())
        exported.save(tmp)
        os.replace(tmp, os.path.join(model_dir, "model.keras"))
        return accuracy, test_loss
