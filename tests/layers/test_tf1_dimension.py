"""TF1's Dimension wherever layers.tf1 takes an int (units, filters, kernel and pool
sizes, strides, num_units, num_proj, beam_width, ...), as TF 1.x's int() took it;
Dimension(None) is an error naming the argument."""

import numpy as np
import pytest
import tensorflow as tf

from layers import tf1
from layers.checks import int_problem, int_value
from layers.errors import ZooError
from layers.tf1 import rnn_cell

v1 = tf.compat.v1
D = v1.Dimension


def test_int_value_takes_dimensions_and_numpy_ints_only():
    assert int_value(D(4)) == 4 and type(int_value(D(4))) is int
    assert type(int_value(np.int64(3))) is int
    for other in (True, 2.0, "3", None):
        assert int_value(other) is other
    unknown = D(None)
    assert int_value(unknown) is unknown
    assert int_problem(D(4), name="units") is None
    assert int_problem(D(None), name="units") == (
        "expected units to be an int >= 1, found Dimension(None)")


def test_layers_and_cells_take_dimensions_as_ints(graph):
    x = v1.placeholder(tf.float32, [2, 8, 8, 3])
    y = tf1.conv2d(x, filters=D(4), kernel_size=(D(3), 3), strides=D(1), padding="same")
    y = tf1.max_pooling2d(y, pool_size=D(2), strides=(2, D(2)))
    z = tf1.dense(tf1.flatten(y), units=D(5))
    sequence = v1.placeholder(tf.float32, [2, 6, 3])
    series = tf1.conv1d(sequence, filters=D(4), kernel_size=D(2))
    assert z.shape.as_list() == [2, 5] and series.shape.as_list() == [2, 5, 4]
    shapes = {v.op.name: v.shape.as_list() for v in v1.trainable_variables()}
    assert shapes["conv2d/kernel"] == [3, 3, 3, 4] and shapes["dense/kernel"] == [64, 5]
    cell = rnn_cell.LSTMCell(D(6), num_proj=D(3))
    assert cell.state_size == (6, 3) and type(cell.output_size) is int
    outputs, _ = v1.nn.dynamic_rnn(cell, series, dtype=tf.float32)
    assert outputs.shape.as_list() == [2, 5, 3]


def test_tf1_shapes_dimension_reaches_a_layer(graph):
    """``x.shape[-1]`` is a Dimension under TF1's shapes, as TF 1.x programs had it."""
    v1.disable_v2_tensorshape()
    try:
        x = v1.placeholder(tf.float32, [None, 7])
        assert isinstance(x.shape[-1], D)
        y = tf1.dense(x, x.shape[-1])
        assert [v.shape.as_list() for v in v1.trainable_variables()] == [[7, 7], [7]]
        assert y.shape.as_list() == [None, 7]
    finally:
        v1.enable_v2_tensorshape()


@pytest.mark.parametrize(
    "build, words",
    [
        (lambda: tf1.Dense(D(None)), "dense: expected units to be an int >= 1, found "
         "Dimension(None)"),
        (lambda: tf1.Conv2D(D(None), 3), "expected filters to be an int >= 1, found "
         "Dimension(None)"),
        (lambda: tf1.Conv2D(4, (3, D(None))), "expected kernel_size to be an int >= 1"),
        (lambda: rnn_cell.GRUCell(D(None)), "expected num_units to be an int >= 1, found "
         "Dimension(None)"),
    ],
)  # fmt: skip
def test_unknown_dimension_is_an_error_naming_the_argument(graph, build, words):
    with pytest.raises(ZooError, match=words.replace("(", r"\(").replace(")", r"\)")):
        build()
