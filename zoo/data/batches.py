"""Training batches drawn inside the graph, in a :class:`zoo.data.DataSet`'s own order.

:class:`GraphBatches` copies the arrays into the graph once and gathers each
batch there, so a training step needs no ``feed_dict`` (feeding costs 10-15 %
of a small model's step, see docs/benchmark.md). The batch order is the
DataSet's: the host computes the row indices of the next ``window`` batches with
:meth:`zoo.data.DataSet.next_indices` and writes them in one run, so the
iterator state stays ``(epoch, position)``, checkpoints resume exactly, and
the batches are those ``next_batch`` would have fed.

Usage::

    with tf.Graph().as_default():
        batches = GraphBatches(data.train, batch_size=128)
        ae = autoencoder(batches.images, scope="ae")
        train = tf.compat.v1.train.AdagradOptimizer(0.1).minimize(ae.loss)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            batches.initialize(session)
            for _ in range(1000):
                session.run(train, batches.next_feed(session))   # an empty feed
            session.run(ae.loss, {batches.images: test_images})  # evaluate: feed the tensor

    dataset = batch_dataset(tf.constant(images), tf.constant(labels), 128, seed=0)  # eager
"""

import tensorflow as tf

from layers.base import read_only
from layers.checks import int_problem, require
from layers.errors import DataError
from layers.variables import require_graph
from zoo.constants import BATCH_WINDOW
from zoo.data.loaders import check_batch_size


def batch_dataset(images, labels, batch_size, seed=0):
    """Returns an endless ``tf.data.Dataset`` of shuffled ``(images, labels)`` batches.

    Args:
        images: tensor or variable [n, ...] with n known statically. A variable is
            read whole, then gathered: a sparse read would switch it to
            copy-on-read, copying it away from any tensor or numpy view sharing
            its buffer.
        labels: tensor or variable [n, ...].
        batch_size: a positive int, at most n.
        seed: seed of the shuffling.

    Raises:
        DataError: ``batch_size`` is out of range.
    """
    n = images.shape[0]
    check_batch_size("batch_dataset", batch_size, n)

    @tf.autograph.experimental.do_not_convert
    def gather(index):
        return tuple(tf.gather(tf.convert_to_tensor(a), index) for a in (images, labels))

    return (
        tf.data.Dataset.range(n)
        .shuffle(n, seed=seed, reshuffle_each_iteration=True)
        .repeat()
        .batch(batch_size, drop_remainder=True)
        .map(gather)
        .prefetch(tf.data.AUTOTUNE)
    )


