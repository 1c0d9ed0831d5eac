"""TF 1.15's ``tf.contrib.crf``: a linear-chain CRF on ``get_variable``.

TF 1.15's names, arguments and variable: ``crf_log_likelihood`` makes
``transitions`` (``[num_tags, num_tags]``, the scope's default initializer) with
``tf.compat.v1.get_variable`` when no matrix is given, so its checkpoints restore.
Sequences of length 0 score 0 and normalize to 0, as TF 1.15's did. One
difference, a fix: TF 1.15's ``crf_forward`` read one transition too many for a
sequence of length 1 in a batch of longer ones (its log-likelihood could be
positive; tensorflow/addons#778 fixed its copy), here a length-1 sequence
normalizes over its first step only, as the forward algorithm does.

Usage::

    log_likelihood, transitions = tf.contrib.crf.crf_log_likelihood(
        unary_scores, tags, lengths)
    tags, best_score = tf.contrib.crf.crf_decode(unary_scores, transitions, lengths)
"""

import numpy as np
import tensorflow as tf

from layers.errors import ShapeError
from layers.tf1.rnn_cell import RNNCell

__all__ = ["CrfDecodeBackwardRnnCell", "CrfDecodeForwardRnnCell", "CrfForwardRnnCell",
           "crf_binary_score", "crf_decode", "crf_forward", "crf_log_likelihood",
           "crf_log_norm", "crf_multitag_sequence_score", "crf_sequence_score",
           "crf_unary_score", "viterbi_decode"]  # fmt: skip


def _num_tags(owner, inputs, transition_params=None):
    """The static number of tags of ``inputs`` ``[batch, time, num_tags]``, checked
    against a ``[num_tags, num_tags]`` transition matrix.

    Raises:
        ShapeError: inputs not of rank 3, of unknown depth or of no time step, or a
            transition matrix of another shape.
    """
    shape = tf.TensorShape(inputs.shape)
    depth = tf.compat.dimension_value(shape[-1]) if shape.rank == 3 else None
    if depth is None:
        raise ShapeError(
            f"{owner}: expected inputs [batch_size, max_seq_len, num_tags] with a known "
            f"num_tags, found shape {shape}; give the unary scores a static last "
            "dimension (the number of tags)"
        )
    if tf.compat.dimension_value(shape[1]) == 0:
        raise ShapeError(
            f"{owner}: expected inputs with at least one time step, found shape {shape}; "
            "pad empty sequences to length 1 and give them sequence length 0"
        )
    if transition_params is not None:
        found = tf.TensorShape(transition_params.shape)
        if not found.is_compatible_with([depth, depth]):
            raise ShapeError(
                f"{owner}: expected transition_params of shape [{depth}, {depth}] (the "
                f"inputs' {depth} tags), found shape {found}; make the transition "
                "matrix num_tags x num_tags"
            )
    return depth


def _where_empty(sequence_lengths, values):
    """``values``, with 0 where a sequence's length is 0 or less (TF 1.15's mask)."""
    return tf.where(sequence_lengths <= 0, tf.zeros_like(values), values)


def _single_step(inputs):
    """True when ``inputs`` has one time step (statically, else a bool tensor)."""
    steps = tf.compat.dimension_value(inputs.shape[1])
    return steps == 1 if steps is not None else tf.equal(tf.shape(inputs)[1], 1)


def _cond(pred, true_fn, false_fn):
    """``true_fn()`` or ``false_fn()``, chosen when built if ``pred`` is a bool."""
    if isinstance(pred, bool):
        return true_fn() if pred else false_fn()
    return tf.cond(pred, true_fn, false_fn)


