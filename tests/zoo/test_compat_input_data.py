"""tensorflow.examples.tutorials.mnist.input_data under install(): read_data_sets on
IDX files the test writes (splits, dtypes, one-hot, reshape), next_batch's order as
TF 1.15 drew it, fake data, the module entries, and the errors."""

import importlib
import os
import sys

import numpy as np
import pytest
import tensorflow as tf

import zoo.compat
from layers.errors import DataError, ZooError
from tests.conftest import make_idx_dir
from tests.zoo.test_compat import uninstalled  # noqa: F401  (autouse: nothing installed)
from zoo.data import read_idx

MODULES = ["tensorflow.examples", "tensorflow.examples.tutorials",
           "tensorflow.examples.tutorials.mnist",
           "tensorflow.examples.tutorials.mnist.input_data"]  # fmt: skip


@pytest.fixture
def idx_dir(tmp_path):
    return make_idx_dir(tmp_path, 60, 20)


def tf115_batches(images, labels, seed, sizes):
    """TF 1.15's next_batch, restated: np.random seeded once, a shuffle at the
    first batch and at each epoch's end, a batch across the end joined."""
    np.random.seed(seed)
    order = np.random.permutation(len(images))  # the same draws as shuffle(arange)
    images, labels, start, out = images[order], labels[order], 0, []
    for size in sizes:
        if start + size <= len(images):
            out.append((images[start:start + size], labels[start:start + size]))
            start += size
            continue
        rest = images[start:], labels[start:]
        order = np.random.permutation(len(images))
        images, labels = images[order], labels[order]
        start = size - len(rest[0])
        out.append((np.concatenate([rest[0], images[:start]]),
                    np.concatenate([rest[1], labels[:start]])))  # fmt: skip
    return out


def test_install_adds_the_tutorial_modules_and_uninstall_removes_them(idx_dir):
    assert not any(name in sys.modules for name in MODULES)
    zoo.compat.install()
    from tensorflow.examples.tutorials.mnist import input_data

    assert all(name in sys.modules for name in MODULES)
    assert importlib.import_module(MODULES[-1]) is input_data
    from tensorflow.contrib.learn.python.learn.datasets.mnist import read_data_sets

    assert read_data_sets is input_data.read_data_sets
    zoo.compat.uninstall()
    assert not any(name in sys.modules for name in MODULES)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(MODULES[-1])


def test_read_data_sets_splits_dtypes_and_shapes_as_tf115(idx_dir):
    zoo.compat.install()
    from tensorflow.examples.tutorials.mnist import input_data

    raw = read_idx(os.path.join(idx_dir, "train-images-idx3-ubyte.gz"), 3)
    labels = read_idx(os.path.join(idx_dir, "train-labels-idx1-ubyte.gz"), 1)
    data = input_data.read_data_sets(idx_dir, one_hot=True, validation_size=10)
    assert isinstance(data, input_data.Datasets) and data._fields == (
        "train", "validation", "test")
    assert (data.train.num_examples, data.validation.num_examples,
            data.test.num_examples) == (50, 10, 20)  # fmt: skip
    assert data.train.images.dtype == np.float32 and data.train.images.shape == (50, 784)
    assert data.train.labels.dtype == np.float64 and data.train.labels.shape == (50, 10)
    expected = raw[:10].reshape(10, 784).astype(np.float32) * np.float32(1 / 255)
    np.testing.assert_array_equal(data.validation.images, expected)
    np.testing.assert_array_equal(data.validation.labels.argmax(1), labels[:10])
    as_bytes = input_data.read_data_sets(idx_dir, dtype=tf.uint8, reshape=False,
                                         validation_size=0)  # fmt: skip
    assert as_bytes.train.images.shape == (60, 28, 28, 1)
    np.testing.assert_array_equal(as_bytes.train.images[..., 0], raw)
    np.testing.assert_array_equal(as_bytes.train.labels, labels)  # uint8, not one-hot
    assert as_bytes.train.labels.dtype == np.uint8


def test_next_batch_draws_tf115s_order_across_epochs(idx_dir):
    zoo.compat.install()
    from tensorflow.examples.tutorials.mnist import input_data

    data = input_data.read_data_sets(idx_dir, validation_size=10, seed=3)
    images, labels = data.train.images.copy(), data.train.labels.copy()
    sizes = [16, 16, 16, 16, 30, 7]  # the 4th and 5th cross an epoch's end
    fresh = input_data.DataSet(images.reshape(-1, 28, 28, 1) * 255, labels,
                               dtype=tf.uint8, seed=3)  # fmt: skip
    found = [fresh.next_batch(size) for size in sizes]
    expected = tf115_batches(images * 255, labels, 3, sizes)
    for (got_x, got_y), (want_x, want_y) in zip(found, expected, strict=True):
        np.testing.assert_array_equal(got_x, want_x.reshape(len(want_x), -1))
        np.testing.assert_array_equal(got_y, want_y)
    assert fresh.epochs_completed == 2
    with tf.Graph().as_default():  # seed None: the graph's seed, as TF 1.15
        tf.compat.v1.set_random_seed(5)
        first, again = (
            input_data.DataSet(images[..., None], labels, dtype=tf.uint8).next_batch(8)[1]
            for _ in range(2))  # fmt: skip
    np.testing.assert_array_equal(first, again)


