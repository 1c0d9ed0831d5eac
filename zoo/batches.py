"""Training batches drawn inside the graph with ``tf.data`` instead of ``feed_dict``.

Each epoch visits every example once in an order drawn from ``seed`` (the
indices are shuffled, not the images, so a new iterator costs little); the
arrays are copied into the iterator once, when it is initialized, and never
embedded in the graph.

Usage::

    with tf.Graph().as_default():
        batches = GraphBatches(data.train, batch_size=128, seed=0)
        ae = autoencoder(batches.images, scope="ae")
        train = tf.compat.v1.train.AdagradOptimizer(0.1).minimize(ae.loss)
        with tf.compat.v1.Session() as session:
            batches.initialize(session)
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(train)                       # no feed_dict

    dataset = batch_dataset(tf.constant(images), tf.constant(labels), 128, seed=0)  # eager
"""

import tensorflow as tf

from layers.errors import DataError
from layers.variables import require_graph


def batch_dataset(images, labels, batch_size, seed=0):
    """Returns an endless ``tf.data.Dataset`` of shuffled ``(images, labels)`` batches.

    Args:
        images: tensor [n, ...] with n known statically.
        labels: tensor [n, ...].
        batch_size: a positive int, at most n.
        seed: seed of the shuffling.

    Raises:
        DataError: ``batch_size`` is out of range.
    """
    n = images.shape[0]
    check_batch_size("batch_dataset", batch_size, n)

    @tf.autograph.experimental.do_not_convert
    def gather(index):
        return tf.gather(images, index), tf.gather(labels, index)

    return (
        tf.data.Dataset.range(n)
        .shuffle(n, seed=seed, reshuffle_each_iteration=True)
        .repeat()
        .batch(batch_size, drop_remainder=True)
        .map(gather)
        .prefetch(tf.data.AUTOTUNE)
    )


def check_batch_size(owner, batch_size, num_examples):
    """Raises DataError naming ``owner`` unless ``0 < batch_size <= num_examples``."""
    if isinstance(batch_size, bool) or not 0 < batch_size <= num_examples:
        raise DataError(
            f"{owner}: expected 0 < batch_size <= {num_examples} examples, found "
            f"{batch_size}; load a split with data or use a smaller batch"
        )


class GraphBatches:
    """The next training batch as graph tensors, from a :class:`zoo.data.DataSet`'s arrays.

    Args:
        dataset: a :class:`zoo.data.DataSet` (its ``images`` and ``labels``).
        batch_size: examples per batch.
        seed: seed of the shuffling.

    Raises:
        DataError: ``batch_size`` is out of range.
        EagerError: built eagerly (use :func:`batch_dataset` there).
    """

    def __init__(self, dataset, batch_size, seed=0):
        require_graph("GraphBatches")
        check_batch_size("GraphBatches", batch_size, dataset.num_examples)
        self._arrays = (dataset.images, dataset.labels)
        with tf.name_scope("graph_batches"):
            self._inputs = tuple(
                tf.compat.v1.placeholder(tf.as_dtype(a.dtype), a.shape)
                for a in self._arrays
            )
            self._iterator = tf.compat.v1.data.make_initializable_iterator(
                batch_dataset(*self._inputs, batch_size, seed)
            )
            self._images, self._labels = self._iterator.get_next()

    @property
    def images(self):
        """The next batch of images [batch_size, ...]; each run draws a new batch."""
        return self._images

    @property
    def labels(self):
        """The labels of the same batch [batch_size, ...]."""
        return self._labels

    def initialize(self, session):
        """Copies the arrays into the iterator and starts at the first batch."""
        session.run(
            self._iterator.initializer, dict(zip(self._inputs, self._arrays, strict=True))
        )