def crf_sequence_score(inputs, tag_indices, sequence_lengths, transition_params):
    """The unnormalized score of a tag sequence.

    Args:
        inputs: ``[batch_size, max_seq_len, num_tags]`` unary potentials.
        tag_indices: ``[batch_size, max_seq_len]`` tag indices.
        sequence_lengths: ``[batch_size]`` true lengths.
        transition_params: ``[num_tags, num_tags]`` transition matrix.

    Returns:
        ``[batch_size]`` scores (0 for a sequence of length 0).

    Raises:
        ShapeError: inputs without a static number of tags, or a transition matrix
            of another size.
    """
    _num_tags("crf_sequence_score", inputs, transition_params)
    tag_indices = tf.convert_to_tensor(tag_indices)

    def single():
        first = tf.gather(inputs[:, 0], tag_indices[:, :1], batch_dims=1)[:, 0]
        return _where_empty(sequence_lengths, first)

    def multi():
        unary = crf_unary_score(tag_indices, sequence_lengths, inputs)
        return unary + crf_binary_score(tag_indices, sequence_lengths, transition_params)

    return _cond(_single_step(inputs), single, multi)


def crf_multitag_sequence_score(inputs, tag_bitmap, sequence_lengths, transition_params):
    """The log of the summed scores of every tag sequence ``tag_bitmap`` allows.

    Args:
        inputs: ``[batch_size, max_seq_len, num_tags]`` unary potentials.
        tag_bitmap: ``[batch_size, max_seq_len, num_tags]`` bools, the tags allowed
            at each step (one-hot: :func:`crf_sequence_score`).
        sequence_lengths: ``[batch_size]`` true lengths.
        transition_params: ``[num_tags, num_tags]`` transition matrix.

    Returns:
        ``[batch_size]`` scores.
    """
    filtered = tf.where(tag_bitmap, inputs, tf.fill(tf.shape(inputs), float("-inf")))
    return crf_log_norm(filtered, sequence_lengths, transition_params)


def crf_log_norm(inputs, sequence_lengths, transition_params):
    """The log partition function of a CRF, by the forward algorithm.

    Args:
        inputs: ``[batch_size, max_seq_len, num_tags]`` unary potentials.
        sequence_lengths: ``[batch_size]`` true lengths.
        transition_params: ``[num_tags, num_tags]`` transition matrix.

    Returns:
        ``[batch_size]`` log normalizers (0 for a sequence of length 0).

    Raises:
        ShapeError: as :func:`crf_sequence_score`.
    """
    _num_tags("crf_log_norm", inputs, transition_params)
    first = inputs[:, 0]

    def multi():
        return crf_forward(inputs[:, 1:], first, transition_params, sequence_lengths)

    alphas = _cond(_single_step(inputs), lambda: first, multi)
    return _where_empty(sequence_lengths, tf.reduce_logsumexp(alphas, [1]))


def crf_log_likelihood(inputs, tag_indices, sequence_lengths, transition_params=None):
    """The log-likelihood of tag sequences in a CRF.

    Args:
        inputs: ``[batch_size, max_seq_len, num_tags]`` unary potentials.
        tag_indices: ``[batch_size, max_seq_len]`` gold tag indices.
        sequence_lengths: ``[batch_size]`` true lengths.
        transition_params: ``[num_tags, num_tags]`` transition matrix; None makes
            the variable ``transitions`` with ``tf.compat.v1.get_variable`` in the
            current scope, as TF 1.15 did.

    Returns:
        ``(log_likelihood, transition_params)``: ``[batch_size]`` log-likelihoods,
        and the matrix used.

    Raises:
        ShapeError: as :func:`crf_sequence_score`.
    """
    num_tags = _num_tags("crf_log_likelihood", inputs, transition_params)
    if transition_params is None:
        transition_params = tf.compat.v1.get_variable("transitions", [num_tags, num_tags])
    scores = crf_sequence_score(inputs, tag_indices, sequence_lengths, transition_params)
    log_norm = crf_log_norm(inputs, sequence_lengths, transition_params)
    return scores - log_norm, transition_params


def crf_unary_score(tag_indices, sequence_lengths, inputs):
    """The summed unary potentials of tag sequences.

    Args:
        tag_indices: ``[batch_size, max_seq_len]`` tag indices.
        sequence_lengths: ``[batch_size]`` true lengths.
        inputs: ``[batch_size, max_seq_len, num_tags]`` unary potentials.

    Returns:
        ``[batch_size]`` scores, steps past each length left out.
    """
    picked = tf.gather(inputs, tag_indices[..., None], batch_dims=2)[..., 0]
    masks = tf.sequence_mask(sequence_lengths, tf.shape(tag_indices)[1], inputs.dtype)
    return tf.reduce_sum(picked * masks, 1)