def test_fake_data_batches_are_constant():
    zoo.compat.install()
    from tensorflow.examples.tutorials.mnist import input_data

    data = input_data.read_data_sets("nowhere", fake_data=True, one_hot=True)
    images, labels = data.train.next_batch(3, fake_data=True)
    assert data.test.num_examples == 10000
    assert np.array(images).shape == (3, 784) and set(np.ravel(images)) == {1}
    assert labels == [[1] + [0] * 9] * 3


def test_files_come_from_zoo_data_dir_when_train_dir_has_none(idx_dir, tmp_path,
                                                              monkeypatch):  # fmt: skip
    zoo.compat.install()
    from tensorflow.examples.tutorials.mnist import input_data

    monkeypatch.setenv("ZOO_DATA_DIR", idx_dir)
    data = input_data.read_data_sets(str(tmp_path / "MNIST_data"), validation_size=0)
    assert data.train.num_examples == 60 and data.test.num_examples == 20


def test_errors_name_the_folder_and_the_fix(idx_dir, tmp_path, monkeypatch):
    zoo.compat.install()
    from tensorflow.examples.tutorials.mnist import input_data

    os.remove(os.path.join(idx_dir, "train-labels-idx1-ubyte.gz"))
    with pytest.raises(DataError, match=r"read_data_sets: expected the four MNIST IDX "
                       r"files in .*found 3 of them \(missing train-labels-idx1-ubyte"):
        input_data.read_data_sets(idx_dir)
    monkeypatch.delenv("ZOO_DATA_DIR", raising=False)
    monkeypatch.setattr("zoo.data.loaders.network_reachable", lambda: False)
    monkeypatch.setattr("tensorflow_datasets.builder", lambda name: Unprepared())
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataError, match=r"read_data_sets: expected the four MNIST IDX "
                       rf"files in {empty} .*found none usable \(tfds:mnist"):
        input_data.read_data_sets(str(empty))
    with pytest.raises(ZooError, match=r"Validation size should be between 0 and 20\. "
                       r"Received: 30\."):
        input_data.read_data_sets(make_idx_dir(tmp_path, 20, 5), validation_size=30)
    with pytest.raises(TypeError, match="Invalid image dtype .*expected uint8 or float32"):
        input_data.read_data_sets(idx_dir, dtype=tf.int32)
    with pytest.raises(ZooError, match=r"DataSet: expected as many labels as images, found "
                       r"images.shape: \(4, 28, 28, 1\) labels.shape: \(3,\)"):
        input_data.DataSet(np.zeros((4, 28, 28, 1), np.uint8), np.zeros(3, np.uint8))


class Unprepared:
    data_dir = "/nowhere/tensorflow_datasets"

    @staticmethod
    def is_prepared():
        return False


def test_contrib_learn_datasets_has_mnist_and_names_the_rest():
    zoo.compat.install()
    datasets = tf.contrib.learn.datasets
    from tensorflow.examples.tutorials.mnist import input_data

    assert datasets.mnist.read_data_sets is input_data.read_data_sets
    with pytest.raises(ZooError, match="learn.datasets.load_dataset, which it does not "
                       "provide; use tf.keras.datasets, or zoo.data"):
        datasets.load_dataset  # noqa: B018
    with pytest.raises(ZooError, match="found 'foo', which TF 1.15 never had there"):
        datasets.foo  # noqa: B018


def test_real_mnist_test_split_alone_is_named_and_linked_it_loads(mnist_test_dir, tmp_path,
                                                                  monkeypatch):  # fmt: skip
    zoo.compat.install()
    from tensorflow.examples.tutorials.mnist import input_data

    monkeypatch.setenv("ZOO_DATA_DIR", mnist_test_dir)
    with pytest.raises(DataError, match=r"expected a training split in .*"
                       r"\(\$ZOO_DATA_DIR\), found only the test files"):
        input_data.read_data_sets(str(tmp_path / "MNIST_data"))
    for split in ("train", "t10k"):  # the test split standing in for both
        for kind in ("images-idx3-ubyte.gz", "labels-idx1-ubyte.gz"):
            source = os.path.join(mnist_test_dir, f"t10k-{kind}")
            os.symlink(source, tmp_path / f"{split}-{kind}")
    data = input_data.read_data_sets(str(tmp_path), one_hot=True)
    assert (data.train.num_examples, data.validation.num_examples) == (5000, 5000)
    np.testing.assert_array_equal(data.validation.labels, data.test.labels[:5000])
