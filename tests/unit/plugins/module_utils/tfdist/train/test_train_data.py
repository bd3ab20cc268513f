"""The training program's data: built-in, local .npz and .csv files, file:// URLs, held-out split."""

import os
from types import SimpleNamespace

import numpy as np
import pytest

from ansible_collections.tfdist.cluster.plugins.module_utils.tfdist.train import data

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), *[".."] * 6))
DIGITS = os.path.join(REPO, "roles", "training", "files", "data", "digits.npz")


def args_for(tmp_path, spec, **more):
    values = dict(data=str(spec), work_dir=str(tmp_path / "job"), task_dir="", seed=42, test_fraction=0.2)
    values.update(more)
    return SimpleNamespace(**values)


def test_an_npz_without_test_set_is_split_with_the_seed(tmp_path):
    x = np.arange(200, dtype=np.float64).reshape(100, 2)
    y = np.arange(100) % 4
    np.savez(tmp_path / "d.npz", x=x, y=y)

    loaded = data.load_data(args_for(tmp_path, tmp_path / "d.npz"), np)

    assert loaded["x"].dtype == np.float32 and loaded["y"].dtype == np.int64
    assert (len(loaded["x"]), len(loaded["x_test"]), loaded["num_classes"]) == (80, 20, 4)
    order = np.random.RandomState(42).permutation(100)  # every task and relaunch: the same split
    assert np.array_equal(loaded["y_test"], y[order[:20]])
    again = data.load_data(args_for(tmp_path, tmp_path / "d.npz"), np)
    assert np.array_equal(again["x_test"], loaded["x_test"])


def test_an_npz_with_its_own_test_set_keeps_it(tmp_path):
    np.savez(tmp_path / "d.npz", x=np.ones((10, 2, 2)), y=np.zeros(10), x_test=np.ones((3, 4)), y_test=[0, 1, 2])

    loaded = data.load_data(args_for(tmp_path, "file://" + str(tmp_path / "d.npz")), np)

    assert loaded["x"].shape == (10, 4)  # flattened
    assert (len(loaded["x_test"]), loaded["num_classes"]) == (3, 3)


def test_a_csv_with_a_header_has_the_label_last(tmp_path):
    rows = "f1,f2,label\n" + "".join("%d,%d,%d\n" % (i, i * 2, i % 3) for i in range(30)) + "\n"
    (tmp_path / "d.csv").write_text(rows)

    loaded = data.load_data(args_for(tmp_path, tmp_path / "d.csv", test_fraction=0.1), np)

    assert (len(loaded["x"]), len(loaded["x_test"]), loaded["x"].shape[1], loaded["num_classes"]) == (27, 3, 2, 3)


@pytest.mark.parametrize("name, content, message", [
    ("bad.csv", "1,2,0\n3,x,1\n", "non-numeric row 2"),
    ("empty.csv", "a,b\n", "no numeric rows"),
    ("d.txt", "1,2\n", "data must be an .npz or a .csv file"),
    ("neg.csv", "1,2,-1\n3,4,0\n5,6,1\n4,4,1\n1,1,0\n", "labels must be class ids 0..K-1"),
])
def test_bad_files_are_named_with_what_is_wrong(tmp_path, name, content, message):
    (tmp_path / name).write_text(content)
    with pytest.raises(SystemExit, match=message):
        data.load_data(args_for(tmp_path, tmp_path / name), np)


def test_an_npz_without_x_and_y_and_a_missing_file(tmp_path):
    np.savez(tmp_path / "d.npz", features=np.ones((3, 2)))
    with pytest.raises(SystemExit, match="must hold arrays x and y [(]has features[)]"):
        data.load_data(args_for(tmp_path, tmp_path / "d.npz"), np)
    with pytest.raises(SystemExit, match="data file .*missing.npz does not exist"):
        data.load_data(args_for(tmp_path, tmp_path / "missing.npz"), np)


def test_the_builtin_digits_are_found_in_the_job_data_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("TFDIST_DATA_DIR", raising=False)
    (tmp_path / "job" / "data").mkdir(parents=True)
    args = args_for(tmp_path, "builtin:digits")
    with pytest.raises(SystemExit, match="builtin:digits: digits.npz not found in"):
        data.load_data(args, np)

    (tmp_path / "job" / "data" / "digits.npz").write_bytes(open(DIGITS, "rb").read())
    loaded = data.load_data(args, np)
    assert loaded["path"] == str(tmp_path / "job" / "data" / "digits.npz")
    assert (loaded["x"].shape[1], loaded["num_classes"]) == (64, 10)


def test_an_unknown_builtin_dataset_is_named(tmp_path):
    with pytest.raises(SystemExit, match="--data: builtin:cifar: no such built-in dataset"):
        data.load_data(args_for(tmp_path, "builtin:cifar"), np)


def test_a_storage_url_is_staged_once_per_version(tmp_path):
    source = tmp_path / "store" / "d.npz"
    source.parent.mkdir()
    np.savez(source, x=np.ones((10, 2)), y=np.zeros(10))
    args = args_for(tmp_path, "file://%s" % source)

    staged = data.stage(args.data, args.work_dir)
    assert os.path.dirname(staged) == str(tmp_path / "job" / "data") and staged.endswith("-d.npz")
    assert data.stage(args.data, args.work_dir) == staged  # same content: not fetched again

    np.savez(source, x=np.ones((12, 2)), y=np.zeros(12))
    os.utime(source, (1, 1))  # another version: another size and time
    assert data.stage(args.data, args.work_dir) != staged


def test_a_storage_error_names_the_flag_and_the_url(tmp_path):
    url = "file://%s" % (tmp_path / "nowhere" / "d.npz")
    with pytest.raises(SystemExit, match="^--data: %s: " % url):
        data.stage(url, str(tmp_path / "job"))
