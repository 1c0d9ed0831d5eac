"""TF 1.15's ``tf.contrib.seq2seq`` ``Decoder`` interface and ``dynamic_decode``."""

import abc

import tensorflow as tf

from layers.checks import require
from layers.tf1.rnn_cell import zeros

v1 = tf.compat.v1


class Decoder(abc.ABC):
    """TF 1.15's decoder interface: ``initialize``, ``step``, optionally ``finalize``.

    ``batch_size``, ``output_size`` and ``output_dtype`` describe one step's
    outputs; a decoder that reorders its batch entries (beam search) sets
    ``tracks_own_finished``.
    """

    @property
    def batch_size(self):
        """The batch size of input values."""
        raise NotImplementedError

    @property
    def output_size(self):
        """A structure of ints or TensorShapes: one step's output sizes."""
        raise NotImplementedError

    @property
    def output_dtype(self):
        """A structure of dtypes, as ``output_size``."""
        raise NotImplementedError

    @abc.abstractmethod
    def initialize(self, name=None):
        """Returns ``(finished, initial_inputs, initial_state)``."""

    @abc.abstractmethod
    def step(self, time, inputs, state, name=None):
        """Returns ``(outputs, next_state, next_inputs, finished)``."""

    def finalize(self, outputs, final_state, sequence_lengths):
        """Returns ``(final_outputs, final_state)`` from the time-major outputs."""
        raise NotImplementedError

    @property
    def tracks_own_finished(self):
        """Whether ``step``'s ``finished`` is final (not or-ed with the last one)."""
        return False


def dimension(tensor, axis):
    """The size of ``tensor``'s ``axis``: an int when static, else a scalar tensor
    (TF1 programs' ``Dimension`` shapes included)."""
    return tf.compat.dimension_value(tensor.shape[axis]) or tf.shape(tensor)[axis]


def transpose_batch_time(tensor):
    """Swaps the first two axes of a tensor of rank 2 or more."""
    rank = tensor.shape.rank
    if rank is not None and rank < 2:
        return tensor
    return tf.transpose(tensor, tf.concat([[1, 0], tf.range(2, tf.rank(tensor))], 0))


def dynamic_decode(decoder, output_time_major=False, impute_finished=False,
                   maximum_iterations=None, parallel_iterations=32, swap_memory=False,
                   scope=None):  # fmt: skip
    """Runs ``decoder`` in a ``tf.compat.v1.while_loop`` until every entry finished.

    Args:
        decoder: a :class:`Decoder`.
        output_time_major: True: outputs [time, batch, ...]; False: [batch, time, ...].
        impute_finished: True: a finished entry's outputs are zeros and its state
            is copied through.
        maximum_iterations: None, or a scalar int: the most steps.
        parallel_iterations, swap_memory: as ``tf.compat.v1.while_loop``.
        scope: the variable scope (default ``decoder``).

    Returns:
        ``(final_outputs, final_state, final_sequence_lengths)``.

    Raises:
        ZooError: ``decoder`` is not a Decoder, or ``maximum_iterations`` not a scalar.
    """
    require("dynamic_decode", None if isinstance(decoder, Decoder) else
            f"expected a Decoder, found {type(decoder).__name__}",
            "pass a BasicDecoder, a BeamSearchDecoder or a Decoder subclass")  # fmt: skip
    with v1.variable_scope(scope, "decoder"):
        if maximum_iterations is not None:
            maximum_iterations = tf.convert_to_tensor(
                maximum_iterations, tf.int32, name="maximum_iterations"
            )
            rank = maximum_iterations.shape.rank
            require("dynamic_decode", None if rank == 0 else
                    f"expected a scalar maximum_iterations, found rank {rank}",
                    "pass one int")  # fmt: skip
        finished, inputs, state = decoder.initialize()
        zero_outputs = tf.nest.map_structure(
            lambda size, dtype: zeros(decoder.batch_size, size, dtype),
            decoder.output_size, decoder.output_dtype,
        )  # fmt: skip
        if maximum_iterations is not None:
            finished = tf.logical_or(finished, maximum_iterations <= 0)
        static_batch = tf.get_static_value(decoder.batch_size)

        def output_array(size, dtype):
            shape = tf.TensorShape([static_batch]).concatenate(size)
            return tf.TensorArray(dtype, size=0, dynamic_size=True, element_shape=shape)

        arrays = tf.nest.map_structure(
            output_array, decoder.output_size, decoder.output_dtype
        )

        def body(time, arrays, state, inputs, finished, lengths):
            outputs, next_state, next_inputs, step_finished = decoder.step(
                time, inputs, state
            )
            if not decoder.tracks_own_finished:
                step_finished = tf.logical_or(step_finished, finished)
            lengths = v1.where(finished, lengths, tf.fill(tf.shape(lengths), time + 1))
            if impute_finished:
                outputs = tf.nest.map_structure(
                    lambda out, zero: v1.where(finished, zero, out), outputs, zero_outputs
                )
                next_state = tf.nest.map_structure(
                    lambda new, old: _copy_finished(finished, new, old), next_state, state
                )
            arrays = tf.nest.map_structure(
                lambda array, out: array.write(time, out), arrays, outputs
            )
            return time + 1, arrays, next_state, next_inputs, step_finished, lengths

        lengths = tf.zeros_like(finished, dtype=tf.int32)
        loop = v1.while_loop(
            lambda *loop_vars: tf.logical_not(tf.reduce_all(loop_vars[4])),
            body,
            (tf.constant(0), arrays, state, inputs, finished, lengths),
            parallel_iterations=parallel_iterations,
            maximum_iterations=maximum_iterations,
            swap_memory=swap_memory,
        )  # fmt: skip
        _, arrays, state, _, _, lengths = loop
        outputs = tf.nest.map_structure(lambda array: array.stack(), arrays)
        try:
            outputs, state = decoder.finalize(outputs, state, lengths)
        except NotImplementedError:
            pass
        if not output_time_major:
            outputs = tf.nest.map_structure(transpose_batch_time, outputs)
    return outputs, state, lengths


def _copy_finished(finished, new, old):
    """``old`` where the entry finished, else ``new``; TensorArrays and scalars pass."""
    if isinstance(old, tf.TensorArray):
        return new
    new.set_shape(old.shape)
    return new if new.shape.rank == 0 else v1.where(finished, old, new)
