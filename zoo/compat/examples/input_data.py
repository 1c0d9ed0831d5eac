"""TF 1.x's ``tensorflow.examples.tutorials.mnist.input_data`` on :mod:`zoo.data`.

TF 1.15's module re-exported ``read_data_sets`` of
``tensorflow.contrib.learn.python.learn.datasets.mnist``; this is that module's
public part, with its names, arguments, defaults, dtypes and batch order:
``DataSet.next_batch`` shuffles with NumPy's global generator, seeded when the
``DataSet`` is made from ``seed`` (or the graph's seed) as TF 1.15 did, so a
seeded program draws the batches it drew under TF 1.15.

Where the files come from (TF 1.x downloaded them into ``train_dir``): the four
IDX files in ``train_dir`` (``.gz`` or raw, MNIST or any data in its format,
Fashion-MNIST too), else the directory ``$ZOO_DATA_DIR``, else
tensorflow-datasets' ``mnist``; offline without files, a :class:`DataError`
within seconds. ``source_url`` is accepted and not used.

Usage::

    from tensorflow.examples.tutorials.mnist import input_data
    mnist = input_data.read_data_sets("MNIST_data/", one_hot=True)
    images, labels = mnist.train.next_batch(100)   # [100, 784] float32, [100, 10]
"""

import collections
import os

import numpy as np

from layers.errors import DataError, ZooError
from zoo.data.loaders import FILES, load_splits

__all__ = ["DEFAULT_SOURCE_URL", "DataSet", "Datasets", "dense_to_one_hot",
           "read_data_sets"]  # fmt: skip

DEFAULT_SOURCE_URL = "https://storage.googleapis.com/cvdf-datasets/mnist/"
NUM_CLASSES = 10

Datasets = collections.namedtuple("Datasets", ["train", "validation", "test"])


def dense_to_one_hot(labels_dense, num_classes):
    """TF 1.15's one-hot labels: float64 ``[n, num_classes]``."""
    one_hot = np.zeros((len(labels_dense), num_classes))
    one_hot[np.arange(len(labels_dense)), labels_dense.ravel()] = 1
    return one_hot


def _image_dtype(dtype):
    """``np.uint8`` or ``np.float32`` for TF 1.15's ``dtype`` argument.

    Raises:
        TypeError: another dtype (TF 1.15's error and words).
    """
    import tensorflow as tf

    dtype = tf.as_dtype(dtype).base_dtype
    if dtype not in (tf.uint8, tf.float32):
        raise TypeError(f"Invalid image dtype {dtype!r}, expected uint8 or float32")
    return dtype.as_numpy_dtype


class DataSet:
    """TF 1.15's MNIST ``DataSet``: images, labels, and a shuffling batch iterator.

    Args:
        images: uint8 ``[n, rows, cols, 1]`` images (``[]`` with ``fake_data``).
        labels: ``[n]`` or one-hot ``[n, 10]`` labels.
        fake_data: a set of 10,000 examples whose batches are constant (tests).
        one_hot: with ``fake_data``, whether batches' labels are one-hot.
        dtype: ``tf.float32`` (images scaled to ``[0, 1]``) or ``tf.uint8``.
        reshape: images flattened to ``[n, rows * cols]``.
        seed: seeds NumPy's global generator, which ``next_batch`` shuffles with
            (None: the graph's seed, or none).

    Raises:
        TypeError: another ``dtype``.
        ZooError: images and labels of different counts.
    """

    def __init__(self, images, labels, fake_data=False, one_hot=False, dtype=np.float32,
                 reshape=True, seed=None):  # fmt: skip
        import tensorflow as tf

        graph_seed, op_seed = tf.compat.v1.get_seed(seed)
        np.random.seed(graph_seed if seed is None else op_seed)
        dtype = _image_dtype(dtype)
        if fake_data:
            self._num_examples, self.one_hot = 10000, one_hot
        else:
            images, labels = np.asarray(images), np.asarray(labels)
            if images.shape[0] != labels.shape[0]:
                raise ZooError(
                    f"DataSet: expected as many labels as images, found images.shape: "
                    f"{images.shape} labels.shape: {labels.shape}; pass the labels of "
                    "these images"
                )
            self._num_examples = images.shape[0]
            if reshape:
                images = images.reshape(len(images), images.shape[1] * images.shape[2])
            if dtype == np.float32:
                images = np.multiply(images.astype(np.float32), 1.0 / 255.0)
        self._images, self._labels = images, labels
        self._epochs_completed = 0
        self._index_in_epoch = 0

    @property
    def images(self):
        """The images, in the current epoch's order."""
        return self._images

    @property
    def labels(self):
        """The labels, in the images' order."""
        return self._labels

    @property
    def num_examples(self):
        """The number of examples."""
        return self._num_examples

    @property
    def epochs_completed(self):
        """Epochs finished by :meth:`next_batch`."""
        return self._epochs_completed

    def next_batch(self, batch_size, fake_data=False, shuffle=True):
        """The next ``batch_size`` examples, as TF 1.15 drew them: the first epoch
        and each later one in an order of ``np.random.shuffle``; a batch across an
        epoch's end joins its rest to the next epoch's start.

        Args:
            batch_size: the number of examples.
            fake_data: constant images of ones and labels of class 0.
            shuffle: shuffle each epoch (else the stored order).

        Returns:
            ``(images, labels)``.
        """
        if fake_data:
            label = [1] + [0] * (NUM_CLASSES - 1) if self.one_hot else 0
            return [[1] * 784] * batch_size, [label] * batch_size
        start = self._index_in_epoch
        if self._epochs_completed == 0 and start == 0 and shuffle:
            self._shuffle()
        if start + batch_size <= self._num_examples:
            self._index_in_epoch += batch_size
            return (self._images[start:self._index_in_epoch],
                    self._labels[start:self._index_in_epoch])  # fmt: skip
        self._epochs_completed += 1
        rest = self._images[start:], self._labels[start:]
        if shuffle:
            self._shuffle()
        self._index_in_epoch = batch_size - len(rest[0])
        end = self._index_in_epoch
        return (np.concatenate((rest[0], self._images[:end]), axis=0),
                np.concatenate((rest[1], self._labels[:end]), axis=0))  # fmt: skip

    def _shuffle(self):
        order = np.arange(self._num_examples)
        np.random.shuffle(order)
        self._images, self._labels = self._images[order], self._labels[order]


