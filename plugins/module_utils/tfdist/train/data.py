# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""The job's data: find or download it (--data), read it (.npz or .csv), split off the held-out set."""

from __future__ import annotations

import csv
import hashlib
import os
import sys
import urllib.parse

from .. import _storage
from .progress import log

BUILTIN_DATASETS = {"builtin:digits": "digits.npz"}


def find_builtin(name, args):
    """The file of a built-in dataset: next to the task's script, in its data/ folder, the task or work folder."""
    filename = BUILTIN_DATASETS[name]
    here = os.path.dirname(os.path.abspath(sys.argv[0])) if sys.argv and sys.argv[0] else ""
    places = [os.environ.get("TFDIST_DATA_DIR", ""), here, os.path.join(here, "data") if here else "", args.task_dir,
              os.path.join(args.task_dir, "data") if args.task_dir else "", args.work_dir,
              os.path.join(args.work_dir, "data")]
    for place in places:
        if place and os.path.isfile(os.path.join(place, filename)):
            return os.path.join(place, filename)
    raise SystemExit("%s: %s not found in %s (copy roles/training/files/data/%s next to this script)"
                     % (name, filename, ", ".join(p for p in places if p), filename))


def stage(url, work_dir):
    """Download a URL once (per version) into work_dir/data (no TF file system needed)."""
    name = os.path.basename(urllib.parse.urlparse(url).path) or "data"
    try:
        digest = hashlib.sha256((url + _storage.version(url, "--data")).encode()).hexdigest()[:12]
        target = os.path.join(work_dir, "data", "%s-%s" % (digest, name))
        if not os.path.exists(target):
            log("downloading %s" % url)
            _storage.download(url, target, "--data")
    except _storage.StorageError as e:
        raise SystemExit(str(e))
    return target


def local_path(spec, args):
    """A local file for --data: a built-in dataset's, the path itself, or a download of a URL (the storage policy
    says which)."""
    what = _storage.classify(spec, "--data")
    if what["kind"] == "builtin":
        if spec not in BUILTIN_DATASETS:
            raise SystemExit("--data: %s: no such built-in dataset (known: %s)" % (spec, ", ".join(BUILTIN_DATASETS)))
        return find_builtin(spec, args)
    if what["kind"] in ("local", "empty"):
        return what["path"] or spec
    return stage(spec, args.work_dir)


def read_csv(path, np):
    """(features, labels) of a csv file, the label in the last column; one header row may come first."""
    rows = []
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if not row or not "".join(row).strip():
                continue
            try:
                rows.append([float(v) for v in row])
            except ValueError:
                if rows:  # only the first row may be a header
                    raise SystemExit("%s: non-numeric row %d: %r" % (path, len(rows) + 1, row))
    if not rows:
        raise SystemExit("%s: no numeric rows" % path)
    table = np.asarray(rows, dtype=np.float64)
    return table[:, :-1], table[:, -1]


def load_data(args, np):
    """Train and held-out arrays: x float32 (N, features), y int64 class ids."""
    path = local_path(args.data, args)
    if not os.path.isfile(path):
        raise SystemExit("data file %s does not exist" % path)
    x_test = y_test = None
    if path.endswith(".npz"):
        with np.load(path) as arrays:
            if "x" not in arrays or "y" not in arrays:
                raise SystemExit("%s must hold arrays x and y (has %s)" % (path, ", ".join(arrays.files)))
            x, y = arrays["x"], arrays["y"]
            if "x_test" in arrays and "y_test" in arrays:
                x_test, y_test = arrays["x_test"], arrays["y_test"]
    elif path.endswith(".csv"):
        x, y = read_csv(path, np)
    else:
        raise SystemExit("%s: data must be an .npz or a .csv file" % path)

    x = np.asarray(x, dtype=np.float32).reshape(len(x), -1)
    y = np.asarray(y).astype(np.int64).reshape(-1)
    if len(x) != len(y):
        raise SystemExit("%s: x has %d rows but y has %d" % (path, len(x), len(y)))
    if x_test is None:
        # A fixed seed: every task and every relaunch sees the same split.
        order = np.random.RandomState(args.seed).permutation(len(x))
        n_test = max(1, int(round(len(x) * args.test_fraction)))
        x_test, y_test = x[order[:n_test]], y[order[:n_test]]
        x, y = x[order[n_test:]], y[order[n_test:]]
    else:
        x_test = np.asarray(x_test, dtype=np.float32).reshape(len(x_test), -1)
        y_test = np.asarray(y_test).astype(np.int64).reshape(-1)
    if min(y.min(), y_test.min()) < 0:
        raise SystemExit("%s: labels must be class ids 0..K-1" % path)
    num_classes = int(max(y.max(), y_test.max())) + 1
    return {"x": x, "y": y, "x_test": x_test, "y_test": y_test, "num_classes": num_classes,
            "path": path}
