# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""The training loops: parameter_server (a coordinator on the chief, servers elsewhere) and multi_worker_mirrored."""

from __future__ import annotations

import collections
import json
import os
import shutil
import signal
import time

from .checkpoints import CheckpointMirror
from .job import Terminated, handle_stops, raise_if_stopped
from .model import Trainable
from .progress import log
from .results import finish


def run_server(tf, cluster, job, index):
    """ps and worker tasks of parameter_server: serve until the supervisor stops us."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # join() blocks in C++: a Python handler would never run
    server = tf.distribute.Server(tf.train.ClusterSpec(cluster), job_name=job, task_index=index,
                                  protocol="grpc", start=True)
    log("%s:%d serving at %s; waiting for the coordinator" % (job, index, cluster[job][index]))
    server.join()
    return 0


def train_parameter_server(tf, keras, np, args, data, cluster, progress):
    num_workers, num_ps = len(cluster.get("worker", [])), len(cluster.get("ps", []))
    if not num_workers or not num_ps or "chief" not in cluster:
        raise SystemExit("parameter_server needs a chief, at least one worker and one ps; cluster is %s"
                         % json.dumps(cluster))
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(cluster), task_type="chief", task_id=0, rpc_layer="grpc")
    log("connecting to %d worker(s) and %d ps" % (num_workers, num_ps))
    strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    state = Trainable(tf, keras, args, data, strategy, io_device="/job:chief/replica:0/task:0/device:CPU:0")
    if args.checkpoint_url:
        state.mirror = CheckpointMirror(args.checkpoint_url, state.ckpt_dir)
    with strategy.scope():
        # Dataset shards are handed out by a counter on the ps: in TF 2.21 the InputContext of
        # ParameterServerStrategy says pipeline 0 of 1 on every worker, so it cannot shard.
        next_shard = tf.Variable(0, dtype=tf.int64, trainable=False, name="next_shard")
        shard_steps = tf.Variable(tf.zeros([num_workers], tf.int64), trainable=False, name="shard_steps")
    initial = state.restore()
    progress.begin(initial)
    x, y = data["x"], data["y"]

    def dataset_fn():
        shard = (next_shard.assign_add(1) - 1) % num_workers  # runs once per worker
        ds = tf.data.Dataset.from_tensor_slices((x, y)).shard(num_workers, shard)
        ds = ds.shuffle(min(len(x), 10000)).repeat().batch(args.batch_size, drop_remainder=True)
        return ds.map(lambda bx, by: (bx, by, shard)).prefetch(2)

    replica_step = gradient_step(tf, state, tf.reduce_mean)

    @tf.function
    def train_steps(iterator, num_steps):
        total, shard = tf.constant(0.0), tf.constant(0, tf.int64)
        for dummy in tf.range(num_steps):
            bx, by, shard = next(iterator)
            total += strategy.run(replica_step, args=(bx, by))
        state.step.assign_add(num_steps)
        shard_steps.scatter_add(tf.IndexedSlices(tf.fill([1], tf.cast(num_steps, tf.int64)), tf.reshape(shard, [1])))
        return total / tf.cast(num_steps, tf.float32)

    # A stop (a deadline, the watch) keeps what was trained, whenever it comes: building the workers' datasets
    # takes a while, and a deadline counted from the launch may end a job there on a busy machine.
    try:
        per_worker_iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))
        schedule_steps(tf, args, lambda k: coordinator.schedule(train_steps, args=(per_worker_iterator, k)),
                       state, progress, initial, limit=args.max_in_flight * num_workers)
        coordinator.join()
        raise_if_stopped()
        final_step = int(state.step.numpy())
    except Terminated:
        save_when_stopped(state)
        raise
    save_last(state, final_step)
    extra = {"num_workers": num_workers, "num_ps": num_ps, "worker_steps": [int(s) for s in shard_steps.numpy()]}
    return report_results(keras, np, args, data, state, progress, final_step, extra)


def schedule_steps(tf, args, schedule, state, progress, initial, limit):
    """Train from step initial to args.steps with functions scheduled on the workers (schedule(k) runs k steps,
    returning its remote loss), with a checkpoint every args.checkpoint_every steps.

    Keeps a bounded queue of scheduled functions (limit): enough to keep every worker busy, few enough that
    progress, checkpoints and failures are noticed quickly.
    """
    in_flight = collections.deque()
    scheduled = done = initial
    next_checkpoint = checkpoint_after(initial, args.checkpoint_every)
    while scheduled < args.steps or in_flight:
        raise_if_stopped()
        if scheduled < args.steps and len(in_flight) < limit:
            k = min(args.steps_per_execution, args.steps - scheduled)
            in_flight.append((schedule(k), k))
            scheduled += k
            continue
        remote_loss, k = in_flight.popleft()
        loss = fetch_loss(tf, remote_loss)
        done += k
        progress.update(done, loss)
        if done >= next_checkpoint:
            state.save(int(state.step.numpy()))
            next_checkpoint = checkpoint_after(done, args.checkpoint_every)


def save_when_stopped(state):
    """A stop (a deadline, a watch that stopped the job) keeps what was trained since the last checkpoint.

    A parameter_server job's variables live on its servers, which the watch stops after the leader. A second SIGTERM
    must not cut the checkpoint in half; the supervisor's SIGKILL after its stop timeout still ends a save that hangs.
    """
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        step = int(state.step.numpy())
        if state.saved_step is None or step > state.saved_step:
            state.save(step)
            log("stopped at step %d: checkpoint written" % step)
        else:  # stopped right after a periodic checkpoint: nothing to add, and the log says so
            log("stopped at step %d: the last checkpoint holds it" % step)
    except Exception as error:  # the servers may be gone already: the last periodic checkpoint stays
        log("stopped: no checkpoint of the last steps (%s)" % (str(error).splitlines() or [type(error).__name__])[0])


def fetch_loss(tf, remote_loss):
    """The loss a scheduled function returned; None if it could not be read from its worker.

    The loss only feeds the progress report: the function has run and its step is on the parameter servers. The
    coordinator re-runs functions that a lost worker did not finish, but a finished function's result still lives
    on its worker: reading it then fails (UnavailableError), and now and then a worker answers the read with gRPC's
    "Unable to parse request" (InternalError, seen under load) while it goes on running steps. Either costs a point
    of the loss curve, not the job. Errors of the parameter servers, and any other error, are raised.
    """
    try:
        return float(remote_loss.fetch())
    except (tf.errors.UnavailableError, tf.errors.InternalError) as e:
        text = str(e)
        if type(e).__name__ == "PSUnavailableError" or "/job:ps" in text:
            raise
        if isinstance(e, tf.errors.InternalError) and "remote target /job:worker" not in text:
            raise
        log("the loss of a finished step could not be read from its worker; training goes on (%s: %s)"
            % (type(e).__name__, text.strip().splitlines()[0] if text.strip() else "no message"))
        return None


def broadcast_from_chief(tf, strategy, variables):
    """Make every worker hold the chief's values (only the chief may have the checkpoint)."""
    @tf.function
    def sync():
        def replica_fn():
            ctx = tf.distribute.get_replica_context()
            weight = tf.cast(tf.equal(ctx.replica_id_in_sync_group, 0), tf.float64)
            return [ctx.all_reduce("sum", tf.cast(v, tf.float64) * weight) for v in variables]
        values = strategy.run(replica_fn)
        for v, value in zip(variables, values):
            v.assign(tf.cast(strategy.experimental_local_results(value)[0], v.dtype))
    sync()