def read_data_sets(train_dir, fake_data=False, one_hot=False, dtype=np.float32,
                   reshape=True, validation_size=5000, seed=None,
                   source_url=DEFAULT_SOURCE_URL):  # fmt: skip
    """TF 1.15's ``read_data_sets``: MNIST's train (less ``validation_size``),
    validation and test splits.

    Args:
        train_dir: a directory of the four IDX files; without them, ``$ZOO_DATA_DIR``
            or tensorflow-datasets (see the module).
        fake_data: three :class:`DataSet` s of ``fake_data``, no files read.
        one_hot: labels as float64 one-hot ``[n, 10]`` (else uint8 ``[n]``).
        dtype: ``tf.float32`` (images in ``[0, 1]``) or ``tf.uint8``.
        reshape: images ``[n, 784]`` (else ``[n, 28, 28, 1]``).
        validation_size: examples taken from the start of the training files.
        seed: as :class:`DataSet`.
        source_url: TF 1.x's download address; not used.

    Returns:
        ``Datasets(train, validation, test)``.

    Raises:
        DataError: ``train_dir`` holds some of the four files only, or none and
            no other source has them (offline without ``$ZOO_DATA_DIR``).
        ZooError: ``validation_size`` out of range (a ``ValueError``, TF 1.15's words).
        TypeError: another ``dtype``.
    """
    del source_url
    options = dict(one_hot=one_hot, dtype=dtype, reshape=reshape, seed=seed)
    if fake_data:
        return Datasets(*(DataSet([], [], fake_data=True, **options) for _ in range(3)))
    _image_dtype(dtype)
    splits = _splits(train_dir)
    train_images, train_labels = splits["train"]
    if not 0 <= validation_size <= len(train_images):
        raise ZooError(
            f"read_data_sets: Validation size should be between 0 and "
            f"{len(train_images)}. Received: {validation_size}.; pass a "
            "validation_size in that range"
        )
    del options["one_hot"]

    def split(images, labels):
        labels = dense_to_one_hot(labels, NUM_CLASSES) if one_hot else labels
        return DataSet(images[..., None], labels, **options)

    return Datasets(
        train=split(train_images[validation_size:], train_labels[validation_size:]),
        validation=split(train_images[:validation_size], train_labels[:validation_size]),
        test=split(*splits["test"]),
    )


def _splits(train_dir):
    """``{"train": (images, labels), "test": ...}`` as uint8 arrays, from
    ``train_dir`` if it holds the four files, else the loaders' other sources.

    Raises:
        DataError: some of the four files only, or no source with the training split.
    """
    names = [name for pair in FILES.values() for name in pair]
    present = [name for name in names
               if any(os.path.isfile(os.path.join(train_dir, name + suffix))
                      for suffix in ("", ".gz"))]  # fmt: skip
    if present and len(present) < len(names):
        missing = ", ".join(sorted(set(names) - set(present)))
        raise DataError(
            f"read_data_sets: expected the four MNIST IDX files in {train_dir}, found "
            f"{len(present)} of them (missing {missing}[.gz]); copy the missing files "
            "there"
        )
    try:
        _, splits = load_splits(data_dir=train_dir if present else None)
    except DataError as err:
        raise DataError(
            f"read_data_sets: expected the four MNIST IDX files in {train_dir} (TF 1.x "
            f"downloaded them there), $ZOO_DATA_DIR or tensorflow-datasets, found none "
            f"usable ({err})"
        ) from None
    if not len(splits["train"][0]):
        raise DataError(
            f"read_data_sets: expected a training split in {os.environ['ZOO_DATA_DIR']} "
            "($ZOO_DATA_DIR), found only the test files; copy the four IDX files into "
            f"{train_dir}"
        )
    return splits
