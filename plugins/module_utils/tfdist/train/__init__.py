# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""The training program of tfdist.cluster: an MLP classifier on tabular data, trained by a TF cluster.

One copy runs per TensorFlow task. The training role lays this package down on every node (as
`tfdist.train`, next to tfdist._cluster, _storage and _supervisor, with the tfdist.cluster.training_files
module) and renders a small per-task script that calls `job.run(argv, settings)` with the task's type
and index and the job's settings (the role's variables). `python -m tfdist.train.job --help` lists the flags,
which override the settings.

The cluster comes from TF_CONFIG, or from the classic flags --chief_host/--worker_hosts/--ps_hosts with
--job_name/--task_index (flags win).

Strategies (strategies.py):
  parameter_server       chief = coordinator (ClusterCoordinator, custom loop; Keras 3
                         model.fit does not support ParameterServerStrategy), ps and
                         worker tasks run a tf.distribute.Server until stopped.
  multi_worker_mirrored  chief and workers all run the same synchronous loop.
  (without any cluster the job trains in this one process.)
An evaluator task (optional, evaluator.py) evaluates each new checkpoint on the held-out set; it
reads --work_dir/checkpoints, so it must share that directory with the chief.

Data (--data, data.py): builtin:digits (digits.npz next to the task's script, in its data/ folder,
in --task_dir, --work_dir, --work_dir/data or $TFDIST_DATA_DIR), a path, a file:// URL, an http(s)://
URL, or an hdfs://, webhdfs:// or s3:// URL (through the collection's storage policy, _storage.py:
fsspec, and s3fs for s3://; TensorFlow 2.21 reads neither), downloaded once per version into
--work_dir/data, of an .npz with x and y (optionally x_test and y_test) or of a .csv with the label in
the last column. Without a test set the data is split with --seed into train and --test_fraction held
out. Each worker trains on its own shard of the training set.

Storage URLs: hdfs://NAMENODE[:RPC_PORT]/PATH is read and written through WebHDFS on
NAMENODE:$TFDIST_WEBHDFS_PORT (9870), as the HDFS user $HADOOP_USER_NAME,
else this user; s3://BUCKET/KEY uses the standard AWS variables (AWS_ENDPOINT_URL for other S3
stores). --checkpoint_url: the chief copies each checkpoint there (in the background) and, when its own
checkpoints/ is empty, resumes from there: a new cluster goes on where an old one stopped.
--model_url: the chief copies model.keras and result.json there at the end. --tensorboard_dir: the
chief writes loss and accuracy there for TensorBoard. A storage error names the flag and the URL first.

The chief writes under --work_dir (times are seconds since the epoch):
  status.json        {state: starting|running|done|failed, step, target_steps, initial_step,
                     loss, examples_per_sec, steps_per_sec, eta_seconds, started_at,
                     first_step_at, updated_at, strategy[, error][, accuracy]},
                     rewritten atomically every --status_interval seconds (progress.py)
  history.csv        step,loss,wall_time rows (a loss curve; appended across relaunches)
  checkpoints/       tf.train.CheckpointManager checkpoints, with the global step (checkpoints.py)
  model/model.keras  the trained model (softmax outputs), loads with keras.models.load_model
  result.json        final figures, written once the model is exported (results.py)
The evaluator writes evaluation.json and evaluation.csv there.
A relaunch resumes from the newest checkpoint; at or past --steps it only exports.
Exit code 0 on success; on failure 1 (143 when stopped by SIGTERM) and status.json
says state=failed with the error.

numpy, TensorFlow and Keras are imported inside the functions that need them: the package imports
with the standard library alone (Ansible's import checks, the node_package module).
"""
