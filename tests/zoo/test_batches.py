"""In-graph batches: shapes, one visit per example per epoch, seeding, misuse errors."""

import numpy as np
import pytest
import tensorflow as tf

from layers.errors import DataError, EagerError
from zoo.batches import GraphBatches, batch_dataset
from zoo.data import DataSet


def numbered(n):
    """A DataSet whose image i is filled with i, so batches can be traced back."""
    images = np.repeat(np.arange(n, dtype=np.float32)[:, None], 3, axis=1)
    return DataSet(images, np.arange(n, dtype=np.int64))


def draw(dataset, batch_size, seed, runs):
    with tf.Graph().as_default():
        batches = GraphBatches(dataset, batch_size, seed=seed)
        with tf.compat.v1.Session() as session:
            batches.initialize(session)
            return [session.run([batches.images, batches.labels]) for _ in range(runs)]


def test_each_epoch_visits_every_example_once_with_matching_labels(graph):
    drawn = draw(numbered(12), 4, seed=0, runs=6)  # two epochs

    images = np.concatenate([b[0] for b in drawn])
    labels = np.concatenate([b[1] for b in drawn])
    assert drawn[0][0].shape == (4, 3)
    np.testing.assert_array_equal(images[:, 0], labels)
    assert sorted(labels[:12]) == list(range(12)) == sorted(labels[12:])
    assert list(labels[:12]) != list(range(12))  # shuffled


def test_same_seed_same_batches_other_seed_other_order():
    first = draw(numbered(50), 10, seed=3, runs=3)
    again = draw(numbered(50), 10, seed=3, runs=3)
    other = draw(numbered(50), 10, seed=4, runs=3)

    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a[1], b[1])
    assert any((a[1] != c[1]).any() for a, c in zip(first, other, strict=True))


def test_batch_tensors_have_static_shapes_for_the_builders(graph):
    batches = GraphBatches(numbered(20), 5)

    assert batches.images.shape.as_list() == [5, 3]
    assert batches.labels.shape.as_list() == [5]


@pytest.mark.parametrize("batch_size", [0, 21, True])
def test_batch_size_out_of_range_is_refused(graph, batch_size):
    with pytest.raises(DataError, match=r"GraphBatches: expected 0 < batch_size <= 20"):
        GraphBatches(numbered(20), batch_size)


def test_eager_build_is_refused_and_batch_dataset_works_there():
    with pytest.raises(EagerError, match=r"GraphBatches: expected a graph"):
        GraphBatches(numbered(20), 5)

    data = numbered(20)
    images, labels = next(iter(batch_dataset(tf.constant(data.images), data.labels, 5)))
    np.testing.assert_array_equal(images.numpy()[:, 0], labels.numpy())


def test_batch_dataset_refuses_a_batch_larger_than_the_data():
    data = numbered(4)
    with pytest.raises(DataError, match=r"batch_dataset: expected 0 < batch_size <= 4"):
        batch_dataset(tf.constant(data.images), tf.constant(data.labels), 5)
