"""TF 1.15's ``tf.contrib.seq2seq.BeamSearchDecoder`` and ``tile_batch``.

Usage::

    memory = tile_batch(encoder_outputs, beam_width)         # [batch * beam, ...]
    state = tile_batch(encoder_state, beam_width)
    decoder = BeamSearchDecoder(cell, embedding, start_tokens, end_token, state,
                                beam_width, output_layer=projection,
                                length_penalty_weight=0.6)
    outputs, state, lengths = dynamic_decode(decoder, maximum_iterations=50)
    best = outputs.predicted_ids[:, :, 0]                    # [batch, time], beam 0 best
"""

import collections

import tensorflow as tf

from layers.checks import int_problem, int_value, require
from layers.errors import ShapeError
from layers.tf1.seq2seq.attention_wrapper import AttentionWrapperState
from layers.tf1.seq2seq.basic_decoder import check_cell, check_state
from layers.tf1.seq2seq.beam_search_ops import gather_tree
from layers.tf1.seq2seq.decoder import Decoder, dimension
from layers.tf1.seq2seq.helper import embedding_function, start_and_end_tokens

v1 = tf.compat.v1


class BeamSearchDecoderState(collections.namedtuple("BeamSearchDecoderState", (
        "cell_state", "log_probs", "finished", "lengths",
        "accumulated_attention_probs"))):  # fmt: skip
    """The cell's state split [batch, beam, ...], each beam's log probability,
    finished flag, length, and summed attention (coverage penalty, else ``()``)."""


class BeamSearchDecoderOutput(collections.namedtuple("BeamSearchDecoderOutput",
                                                     ("scores", "predicted_ids",
                                                      "parent_ids"))):  # fmt: skip
    """One step's beam scores, chosen ids and the beams they continue."""


class FinalBeamSearchDecoderOutput(collections.namedtuple(
        "FinalBeamDecoderOutput", ("predicted_ids", "beam_search_decoder_output"))):
    """``predicted_ids`` [batch, time, beam], each beam's whole sequence (beam 0 the
    best), and the per-step :class:`BeamSearchDecoderOutput`."""  # fmt: skip


def tile_batch(t, multiplier, name=None):
    """Repeats each batch entry ``multiplier`` times in place: [b0, b0, b1, b1, ...].

    Args:
        t: a tensor [batch, ...] or a structure of them.
        multiplier: a positive int.
        name: the name scope.

    Returns:
        The structure with each tensor [batch * multiplier, ...].

    Raises:
        ShapeError: a tensor of unknown rank or rank 0.
    """
    with v1.name_scope(name, "tile_batch", tf.nest.flatten(t)):
        return tf.nest.map_structure(lambda tensor: _tile_one(tensor, multiplier), t)


def _tile_one(tensor, multiplier):
    tensor = tf.convert_to_tensor(tensor, name="t")
    if not tensor.shape.rank:
        raise ShapeError(
            f"tile_batch: expected tensors of rank >= 1 [batch, ...], found shape "
            f"{tensor.shape}; give the tensor a known rank"
        )
    repeats = tf.concat([[1, multiplier], tf.ones([tensor.shape.rank - 1], tf.int32)], 0)
    tiled = tf.tile(tf.expand_dims(tensor, 1), repeats)
    batch = tf.compat.dimension_value(tensor.shape[0])
    tiled = tf.reshape(tiled, tf.concat([[-1], tf.shape(tensor)[1:]], 0))
    tiled.set_shape([None if batch is None else batch * multiplier, *tensor.shape[1:]])
    return tiled


def _length_penalty(lengths, weight):
    """Wu et al. (2016)'s ``((5 + length) / 6) ** weight``; 1 when the weight is 0."""
    weight = tf.convert_to_tensor(weight, name="penalty_factor")
    if tf.get_static_value(weight) == 0:
        return 1.0
    return ((5.0 + tf.cast(lengths, tf.float32)) / 6.0) ** weight


