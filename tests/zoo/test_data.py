"""The IDX reader, the directory loader, the batch iterator and the offline tfds path."""

import gzip
import hashlib
import os

import numpy as np
import pytest

from layers import DataError
from tests.conftest import make_idx_dir
from zoo.data import DataSet, identify, load_mnist, read_idx, write_idx
from zoo.data import loaders as data


def test_round_trip_raw_and_gz(tmp_path):
    images = np.arange(2 * 28 * 28, dtype=np.uint8).reshape(2, 28, 28)
    for name in ("a.idx", "a.idx.gz"):
        write_idx(tmp_path / name, images)
        np.testing.assert_array_equal(read_idx(str(tmp_path / name), 3), images)


@pytest.mark.parametrize(
    "name, content, ndim, message",
    [
        pytest.param(
            "t.idx",
            lambda idx: idx(np.zeros((3, 28, 28), np.uint8))[:-10],
            3,
            r"t.idx: expected 2352 data bytes .*found 2342.*truncated",
            id="truncated data",
        ),
        pytest.param(
            "h.idx",
            lambda idx: b"\x00\x00\x08\x03\x00\x00",
            3,
            "expected a 16-byte IDX header, found 6 bytes",
            id="truncated header",
        ),
        pytest.param(
            "l.idx",
            lambda idx: idx(np.zeros(4, np.uint8)) + b"x",
            1,
            "expected 4 data bytes for shape .*found more",
            id="trailing bytes",
        ),
        pytest.param(
            "labels.idx",
            lambda idx: idx(np.zeros(4, np.uint8)),
            3,
            r"expected IDX magic number 0x00000803 .*found 0x00000801",
            id="wrong magic",
        ),
        pytest.param(
            "bad.gz",
            lambda idx: b"not gzip at all",
            1,
            "bad.gz: expected a readable IDX file",
            id="corrupt gzip",
        ),
    ],
)
def test_unreadable_file_is_refused(tmp_path, name, content, ndim, message):
    def idx(array):
        write_idx(tmp_path / "written.idx", array)
        return (tmp_path / "written.idx").read_bytes()

    path = tmp_path / name
    path.write_bytes(content(idx))
    with pytest.raises(DataError, match=message):
        read_idx(str(path), ndim)


def test_write_rejects_other_dtypes(tmp_path):
    with pytest.raises(DataError, match="expected a uint8 array of 1 or 3 dimensions"):
        write_idx(tmp_path / "f", np.zeros(3, np.float32))


def test_load_directory(tmp_path):
    make_idx_dir(tmp_path, n_train=50, n_test=20, gz=False)
    sets = load_mnist(data_dir=str(tmp_path), validation=10)
    assert (
        sets.train.num_examples,
        sets.validation.num_examples,
        sets.test.num_examples,
    ) == (
        40,
        10,
        20,
    )
    assert sets.train.images.dtype == np.float32 and sets.train.images.shape == (40, 784)
    assert 0.0 <= sets.train.images.min() and sets.train.images.max() <= 1.0
    assert sets.train.labels.shape == (40, 10) and (sets.train.labels.sum(1) == 1).all()
    plain = load_mnist(data_dir=str(tmp_path), validation=10, one_hot=False)
    np.testing.assert_array_equal(plain.test.labels, sets.test.labels.argmax(1))


def test_env_variable_source(tmp_path, monkeypatch):
    make_idx_dir(tmp_path, n_train=0, n_test=5)
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path))
    sets = load_mnist()
    assert sets.source == str(tmp_path) and sets.test.num_examples == 5
    assert sets.train.num_examples == 0
    with pytest.raises(
        DataError, match=r"next_batch: expected batch_size to be an int in \[1, 0\]"
    ):
        sets.train.next_batch(1)


def test_count_mismatch(tmp_path):
    make_idx_dir(tmp_path, n_train=0, n_test=5)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", np.zeros(4, np.uint8))
    with pytest.raises(DataError, match="expected 5 labels .*found 4"):
        load_mnist(data_dir=str(tmp_path))


def test_label_out_of_range(tmp_path):
    make_idx_dir(tmp_path, n_train=0, n_test=5)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", np.full(5, 12, np.uint8))
    with pytest.raises(DataError, match=r"expected labels 0..9, found 12"):
        load_mnist(data_dir=str(tmp_path))


def test_missing_partner_and_empty_dir(tmp_path):
    with pytest.raises(DataError, match="expected at least t10k-images-idx3-ubyte"):
        load_mnist(data_dir=str(tmp_path))
    make_idx_dir(tmp_path, n_train=0, n_test=5)
    os.remove(tmp_path / "t10k-labels-idx1-ubyte.gz")
    with pytest.raises(
        DataError, match="expected t10k-labels-idx1-ubyte.*beside its partner"
    ):
        load_mnist(data_dir=str(tmp_path))


def test_missing_directory_and_unknown_dataset(tmp_path):
    with pytest.raises(DataError, match="nope: expected a directory of MNIST IDX files"):
        load_mnist(data_dir=str(tmp_path / "nope"))
    with pytest.raises(
        DataError, match=r"expected dataset to be one of mnist, fashion_mnist"
    ):
        load_mnist("cifar10", data_dir=str(tmp_path))


