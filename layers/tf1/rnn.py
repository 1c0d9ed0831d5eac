"""TF 1.15 contrib's stacked bidirectional RNNs (``tensorflow/contrib/rnn/python/ops/
rnn.py``), on ``tf.compat.v1.nn``'s bidirectional RNNs, which TensorFlow still has.

Layer ``i`` runs its forward and backward cells under ``<scope>/cell_<i>`` (scope
default ``stack_bidirectional_rnn``); its two outputs, concatenated, are the next
layer's input. Any cell object of TF1's protocol works, e.g. those of
:mod:`layers.tf1.rnn_cell`.

Usage::

    from layers.tf1 import rnn, rnn_cell
    forward = [rnn_cell.LSTMCell(64) for _ in range(2)]
    backward = [rnn_cell.LSTMCell(64) for _ in range(2)]
    outputs, states_fw, states_bw = rnn.stack_bidirectional_dynamic_rnn(
        forward, backward, x, dtype=tf.float32)
    # stack_bidirectional_rnn/cell_0/bidirectional_rnn/fw/lstm_cell/kernel ...
"""

import tensorflow as tf

from layers.errors import ZooError

__all__ = ["stack_bidirectional_dynamic_rnn", "stack_bidirectional_rnn",
           "static_bidirectional_rnn"]  # fmt: skip

static_bidirectional_rnn = tf.compat.v1.nn.static_bidirectional_rnn  # contrib's alias


def stacked(function, cells_fw, cells_bw, inputs, initial_states_fw, initial_states_bw,
            scope, concatenate, **arguments):  # fmt: skip
    """Runs ``function`` (a bidirectional RNN) once per layer under ``cell_<i>``.

    Returns:
        ``(outputs of the last layer, forward states, backward states)``, the
        states a tuple with one entry per layer.

    Raises:
        ZooError: no cells, not lists, lists of different lengths, or initial
            states that are not a list with one entry per layer.
    """
    owner = scope or "stack_bidirectional_rnn"
    check_layers(owner, cells_fw, cells_bw, initial_states_fw, initial_states_bw)
    states_fw, states_bw = [], []
    layer_inputs = inputs
    with tf.compat.v1.variable_scope(owner):
        for i, (cell_fw, cell_bw) in enumerate(zip(cells_fw, cells_bw, strict=True)):
            with tf.compat.v1.variable_scope(f"cell_{i}"):
                outputs, state_fw, state_bw = function(
                    cell_fw, cell_bw, layer_inputs,
                    initial_state_fw=(initial_states_fw or [None] * len(cells_fw))[i],
                    initial_state_bw=(initial_states_bw or [None] * len(cells_bw))[i],
                    **arguments,
                )  # fmt: skip
                layer_inputs = concatenate(outputs)
            states_fw.append(state_fw)
            states_bw.append(state_bw)
    return layer_inputs, tuple(states_fw), tuple(states_bw)


def check_layers(owner, cells_fw, cells_bw, initial_states_fw, initial_states_bw):
    problems = [
        (not isinstance(cells_fw, list) or not cells_fw, "cells_fw", cells_fw),
        (not isinstance(cells_bw, list) or not cells_bw, "cells_bw", cells_bw),
    ]
    for states, name in ((initial_states_fw, "initial_states_fw"),
                         (initial_states_bw, "initial_states_bw")):  # fmt: skip
        wrong = not isinstance(states, list) or len(states) != len(cells_fw)
        problems.append((states is not None and wrong, name, states))
    for wrong, name, value in problems:
        if wrong:
            raise ZooError(
                f"{owner}: expected {name} to be a non-empty list, one entry per layer, "
                f"found {value!r}; pass e.g. [LSTMCell(64) for _ in range(layers)]"
            )
    if len(cells_fw) != len(cells_bw):
        raise ZooError(
            f"{owner}: expected as many backward cells as forward ones, found "
            f"{len(cells_fw)} forward and {len(cells_bw)} backward; give both "
            "directions one cell per layer"
        )


def stack_bidirectional_rnn(cells_fw, cells_bw, inputs, initial_states_fw=None,
                            initial_states_bw=None, dtype=None, sequence_length=None,
                            scope=None):  # fmt: skip
    """TF 1.15 contrib's ``stack_bidirectional_rnn``: layers of
    ``static_bidirectional_rnn``.

    Args:
        cells_fw, cells_bw: lists of cells, one object per layer and direction.
        inputs: a list of ``[batch, depth]`` tensors, one per step.
        initial_states_fw, initial_states_bw: None, or a list of states, one per
            layer.
        dtype, sequence_length: as ``tf.compat.v1.nn.static_bidirectional_rnn``.
        scope: the variable scope (default ``stack_bidirectional_rnn``).

    Returns:
        ``(outputs, states_fw, states_bw)``: a list of ``[batch, 2 * units]``
        tensors, one per step; each direction's final states, one per layer.

    Raises:
        ZooError: cells or initial states not given one per layer.
    """

    def layer(cell_fw, cell_bw, layer_inputs, **arguments):  # in cell_<i> itself
        scope = tf.compat.v1.get_variable_scope()
        return static_bidirectional_rnn(cell_fw, cell_bw, layer_inputs, scope=scope,
                                        **arguments)  # fmt: skip

    return stacked(layer, cells_fw, cells_bw, inputs, initial_states_fw, initial_states_bw,
                   scope, list, dtype=dtype, sequence_length=sequence_length)  # fmt: skip


def stack_bidirectional_dynamic_rnn(cells_fw, cells_bw, inputs, initial_states_fw=None,
                                    initial_states_bw=None, dtype=None,
                                    sequence_length=None, parallel_iterations=None,
                                    time_major=False, scope=None,
                                    swap_memory=False):  # fmt: skip
    """TF 1.15 contrib's ``stack_bidirectional_dynamic_rnn``: layers of
    ``tf.compat.v1.nn.bidirectional_dynamic_rnn``.

    Args:
        cells_fw, cells_bw: lists of cells, one object per layer and direction.
        inputs: ``[batch, time, depth]`` (``[time, batch, depth]`` if
            ``time_major``).
        initial_states_fw, initial_states_bw: None, or a list of states, one per
            layer.
        dtype, sequence_length, parallel_iterations, time_major, swap_memory: as
            ``tf.compat.v1.nn.bidirectional_dynamic_rnn``.
        scope: the variable scope (default ``stack_bidirectional_rnn``).

    Returns:
        ``(outputs, states_fw, states_bw)``: the last layer's outputs of both
        directions concatenated on the last axis; each direction's final states,
        one per layer.

    Raises:
        ZooError: cells or initial states not given one per layer.
    """

    def layer(cell_fw, cell_bw, layer_inputs, **arguments):  # in cell_<i>/bidirectional_rnn
        outputs, (state_fw, state_bw) = tf.compat.v1.nn.bidirectional_dynamic_rnn(
            cell_fw, cell_bw, layer_inputs, **arguments
        )
        return outputs, state_fw, state_bw

    return stacked(
        layer, cells_fw, cells_bw, inputs, initial_states_fw, initial_states_bw, scope,
        lambda outputs: tf.concat(outputs, 2), dtype=dtype,
        sequence_length=sequence_length, parallel_iterations=parallel_iterations,
        time_major=time_major, swap_memory=swap_memory,
    )  # fmt: skip