def train_synchronous(tf, keras, np, args, data, cluster, progress):
    """multi_worker_mirrored (or one process without a cluster): the same loop everywhere.

    progress is None on the tasks other than the chief.
    """
    is_chief = progress is not None
    strategy, name = synchronous_strategy(tf, cluster)
    global_batch = args.batch_size * strategy.num_replicas_in_sync
    if progress:
        progress.strategy, progress.examples_per_step = name, global_batch
    state = Trainable(tf, keras, args, data, strategy)
    if is_chief and args.checkpoint_url:
        state.mirror = CheckpointMirror(args.checkpoint_url, state.ckpt_dir)
    initial = state.restore() if (is_chief or os.path.isdir(state.ckpt_dir)) else 0
    if cluster:
        variables = list(state.model.weights) + list(state.optimizer.variables) + [state.step]
        broadcast_from_chief(tf, strategy, [v.value if isinstance(v, keras.Variable) else v for v in variables])
        initial = int(state.step.numpy())
    if progress:
        progress.begin(initial)

    x, y = data["x"], data["y"]

    def dataset_fn(context):
        ds = tf.data.Dataset.from_tensor_slices((x, y))
        ds = ds.shard(context.num_input_pipelines, context.input_pipeline_id)  # distinct per worker here
        ds = ds.shuffle(min(len(x), 10000), seed=args.seed + context.input_pipeline_id).repeat()
        return ds.batch(context.get_per_replica_batch_size(global_batch), drop_remainder=True).prefetch(2)

    iterator = iter(strategy.distribute_datasets_from_function(dataset_fn))
    replica_step = gradient_step(
        tf, state, lambda per_example: tf.nn.compute_average_loss(per_example, global_batch_size=global_batch))

    @tf.function
    def train_steps(it, num_steps):
        total = tf.constant(0.0)
        for dummy in tf.range(num_steps):
            bx, by = next(it)
            total += strategy.reduce("sum", strategy.run(replica_step, args=(bx, by)), axis=None)
        state.step.assign_add(tf.cast(num_steps, tf.int64))
        return total / tf.cast(num_steps, tf.float32)

    # Every task must save (TF's rule for MultiWorkerMirrored); non-chiefs write a throwaway copy.
    if not is_chief:
        scratch = os.path.join(args.task_dir or args.work_dir, "checkpoint-scratch-%d" % os.getpid())
        state.manager = tf.train.CheckpointManager(state.checkpoint, scratch, max_to_keep=1)

    try:
        done = run_steps(tf, args, lambda k: train_steps(iterator, tf.constant(k)), state, progress, initial)
        save_last(state, done)
    except Terminated:
        if is_chief:  # its save alone holds the job's state: every task has the same variables after a step
            save_when_stopped(state)
        raise
    except (tf.errors.UnavailableError, tf.errors.AbortedError, tf.errors.CancelledError) as error:
        if not is_chief:
            wait_to_be_stopped(error, args.gone_grace)
        raise
    finally:
        if not is_chief:
            shutil.rmtree(state.manager.directory, ignore_errors=True)
    if not is_chief:
        log("worker finished at step %d" % done)
        return 0
    extra = {"num_workers": len(cluster.get("worker", [])) + (1 if "chief" in cluster else 0) if cluster else 1,
             "num_ps": 0}
    return report_results(keras, np, args, data, state, progress, done, extra)


