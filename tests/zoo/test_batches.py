"""In-graph batches: the DataSet's own order, exact state across windows, misuse errors."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from layers.errors import DataError, EagerError
from zoo.data import DataSet
from zoo.data.batches import GraphBatches, batch_dataset


def numbered(n, seed=0):
    """A DataSet whose image i is filled with i, so batches can be traced back."""
    images = np.repeat(np.arange(n, dtype=np.float32)[:, None], 3, axis=1)
    return DataSet(images, np.arange(n, dtype=np.int64), seed=seed)


def draw(batches, session, runs):
    """Labels of the next ``runs`` batches, each drawn as train_loop does."""
    drawn = []
    for _ in range(runs):
        images, labels = session.run(
            [batches.images, batches.labels], batches.next_feed(session)
        )
        np.testing.assert_array_equal(images[:, 0], labels)
        drawn.append(labels)
    return drawn


def test_batches_are_next_batch_s_across_epochs_and_window_refills(graph):
    dataset = numbered(12, seed=3)
    expected = dataclasses.replace(dataset)
    batches = GraphBatches(dataset, 5, window=3)  # 5 does not divide 12: mixed epochs
    with tf.compat.v1.Session() as session:
        batches.initialize(session)
        drawn = draw(batches, session, runs=10)

    for labels in drawn:
        np.testing.assert_array_equal(labels, expected.next_batch(5)[1])
    assert batches.state() == expected.state() == {"epoch": 4, "position": 2}


def test_state_mid_window_resumes_to_the_same_batches(graph):
    batches = GraphBatches(numbered(20, seed=1), 3, window=4)
    with tf.compat.v1.Session() as session:
        batches.initialize(session)
        draw(batches, session, runs=6)  # 1.5 windows
        state = batches.state()
        following = draw(batches, session, runs=5)

        batches.restore(state)
        resumed = draw(batches, session, runs=5)

    assert state == {"epoch": 0, "position": 18}
    np.testing.assert_array_equal(resumed, following)


def test_feeding_the_images_tensor_consumes_no_batch(graph):
    batches = GraphBatches(numbered(10), 2)
    doubled = 2 * batches.images
    with tf.compat.v1.Session() as session:
        batches.initialize(session)
        first = draw(batches, session, runs=1)[0]
        other = session.run(doubled, {batches.images: np.ones((7, 3), np.float32)})
        second = draw(batches, session, runs=1)[0]

    np.testing.assert_array_equal(other, 2 * np.ones((7, 3)))
    expected = numbered(10)
    np.testing.assert_array_equal(first, expected.next_batch(2)[1])
    np.testing.assert_array_equal(second, expected.next_batch(2)[1])


def test_arrays_are_in_no_collection_and_widths_are_static(graph):
    batches = GraphBatches(numbered(20), 5)

    assert tf.compat.v1.global_variables() == []
    assert tf.compat.v1.local_variables() == []
    assert batches.images.shape.as_list() == [None, 3]  # any batch can be fed
    assert batches.labels.shape.as_list() == [None]


def test_batches_sharing_one_copy_each_follow_their_own_order(graph):
    dataset = numbered(12, seed=3)
    first = GraphBatches(dataclasses.replace(dataset), 5)
    second = GraphBatches(dataclasses.replace(dataset, seed=8), 4, arrays_of=first)
    with tf.compat.v1.Session() as session:
        second.initialize(session)  # initializes the copy's holder first
        first.initialize(session)
        drawn = draw(first, session, 3), draw(second, session, 3)

    arrays = [op for op in graph.get_operations() if op.type == "VarHandleOp"]
    assert len([op for op in arrays if "array" in op.name]) == 2  # images, labels: once
    for batches, size, labels in zip((first, second), (5, 4), drawn, strict=True):
        expected = dataclasses.replace(dataset, seed=batches.seed)
        for batch in labels:
            np.testing.assert_array_equal(batch, expected.next_batch(size)[1])


def test_sharing_another_data_set_s_or_graph_s_copy_is_refused(graph):
    batches = GraphBatches(numbered(6), 2)
    with pytest.raises(DataError, match="expected arrays_of over the same images"):
        GraphBatches(numbered(6), 2, arrays_of=batches)
    with tf.Graph().as_default():
        with pytest.raises(DataError, match="expected arrays_of built in the current"):
            GraphBatches(dataclasses.replace(batches.dataset), 2, arrays_of=batches)


@pytest.mark.parametrize("batch_size", [0, 21, True])
def test_batch_size_out_of_range_is_refused(graph, batch_size):
    with pytest.raises(
        DataError, match=r"GraphBatches: expected batch_size to be an int in \[1, 20\]"
    ):
        GraphBatches(numbered(20), batch_size)


@pytest.mark.parametrize("window", [0, -1, 2.5, True])
def test_window_must_be_a_positive_int(graph, window):
    with pytest.raises(DataError, match=r"GraphBatches: expected window to be an int >= 1"):
        GraphBatches(numbered(20), 5, window=window)


def test_a_batch_before_initialize_is_refused(graph):
    batches = GraphBatches(numbered(20), 5)
    assert batches.state() == {"epoch": 0, "position": 0}  # the dataset's, until drawn
    with tf.compat.v1.Session() as session:
        with pytest.raises(DataError, match=r"expected initialize\(session\) before"):
            batches.next_feed(session)


def test_eager_build_is_refused_and_batch_dataset_works_there():
    with pytest.raises(EagerError, match=r"GraphBatches: expected a graph"):
        GraphBatches(numbered(20), 5)

    data = numbered(20)
    images, labels = next(iter(batch_dataset(tf.constant(data.images), data.labels, 5)))
    np.testing.assert_array_equal(images.numpy()[:, 0], labels.numpy())


def test_batch_dataset_refuses_a_batch_larger_than_the_data():
    data = numbered(4)
    with pytest.raises(
        DataError, match=r"batch_dataset: expected batch_size to be an int in \[1, 4\]"
    ):
        batch_dataset(tf.constant(data.images), tf.constant(data.labels), 5)


def test_batch_dataset_reads_a_variable_whole_so_a_numpy_view_still_shares_it():
    """A sparse read (ResourceGather) would switch the variable to copy-on-read and copy
    it away from the view: the bench's one copy of the data would become two."""
    data = numbered(20)
    images, labels = (tf.Variable(a, trainable=False) for a in (data.images, data.labels))
    view = np.asarray(images.value())

    batches = iter(batch_dataset(images, labels, 5))
    drawn = [next(batches) for _ in range(6)]  # past an epoch

    assert np.shares_memory(view, np.asarray(images.value()))
    for batch_images, batch_labels in drawn:
        np.testing.assert_array_equal(batch_images.numpy()[:, 0], batch_labels.numpy())