def _attention_probs(cell_state, coverage_penalty_weight):
    """The alignments of the attention wrappers in ``cell_state`` (averaged over
    mechanisms and wrappers), or None without a coverage penalty.

    Raises:
        ZooError: a coverage penalty without an attentional cell.
    """
    if coverage_penalty_weight == 0.0:
        return None
    states = cell_state if isinstance(cell_state, tuple) and not isinstance(
        cell_state, AttentionWrapperState) else (cell_state,)
    probs = [tf.reduce_mean(tf.stack(tf.nest.flatten(state.alignments), -1), -1)
             for state in states if isinstance(state, AttentionWrapperState)]  # fmt: skip
    require("BeamSearchDecoder", None if probs else
            "expected an AttentionWrapper cell for coverage_penalty_weight, found none",
            "set coverage_penalty_weight=0.0 or wrap the cell in an AttentionWrapper")
    return probs[0] if len(probs) == 1 else tf.reduce_mean(tf.stack(probs, -1), -1)


def _static(size):
    """A state size as a TensorShape; a size that is a tensor (a memory's time) as
    its value when static, else of unknown rank, as TF 1.15 read it."""
    return tf.TensorShape(tf.get_static_value(size) if tf.is_tensor(size) else size)


def _passes_through(t):
    """Whether a state part is not split by beams: a TensorArray or a scalar."""
    return isinstance(t, tf.TensorArray) or t.shape.rank == 0