def crf_binary_score(tag_indices, sequence_lengths, transition_params):
    """The summed transition potentials of tag sequences.

    Args:
        tag_indices: ``[batch_size, max_seq_len]`` tag indices.
        sequence_lengths: ``[batch_size]`` true lengths.
        transition_params: ``[num_tags, num_tags]`` transition matrix.

    Returns:
        ``[batch_size]`` scores of the transitions within each length.
    """
    pairs = tf.stack([tag_indices[:, :-1], tag_indices[:, 1:]], -1)
    scores = tf.gather_nd(transition_params, pairs)
    masks = tf.sequence_mask(sequence_lengths, tf.shape(tag_indices)[1], scores.dtype)
    return tf.reduce_sum(scores * masks[:, 1:], 1)


def crf_forward(inputs, state, transition_params, sequence_lengths):
    """The forward algorithm's alphas at each sequence's last step.

    Args:
        inputs: ``[batch_size, max_seq_len - 1, num_tags]``: the unary potentials
            after the first step.
        state: ``[batch_size, num_tags]``: the first step's alphas (its potentials).
        transition_params: ``[num_tags, num_tags]`` transition matrix.
        sequence_lengths: ``[batch_size]`` true lengths (of the whole sequences).

    Returns:
        ``[batch_size, num_tags]`` alphas at step ``length - 1`` (at step 0 for
        lengths 0 and 1).
    """
    transitions = transition_params[None]

    def step(alphas, potentials):
        return potentials + tf.reduce_logsumexp(alphas[:, :, None] + transitions, [1])

    later = tf.scan(step, tf.transpose(inputs, [1, 0, 2]), state)
    every = tf.concat([state[None], later], 0)  # [max_seq_len, batch, num_tags]
    last = tf.maximum(tf.cast(sequence_lengths, tf.int32) - 1, 0)
    return tf.gather(tf.transpose(every, [1, 0, 2]), last[:, None], batch_dims=1)[:, 0]


class _CrfCell(RNNCell):
    """A cell of :func:`tf.compat.v1.nn.dynamic_rnn` without variables, ``num_tags``
    wide; it takes a ``[num_tags, num_tags]`` transition matrix."""

    def __init__(self, transition_params, name=None):
        super().__init__(name=name)
        self._transition_params = tf.convert_to_tensor(transition_params)[None]
        self._num_tags = tf.compat.dimension_value(self._transition_params.shape[-1])

    @property
    def state_size(self):
        """``num_tags``."""
        return self._num_tags

    @property
    def output_size(self):
        """``num_tags``."""
        return self._num_tags


class CrfForwardRnnCell(_CrfCell):
    """TF 1.15's cell of the forward algorithm: alphas in, alphas out."""

    def call(self, inputs, state):
        """``(new_alphas, new_alphas)`` of ``[batch, num_tags]`` potentials."""
        scores = state[:, :, None] + self._transition_params
        new_alphas = inputs + tf.reduce_logsumexp(scores, [1])
        return new_alphas, new_alphas


class CrfDecodeForwardRnnCell(_CrfCell):
    """TF 1.15's forward cell of Viterbi decoding: best scores in, back-pointers
    (int32) out."""

    def call(self, inputs, state):
        """``(backpointers, new_state)``, both ``[batch, num_tags]``."""
        scores = state[:, :, None] + self._transition_params
        backpointers = tf.cast(tf.argmax(scores, 1), tf.int32)
        return backpointers, inputs + tf.reduce_max(scores, [1])