def test_too_large_validation(tmp_path):
    make_idx_dir(tmp_path, n_train=20, n_test=5)
    with pytest.raises(DataError, match="expected at most 20 validation examples"):
        load_mnist(data_dir=str(tmp_path), validation=30)


def test_offline_tfds_fails_fast(monkeypatch, tmp_path):
    monkeypatch.delenv("ZOO_DATA_DIR", raising=False)
    monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path))  # nothing prepared there
    monkeypatch.setattr(data, "network_reachable", lambda: False)
    with pytest.raises(DataError, match=r"tfds:mnist: .*found neither; pass data_dir"):
        load_mnist("mnist")


def test_batches_cover_each_epoch_and_are_seeded():
    images = np.arange(10, dtype=np.float32)[:, None]
    ds = DataSet(images, images.copy(), seed=3)
    epoch = np.concatenate([ds.next_batch(4)[0], ds.next_batch(4)[0]])
    rest, _ = ds.next_batch(4)  # 2 left in epoch 0, then 2 from epoch 1
    assert sorted(np.concatenate([epoch, rest[:2]]).ravel()) == list(range(10))
    assert ds.state() == {"epoch": 1, "position": 2}
    again = DataSet(images, images.copy(), seed=3)
    again.restore({"epoch": 1, "position": 2})
    np.testing.assert_array_equal(ds.next_batch(5)[0], again.next_batch(5)[0])
    other = DataSet(images, images.copy(), seed=4)
    assert not np.array_equal(
        other.next_batch(10)[0], DataSet(images, images, seed=3).next_batch(10)[0]
    )


def test_real_mnist_test_split(mnist_test_dir):
    for name, md5 in (
        ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
        ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"),
    ):
        with open(os.path.join(mnist_test_dir, name), "rb") as f:
            assert hashlib.md5(f.read()).hexdigest() == md5
    sets = load_mnist(data_dir=mnist_test_dir)
    assert sets.test.images.shape == (10000, 784)
    assert np.bincount(sets.test.labels.argmax(1)).min() > 800
    with gzip.open(os.path.join(mnist_test_dir, "t10k-labels-idx1-ubyte.gz")) as f:
        assert f.read(8)[4:] == (10000).to_bytes(4, "big")


FASHION = "/usr/share/datasets/fashion-mnist"


def test_files_are_named_by_content_not_by_the_flag(tmp_path, mnist_test_dir):
    if not os.path.isdir(FASHION):
        pytest.skip(f"Fashion-MNIST not found at {FASHION}")
    fashion, mnist = identify(None, FASHION), identify(None, mnist_test_dir)
    assert (fashion.name, mnist.name) == ("fashion_mnist", "mnist")
    assert fashion.md5 != mnist.md5 and fashion.source == FASHION
    assert identify("fashion_mnist", FASHION) == fashion
    with pytest.raises(
        DataError,
        match=r"fashion-mnist: expected mnist files \(--dataset mnist\), found "
        r"fashion_mnist files .*; pass --dataset fashion_mnist",
    ):
        identify("mnist", FASHION)
    with pytest.raises(DataError, match=r"expected fashion_mnist files .* found mnist"):
        load_mnist("fashion_mnist", data_dir=mnist_test_dir)
    make_idx_dir(tmp_path, 20, 10)
    unknown = load_mnist("mnist", data_dir=str(tmp_path), validation=0)
    assert unknown.name == f"idx:{tmp_path}"
    assert unknown.md5 == identify(None, str(tmp_path)).md5


def test_identity_changes_with_the_labels_or_the_first_images(tmp_path):
    make_idx_dir(tmp_path, 20, 10)
    before = identify(None, str(tmp_path)).md5
    changes = (("t10k-labels-idx1-ubyte.gz", 3), ("t10k-images-idx3-ubyte.gz", 500))
    for name, index in changes:
        path = tmp_path / name
        original = read_idx(str(path), 1 if "labels" in name else 3)
        changed = original.copy()
        changed.reshape(-1)[index] = (int(changed.reshape(-1)[index]) + 1) % 10
        write_idx(str(path), changed)
        assert identify(None, str(tmp_path)).md5 != before, name
        write_idx(str(path), original)
        assert identify(None, str(tmp_path)).md5 == before


@pytest.mark.parametrize(
    "state",
    [
        {"epoch": 0, "position": 8},
        {"epoch": 0, "position": 9},
        {"epoch": 0, "position": -1},
        {"epoch": -1, "position": 0},
        {"epoch": 0, "position": "3"},
        {"epoch": 0.5, "position": 0},
        {"epoch": True, "position": 0},
        {"epoch": 0},
        [0, 0],
    ],
)
def test_restore_refuses_a_position_outside_the_data(state):
    dataset = DataSet(np.zeros((8, 784), np.float32), np.zeros((8, 10), np.float32))
    with pytest.raises(DataError, match=r"DataSet.restore: expected \{'epoch': int >= 0"):
        dataset.restore(state)
    dataset.restore({"epoch": 2, "position": 7})
    assert dataset.next_indices(1).shape == (1,)