class BeamSearchDecoder(Decoder):
    """Keeps the ``beam_width`` best-scoring sequences of each batch entry.

    A beam's score is its summed log probability divided by the length penalty
    ``((5 + length) / 6) ** length_penalty_weight``, plus ``coverage_penalty_weight``
    times the sum over memory entries of ``log(min(attention so far, 1))``. A
    finished beam only continues with ``end_token`` at no cost.

    Args:
        cell: an RNN cell, called on [batch * beam, ...] inputs and states.
        embedding: a [vocab, depth] matrix or a function ``ids -> inputs``.
        start_tokens: [batch] int32.
        end_token: a scalar int32.
        initial_state: the cell's state for [batch * beam] entries (``tile_batch``).
        beam_width: a positive int.
        output_layer: None, or a layer making the logits (a ``tf.layers.Dense``).
        length_penalty_weight: 0 for none.
        coverage_penalty_weight: 0 for none (needs an AttentionWrapper cell).
        reorder_tensor_arrays: reorder the TensorArrays of the final cell state
            (alignment histories) along the chosen beams.

    Raises:
        ZooError: a bad cell, beam width, token rank or state structure.
    """

    def __init__(self, cell, embedding, start_tokens, end_token, initial_state, beam_width,
                 output_layer=None, length_penalty_weight=0.0, coverage_penalty_weight=0.0,
                 reorder_tensor_arrays=True):  # fmt: skip
        check_cell("BeamSearchDecoder", cell)
        require("BeamSearchDecoder", int_problem(beam_width, name="beam_width"),
                "pass e.g. beam_width=4")  # fmt: skip
        check_state(cell, initial_state, "a BeamSearchDecoder initial_state")
        self._cell, self._output_layer = cell, output_layer
        self._embedding_fn = embedding_function(embedding)
        self._start_tokens, self._end_token = start_and_end_tokens(
            "BeamSearchDecoder", start_tokens, end_token
        )
        self._beam_width = int_value(beam_width)
        self._length_penalty_weight = length_penalty_weight
        self._coverage_penalty_weight = coverage_penalty_weight
        self._reorder_tensor_arrays = reorder_tensor_arrays
        self._batch_size = tf.size(self._start_tokens)
        self._initial_cell_state = tf.nest.map_structure(
            self._maybe_split, initial_state, cell.state_size
        )
        self._start_tokens = tf.tile(tf.expand_dims(self._start_tokens, 1), [1, beam_width])
        self._start_inputs = self._embedding_fn(self._start_tokens)
        self._finished = tf.one_hot(tf.zeros([self._batch_size], tf.int32), beam_width,
                                    on_value=False, off_value=True, dtype=tf.bool)

    @property
    def batch_size(self):
        return self._batch_size

    @property
    def output_size(self):
        beams = tf.TensorShape([self._beam_width])
        return BeamSearchDecoderOutput(scores=beams, predicted_ids=beams, parent_ids=beams)

    @property
    def output_dtype(self):
        dtype = tf.nest.flatten(self._initial_cell_state)[0].dtype
        return BeamSearchDecoderOutput(scores=dtype, predicted_ids=tf.int32,
                                       parent_ids=tf.int32)  # fmt: skip

    @property
    def tracks_own_finished(self):
        return True

    def _split(self, t, size):
        """[batch * beam, ...] -> [batch, beam, ...].

        Raises:
            ShapeError: ``t`` is not [batch * beam_width, size].
        """
        size = _static(size)
        static = tf.get_static_value(self._batch_size)
        rows = None if static is None else static * self._beam_width
        expected = tf.TensorShape([rows]).concatenate(size)
        if not t.shape.is_compatible_with(expected):
            raise ShapeError(
                f"BeamSearchDecoder: expected a state of shape {expected} ([batch * "
                f"beam_width, ...], beam_width {self._beam_width}), found shape "
                f"{t.shape}; tile the initial state and memory with tile_batch(..., "
                "beam_width)"
            )
        shape = tf.concat([[self._batch_size, self._beam_width], tf.shape(t)[1:]], 0)
        split = tf.reshape(t, shape)
        split.set_shape(tf.TensorShape([static, self._beam_width]).concatenate(size))
        return split

    def _merge(self, t, size):
        """[batch, beam, ...] -> [batch * beam, ...]."""
        size = _static(size)
        merged = tf.reshape(t, tf.concat([[self._batch_size * self._beam_width],
                                          tf.shape(t)[2:]], 0))  # fmt: skip
        static = tf.get_static_value(self._batch_size)
        rows = None if static is None else static * self._beam_width
        merged.set_shape(tf.TensorShape([rows]).concatenate(size))
        return merged

    def _maybe_split(self, t, size):
        return t if _passes_through(t) else self._split(t, size)

    def _maybe_merge(self, t, size):
        return t if _passes_through(t) else self._merge(t, size)

    def initialize(self, name=None):
        with v1.name_scope(name, "BeamSearchDecoderInit"):
            log_probs = tf.one_hot(
                tf.zeros([self._batch_size], tf.int32), self._beam_width, on_value=0.0,
                off_value=float("-inf"), dtype=self.output_dtype.scores,
            )  # fmt: skip
            coverage = _attention_probs(self._initial_cell_state,
                                        self._coverage_penalty_weight)  # fmt: skip
            state = BeamSearchDecoderState(
                cell_state=self._initial_cell_state,
                log_probs=log_probs,
                finished=self._finished,
                lengths=tf.zeros([self._batch_size, self._beam_width], tf.int64),
                accumulated_attention_probs=() if coverage is None else coverage,
            )
            return self._finished, self._start_inputs, state

    def step(self, time, inputs, state, name=None):
        with v1.name_scope(name, "BeamSearchDecoderStep", (time, inputs, state)):
            inputs = tf.nest.map_structure(lambda x: self._merge(x, x.shape[2:]), inputs)
            cell_state = tf.nest.map_structure(
                self._maybe_merge, state.cell_state, self._cell.state_size
            )
            outputs, next_cell_state = self._cell(inputs, cell_state)
            outputs = tf.nest.map_structure(self._split, outputs, self._cell.output_size)
            next_cell_state = tf.nest.map_structure(
                self._maybe_split, next_cell_state, self._cell.state_size
            )
            if self._output_layer is not None:
                outputs = self._output_layer(outputs)
            output, next_state = self._search_step(outputs, next_cell_state, state)
            finished = next_state.finished
            next_inputs = tf.cond(
                tf.reduce_all(finished),
                lambda: self._start_inputs,
                lambda: self._embedding_fn(output.predicted_ids),
            )  # fmt: skip
        return output, next_state, next_inputs, finished

    def _search_step(self, logits, next_cell_state, state):
        """One step of the search: the best ``beam_width`` continuations of every
        entry's beams, and each kept beam's state gathered from its parent."""
        beam, end = self._beam_width, self._end_token
        vocab = dimension(logits, -1)
        previously_finished = state.finished
        step_log_probs = tf.nn.log_softmax(logits)
        # a finished beam continues only with end_token, at log probability 0
        only_end = tf.one_hot(end, vocab, on_value=0.0, off_value=step_log_probs.dtype.min,
                              dtype=step_log_probs.dtype)  # fmt: skip
        step_log_probs = tf.where(previously_finished[:, :, None], only_end, step_log_probs)
        total = state.log_probs[:, :, None] + step_log_probs
        adds_length = tf.one_hot(tf.fill(tf.shape(previously_finished), end), vocab,
                                 on_value=0, off_value=1, dtype=tf.int64)  # fmt: skip
        adds_length *= tf.cast(tf.logical_not(previously_finished), tf.int64)[:, :, None]
        scores = total / tf.cast(
            _length_penalty(state.lengths[:, :, None] + adds_length,
                            self._length_penalty_weight), total.dtype
        )  # fmt: skip
        accumulated = None
        probs = _attention_probs(next_cell_state, self._coverage_penalty_weight)
        if probs is not None:
            not_finished = tf.cast(tf.logical_not(previously_finished), probs.dtype)
            accumulated = state.accumulated_attention_probs
            accumulated += probs * not_finished[:, :, None]
            coverage = tf.reduce_sum(tf.math.log(tf.minimum(accumulated, 1.0)), 2)
            coverage = tf.where(previously_finished, tf.zeros_like(coverage), coverage)
            scores += self._coverage_penalty_weight * coverage[:, :, None]
        flat = tf.reshape(scores, [self._batch_size, -1])
        best_scores, indices = tf.nn.top_k(flat, k=beam)
        static_batch = tf.get_static_value(self._batch_size)
        best_scores.set_shape([static_batch, beam])
        indices.set_shape([static_batch, beam])
        word_ids = tf.cast(indices % vocab, tf.int32)
        parent_ids = tf.cast(indices // vocab, tf.int32)

        def from_parents(t):
            return tf.gather(t, parent_ids, batch_dims=1)

        total = tf.reshape(total, [self._batch_size, -1])
        log_probs = tf.gather(total, indices, batch_dims=1)
        parent_finished = from_parents(previously_finished)
        lengths = from_parents(state.lengths) + tf.cast(
            tf.logical_not(parent_finished), tf.int64
        )
        next_state = BeamSearchDecoderState(
            cell_state=tf.nest.map_structure(
                lambda t: t if _passes_through(t) else from_parents(t), next_cell_state
            ),
            log_probs=log_probs,
            finished=tf.logical_or(parent_finished, tf.equal(word_ids, end)),
            lengths=lengths,
            accumulated_attention_probs=() if accumulated is None else from_parents(
                accumulated
            ),
        )  # fmt: skip
        pairs = zip(tf.nest.flatten(next_state), tf.nest.flatten(state), strict=True)
        for new, old in pairs:  # the static shapes the gathers lost
            if not isinstance(new, tf.TensorArray):
                new.set_shape(old.shape)
        output = BeamSearchDecoderOutput(scores=best_scores, predicted_ids=word_ids,
                                         parent_ids=parent_ids)  # fmt: skip
        return output, next_state

    def finalize(self, outputs, final_state, sequence_lengths):
        """Follows each beam back through its parents (:func:`gather_tree`).

        Returns:
            ``(FinalBeamSearchDecoderOutput, final_state)``.
        """
        lengths = tf.cast(tf.reduce_max(final_state.lengths, axis=1), tf.int32)
        predicted_ids = gather_tree(outputs.predicted_ids, outputs.parent_ids,
                                    max_sequence_lengths=lengths, end_token=self._end_token)
        if self._reorder_tensor_arrays:
            final_state = final_state._replace(cell_state=tf.nest.map_structure(
                lambda t: self._sorted_array(t, outputs.parent_ids, final_state.lengths),
                final_state.cell_state,
            ))  # fmt: skip
        return FinalBeamSearchDecoderOutput(predicted_ids=predicted_ids,
                                            beam_search_decoder_output=outputs), final_state

    def _sorted_array(self, t, parent_ids, lengths):
        """A TensorArray of [batch * beam, ...] per step, its beams reordered along
        each final beam's ancestry (steps past a beam's length unchanged)."""
        if not isinstance(t, tf.TensorArray):
            return t
        stacked = t.stack()
        if stacked.shape.rank is None or stacked.shape.rank < 2:
            return t
        steps = tf.shape(stacked)[0]
        split = tf.reshape(stacked, tf.concat([[steps, self._batch_size, self._beam_width],
                                               tf.shape(stacked)[2:]], 0))  # fmt: skip
        beams = tf.broadcast_to(tf.range(self._beam_width), tf.shape(parent_ids))
        longest = tf.cast(tf.reduce_max(lengths, 1), tf.int32)
        ancestors = gather_tree(beams, parent_ids, longest,
                                end_token=self._beam_width + 1)  # fmt: skip
        within = tf.transpose(tf.sequence_mask(lengths, steps), [2, 0, 1])
        ancestors = tf.where(within, ancestors, beams)
        sorted_split = tf.gather(split, ancestors, batch_dims=2)
        merged = tf.reshape(sorted_split, tf.shape(stacked))
        return tf.TensorArray(t.dtype, size=steps, element_shape=t.element_shape).unstack(
            merged
        )