class GraphBatches:
    """The next training batch of a :class:`zoo.data.DataSet`, gathered in the graph.

    Every run that evaluates :attr:`images` or :attr:`labels` consumes one
    batch, so call :meth:`next_feed` before each such run; runs that feed
    :attr:`images` (to evaluate on other data) consume nothing. The arrays and
    indices live in variables outside every collection: neither trained,
    initialized by ``global_variables_initializer`` nor checkpointed.

    Args:
        dataset: the :class:`zoo.data.DataSet` whose order is followed; it is
            advanced as batches are drawn.
        batch_size: examples per batch.
        window: batches whose indices are written to the graph at once.
        name: name scope of the ops.
        arrays_of: None, or another GraphBatches of this graph over the same
            arrays: this one reads that one's in-graph copy (several pipelines,
            one copy of the data) and its :meth:`initialize` copies nothing.

    Raises:
        DataError: ``batch_size`` or ``window`` is out of range, or
            ``arrays_of`` holds other arrays or belongs to another graph.
        EagerError: built eagerly (use :func:`batch_dataset` there).
    """

    def __init__(
        self, dataset, batch_size, window=BATCH_WINDOW, name="batches", arrays_of=None
    ):
        require_graph("GraphBatches")
        check_batch_size("GraphBatches", batch_size, dataset.num_examples)
        require(
            "GraphBatches",
            int_problem(window, name="window"),
            "pass window=256 or another count of batches",
            DataError,
        )
        self.dataset, self.batch_size, self.window = dataset, batch_size, window
        self._arrays = (dataset.images, dataset.labels)
        self._arrays_of = arrays_of
        if arrays_of is not None:
            _check_same_arrays(self._arrays, arrays_of)
        self._states = []  # dataset state before each batch of the window
        self._consumed = window  # no window written yet: the dataset's state holds
        self._initialized = False
        with tf.name_scope(name):
            self._feed, owned = {}, []  # what initialize() feeds and copies
            if arrays_of is None:
                for array in self._arrays:
                    array_input = tf.compat.v1.placeholder(
                        tf.as_dtype(array.dtype), array.shape
                    )
                    self._feed[array_input] = array
                    owned.append(_hidden_variable(array_input, "array"))
                self._arrays_in_graph = owned
            else:
                self._arrays_in_graph = arrays_of._arrays_in_graph
            self._rows = tf.compat.v1.placeholder(tf.int32, [window, batch_size])
            self._indices = _hidden_variable(
                tf.zeros([window, batch_size], tf.int32), "indices"
            )
            self._slot = _hidden_variable(tf.constant(0), "slot")
            self._variables = (*owned, self._indices, self._slot)
            self._refill = tf.group(
                self._indices.assign(self._rows), self._slot.assign(0), name="refill"
            )
            names = ("images", "labels")
            self._images, self._labels = (
                tf.compat.v1.placeholder_with_default(batch, [None, *batch.shape[1:]], name)
                for batch, name in zip(self.draw(), names, strict=True)
            )

    images = read_only(
        "_images",
        "The batch's images [batch_size, ...]; feed it any [n, ...] to evaluate those.",
    )

    labels = read_only(
        "_labels", "The batch's labels [batch_size, ...]; feedable like :attr:`images`."
    )

    @property
    def seed(self):
        """The dataset's shuffling seed."""
        return self.dataset.seed

    @property
    def num_examples(self):
        """Examples in the dataset."""
        return self.dataset.num_examples

    def draw(self):
        """Returns new ``(images, labels)`` tensors of the next batch, for a loop body.

        Each evaluation takes the next batch of the window written by
        :meth:`next_feed`; :func:`zoo.training.repeat_step` calls it inside a
        ``tf.while_loop`` so one run trains on several batches in order.
        """
        slot = self._slot.assign_add(1, read_value=True) - 1
        rows = tf.gather(self._indices.value(), slot)
        # Dense reads then GatherV2: a sparse read of a resource variable
        # switches it to copy-on-read, copying the whole array per run.
        return tuple(tf.gather(v.value(), rows) for v in self._arrays_in_graph)

    def initialize(self, session):
        """Copies the arrays into ``session`` (once, before the first batch); with
        ``arrays_of``, initializes that one first if it was not."""
        if self._arrays_of is not None and not self._arrays_of._initialized:
            self._arrays_of.initialize(session)
        session.run([v.initializer for v in self._variables], self._feed)
        self._initialized = True
        self._consumed = self.window  # a new session: indices are written on first use

    def next_feed(self, session, count=1):
        """Readies the next ``count`` batches; returns the (empty) feed of their run.

        Args:
            session: the session the batches were initialized in.
            count: batches the next run draws (1, or the steps of a
                :func:`zoo.training.repeat_step` run); at most ``window``.

        Raises:
            DataError: :meth:`initialize` was not called, or ``count`` is not in
                ``[1, window]``.
        """
        if not self._initialized:
            raise DataError(
                "GraphBatches: expected initialize(session) before the first batch, "
                "found none; call batches.initialize(session) after creating the session"
            )
        require(
            "GraphBatches",
            int_problem(count, 1, self.window, name="the batches per run"),
            "build the GraphBatches with a larger window",
            DataError,
        )
        if self._consumed + count > self.window:
            self.dataset.restore(self.state())  # rewrite the window from the next batch
            self._states, rows = [], []
            for _ in range(self.window):
                self._states.append(self.dataset.state())
                rows.append(self.dataset.next_indices(self.batch_size))
            session.run(self._refill, {self._rows: rows})
            self._consumed = 0
        self._consumed += count
        return {}

    def state(self):
        """Returns ``{"epoch", "position"}`` after the batches consumed so far."""
        if self._consumed == self.window:
            return self.dataset.state()
        return self._states[self._consumed]

    def restore(self, state):
        """Continues from a state returned by :meth:`state`."""
        self.dataset.restore(state)
        self._consumed = self.window


def _check_same_arrays(arrays, other):
    """Refuses to share the in-graph copy of ``other`` (a GraphBatches) for other
    ``arrays`` or from another graph."""
    if any(a is not b for a, b in zip(arrays, other._arrays, strict=True)):
        raise DataError(
            "GraphBatches: expected arrays_of over the same images and labels arrays, "
            "found other arrays; share only between batches of one DataSet's arrays"
        )
    if other._slot.graph is not tf.compat.v1.get_default_graph():
        raise DataError(
            "GraphBatches: expected arrays_of built in the current graph, found it "
            "in another graph; build both GraphBatches in one graph"
        )


def _hidden_variable(initial_value, name):
    """A variable outside every collection: not trained, saved or globally initialized."""
    return tf.compat.v1.Variable(initial_value, trainable=False, collections=[], name=name)