def wait_to_be_stopped(error, grace):
    """A step of every task failed on this one as a peer left: the leader stopped first at a deadline (the watch
    stops it before the other tasks), or a task that failed. Stopped within the grace, the task ends as stopped
    (Terminated), with the job, not as one more failure; else it returns, for the error to be raised."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()] or [""]
    why = next((line for line in lines if "aborted" in line or "closed" in line), lines[0])  # TF's own words
    log("a step failed as a peer left (%s: %s); waiting up to %ds to be stopped with the job"
        % (type(error).__name__, why, grace))
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        raise_if_stopped()
        time.sleep(0.2)
    log("not stopped within %ds: the failed step ends this task" % grace)


def synchronous_strategy(tf, cluster):
    """(strategy, its name): MultiWorkerMirroredStrategy across the cluster, or the default one in one process."""
    if not cluster:
        return tf.distribute.get_strategy(), "local"
    if "ps" in cluster:
        raise SystemExit("multi_worker_mirrored takes no ps tasks; cluster is %s" % json.dumps(cluster))
    strategy = tf.distribute.MultiWorkerMirroredStrategy(
        cluster_resolver=tf.distribute.cluster_resolver.TFConfigClusterResolver())
    # Its coordination service takes SIGTERM for a preemption notifier (of PreemptionCheckpointHandler, not used
    # here), which makes a stop pass unseen until the supervisor's SIGKILL: stops are the job's own again.
    handle_stops()
    return strategy, "multi_worker_mirrored"


def run_steps(tf, args, train_steps, state, progress, initial):
    """Train from step initial to args.steps in the same process (train_steps(k) runs k steps, returning their
    mean loss), saving a checkpoint every args.checkpoint_every steps; the last step. progress is None on the
    tasks other than the chief."""
    done = initial
    next_checkpoint = checkpoint_after(initial, args.checkpoint_every)
    while done < args.steps:
        raise_if_stopped()
        k = min(args.steps_per_execution, args.steps - done, next_checkpoint - done)
        loss = float(train_steps(k))
        done += k
        if progress:
            progress.update(done, loss)
        if done >= next_checkpoint:
            state.save(done)
            next_checkpoint += args.checkpoint_every
    return done


def gradient_step(tf, state, average):
    """One training step on one replica: the cross-entropy of a batch, averaged by average(per_example losses),
    and its gradients applied to the model (all-reduced across the workers under multi_worker_mirrored)."""
    def replica_step(bx, by):
        with tf.GradientTape() as tape:
            logits = state.model(bx, training=True)
            loss = average(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=by, logits=logits))
        grads = tape.gradient(loss, state.model.trainable_variables)
        state.optimizer.apply_gradients(zip(grads, state.model.trainable_variables))
        return loss
    return replica_step


def checkpoint_after(step, every):
    """The step of the first periodic checkpoint after this one."""
    return (step // every + 1) * every


def save_last(state, step):
    """A checkpoint of the last step, unless the last periodic one holds it already."""
    if step != state.saved_step:
        state.save(step)


def report_results(keras, np, args, data, state, progress, step, extra):
    """The chief's last progress line, then its results (results.finish)."""
    progress.step = step
    progress.flush()
    return finish(keras, np, args, data, state, progress, step, extra)
