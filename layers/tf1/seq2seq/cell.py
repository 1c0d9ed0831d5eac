"""What seq2seq needs of TF 1.15's ``RNNCell``: a cell base class on
:class:`layers.tf1.base.Layer`, zero states, and the one check of a state's structure.

A cell is anything with TF 1.15's cell protocol: ``state_size``, ``output_size``,
``zero_state(batch_size, dtype)`` and ``__call__(inputs, state) -> (output,
new_state)`` that opens its own variable scope.
"""

import tensorflow as tf

from layers.errors import ZooError
from layers.tf1.base import Layer


def zeros_for(size, batch_size, dtype):
    """Zeros ``[batch_size, *size]`` for each size in the structure ``size``."""

    def zeros(one_size):
        shape = tf.TensorShape(one_size)
        static = tf.get_static_value(batch_size)
        dims = tf.constant(shape.as_list(), tf.int32)
        found = tf.zeros(tf.concat([[batch_size], dims], 0), dtype)
        found.set_shape(tf.TensorShape([static]).concatenate(shape))
        return found

    return tf.nest.map_structure(zeros, size)


def cell_name(cell):
    """The cell's scope once it was called, else its name or its class's name."""
    scope = getattr(cell, "_scope", None)
    if isinstance(scope, tf.compat.v1.VariableScope):
        return scope.name
    return getattr(cell, "name", None) or type(cell).__name__


def outline(structure):
    """``structure`` with each tensor written as its shape, each size as it is."""

    def leaf(item):
        return item.shape.as_list() if hasattr(item, "shape") else item

    return tf.nest.map_structure(leaf, structure)


def check_state(cell, state, what="state"):
    """Raises unless ``state`` has the structure of ``cell.state_size``.

    Args:
        cell: an object with TF 1.15's cell protocol.
        state: a structure of tensors.
        what: how the caller names the state in the message.

    Raises:
        ZooError: the structures differ; the message names the cell and both.
    """
    try:
        tf.nest.assert_same_structure(cell.state_size, state, check_types=False)
    except (ValueError, TypeError):
        raise ZooError(
            f"{cell_name(cell)}: expected a {what} structured as the cell's state_size "
            f"{outline(cell.state_size)}, found {outline(state)}; pass "
            "cell.zero_state(batch_size, dtype), or a state of that structure"
        ) from None


class Cell(Layer):
    """TF 1.15's ``RNNCell``: a layer called as ``cell(inputs, state)``.

    Subclasses define ``state_size``, ``output_size`` and ``call(inputs, state)``.
    """

    @property
    def state_size(self):
        """The size (int, TensorShape or a structure of them) of the state."""
        raise NotImplementedError

    @property
    def output_size(self):
        """The size of the output."""
        raise NotImplementedError

    def zero_state(self, batch_size, dtype):
        """Zeros in the structure of ``state_size``, each ``[batch_size, size]``."""
        with tf.name_scope(f"{type(self).__name__}ZeroState"):
            return zeros_for(self.state_size, batch_size, dtype)
