"""TF 1.15's ``tf.contrib.seq2seq.BasicDecoder``: a cell, a helper, an output layer.

Usage::

    helper = TrainingHelper(decoder_inputs, lengths)
    decoder = BasicDecoder(cell, helper, cell.zero_state(batch, tf.float32),
                           output_layer=tf1.Dense(vocab))
    outputs, state, lengths = dynamic_decode(decoder)  # decoder/<cell>/, decoder/dense/
    logits = outputs.rnn_output
"""

import collections

import tensorflow as tf

from layers.checks import require
from layers.errors import ZooError
from layers.tf1.rnn_cell import structure
from layers.tf1.seq2seq.decoder import Decoder
from layers.tf1.seq2seq.helper import Helper


class BasicDecoderOutput(collections.namedtuple("BasicDecoderOutput",
                                                ("rnn_output", "sample_id"))):  # fmt: skip
    """One step's (or, stacked, every step's) cell output and sample id."""


def check_cell(owner, cell):
    """Raises unless ``cell`` has TF 1.15's cell protocol.

    Raises:
        ZooError: an attribute of the protocol is missing.
    """
    missing = [name for name in ("output_size", "state_size", "zero_state")
               if not hasattr(cell, name)] + ([] if callable(cell) else ["__call__"])
    require(owner, f"expected an RNN cell, found {type(cell).__name__} without "
            f"{', '.join(missing)}" if missing else None,
            "pass a tf.nn.rnn_cell cell (layers.tf1.rnn_cell under install())")  # fmt: skip


def check_state(cell, state, what="a state"):
    """Raises unless ``state`` has the structure of ``cell.state_size``.

    Raises:
        ZooError: the structures differ; the message names the cell and both, in
            the words of :class:`layers.tf1.rnn_cell.RNNCell`'s own check.
    """
    try:
        tf.nest.assert_same_structure(cell.state_size, state, check_types=False)
    except (ValueError, TypeError):
        name = getattr(cell, "name", None) or type(cell).__name__
        raise ZooError(
            f"{name} ({type(cell).__name__}): expected {what} of the structure of its "
            f"state_size, {cell.state_size}, found {structure(state)}; pass "
            "cell.zero_state(batch_size, dtype), or the state this cell returned"
        ) from None


def output_size_of(cell, output_layer):
    """The cell's output size, or ``output_layer``'s on outputs of that size."""
    if output_layer is None:
        return cell.output_size

    def through_layer(size):
        shape = tf.TensorShape([None]).concatenate(size)
        if hasattr(output_layer, "compute_output_shape"):
            return tf.TensorShape(output_layer.compute_output_shape(shape))[1:]
        return shape[1:-1].concatenate([output_layer.units])

    return tf.nest.map_structure(through_layer, cell.output_size)


class BasicDecoder(Decoder):
    """Calls ``cell`` on the helper's inputs, ``output_layer`` on its outputs.

    Args:
        cell: an RNN cell.
        helper: a :class:`~layers.tf1.seq2seq.helper.Helper`.
        initial_state: the cell's first state.
        output_layer: None, or a layer applied to each output (a ``tf.layers.Dense``).

    Raises:
        ZooError: ``cell`` is not a cell, ``helper`` not a Helper, ``output_layer``
            not callable, or ``initial_state`` not of the cell's state structure.
    """

    def __init__(self, cell, helper, initial_state, output_layer=None):
        check_cell("BasicDecoder", cell)
        require("BasicDecoder", None if isinstance(helper, Helper) else
                f"expected a Helper, found {type(helper).__name__}",
                "pass e.g. TrainingHelper(inputs, lengths)")  # fmt: skip
        require("BasicDecoder", None if output_layer is None or callable(output_layer)
                else f"expected an output_layer layer, found {type(output_layer).__name__}",
                "pass e.g. tf.layers.Dense(vocab_size)")  # fmt: skip
        check_state(cell, initial_state, "a BasicDecoder initial_state")
        self._cell, self._helper, self._output_layer = cell, helper, output_layer
        self._initial_state = initial_state

    @property
    def batch_size(self):
        return self._helper.batch_size

    @property
    def output_size(self):
        return BasicDecoderOutput(
            rnn_output=output_size_of(self._cell, self._output_layer),
            sample_id=self._helper.sample_ids_shape,
        )

    @property
    def output_dtype(self):
        dtype = tf.nest.flatten(self._initial_state)[0].dtype
        return BasicDecoderOutput(
            tf.nest.map_structure(lambda _: dtype, self.output_size.rnn_output),
            self._helper.sample_ids_dtype,
        )

    def initialize(self, name=None):
        return (*self._helper.initialize(), self._initial_state)

    def step(self, time, inputs, state, name=None):
        with tf.compat.v1.name_scope(name, "BasicDecoderStep", (time, inputs, state)):
            outputs, cell_state = self._cell(inputs, state)
            if self._output_layer is not None:
                outputs = self._output_layer(outputs)
            sample_ids = self._helper.sample(time=time, outputs=outputs, state=cell_state)
            finished, next_inputs, next_state = self._helper.next_inputs(
                time=time, outputs=outputs, state=cell_state, sample_ids=sample_ids
            )
        return BasicDecoderOutput(outputs, sample_ids), next_state, next_inputs, finished