class CrfDecodeBackwardRnnCell(RNNCell):
    """TF 1.15's backward cell of Viterbi decoding: follows back-pointers.

    Args:
        num_tags: the number of tags.
    """

    def __init__(self, num_tags, name=None):
        super().__init__(name=name)
        self._num_tags = num_tags

    @property
    def state_size(self):
        """1: the next step's tag."""
        return 1

    @property
    def output_size(self):
        """1."""
        return 1

    def call(self, inputs, state):
        """``(tags, tags)``: ``[batch, 1]`` tags read from ``[batch, num_tags]``
        back-pointers at the ``[batch, 1]`` tags of the next step."""
        tags = tf.gather(inputs, state, batch_dims=1)
        return tags, tags


def viterbi_decode(score, transition_params):
    """The best tag sequence of one sequence, in NumPy (TF 1.15's, for test time).

    Args:
        score: ``[seq_len, num_tags]`` unary potentials.
        transition_params: ``[num_tags, num_tags]`` transition matrix.

    Returns:
        ``(viterbi, viterbi_score)``: a list of ``seq_len`` tag indices and its score.

    Raises:
        ShapeError: ``score`` not ``[seq_len >= 1, num_tags]``, or a transition
            matrix of another size.
    """
    score, transition_params = np.asarray(score), np.asarray(transition_params)
    if score.ndim != 2 or not len(score):
        raise ShapeError(
            f"viterbi_decode: expected score [seq_len >= 1, num_tags], found shape "
            f"{score.shape}; pass one sequence's unary scores, cut to its length"
        )
    num_tags = score.shape[1]
    if transition_params.shape != (num_tags, num_tags):
        raise ShapeError(
            f"viterbi_decode: expected transition_params of shape [{num_tags}, "
            f"{num_tags}] (the score's {num_tags} tags), found shape "
            f"{transition_params.shape}; make the transition matrix num_tags x num_tags"
        )
    trellis = np.zeros_like(score)
    backpointers = np.zeros_like(score, dtype=np.int32)
    trellis[0] = score[0]
    for t in range(1, len(score)):
        v = trellis[t - 1][:, None] + transition_params
        trellis[t] = score[t] + v.max(0)
        backpointers[t] = v.argmax(0)
    viterbi = [np.argmax(trellis[-1])]
    for pointers in backpointers[:0:-1]:
        viterbi.append(pointers[viterbi[-1]])
    viterbi.reverse()
    return viterbi, np.max(trellis[-1])


def crf_decode(potentials, transition_params, sequence_length):
    """The best tag sequences of a batch, in the graph (Viterbi).

    Args:
        potentials: ``[batch_size, max_seq_len, num_tags]`` unary potentials.
        transition_params: ``[num_tags, num_tags]`` transition matrix.
        sequence_length: ``[batch_size]`` true lengths.

    Returns:
        ``(decode_tags, best_score)``: ``[batch_size, max_seq_len]`` int32 tags
        (0 past each length) and ``[batch_size]`` float scores.

    Raises:
        ShapeError: as :func:`crf_sequence_score`.
    """
    num_tags = _num_tags("crf_decode", potentials, transition_params)

    def single():
        first = potentials[:, 0]
        tags = tf.cast(tf.argmax(first, 1), tf.int32)[:, None]
        return tags, tf.reduce_max(first, 1)

    def multi():
        length = tf.cast(sequence_length, tf.int32)
        less_one = tf.maximum(length - 1, 0)
        backpointers, last_score = tf.compat.v1.nn.dynamic_rnn(
            CrfDecodeForwardRnnCell(transition_params), potentials[:, 1:],
            sequence_length=less_one, initial_state=potentials[:, 0], dtype=tf.int32)
        backpointers = tf.reverse_sequence(backpointers, less_one, seq_axis=1)
        best = tf.cast(tf.argmax(last_score, 1), tf.int32)[:, None]
        tags, _ = tf.compat.v1.nn.dynamic_rnn(
            CrfDecodeBackwardRnnCell(num_tags), backpointers, sequence_length=less_one,
            initial_state=best, dtype=tf.int32)
        tags = tf.concat([best, tags[:, :, 0]], 1)
        return tf.reverse_sequence(tags, length, seq_axis=1), tf.reduce_max(last_score, 1)

    return _cond(_single_step(potentials), single, multi)
