"""TF 1.15's ``tf.contrib.seq2seq`` helpers: what :class:`BasicDecoder` feeds its cell
at each step and how it reads a sample from the cell's output.

Usage::

    helper = TrainingHelper(decoder_inputs, target_lengths)          # teacher forcing
    helper = GreedyEmbeddingHelper(embedding, start_tokens, end_token)  # inference
"""

import abc

import tensorflow as tf

from layers.checks import require
from layers.tf1.seq2seq.decoder import transpose_batch_time

v1 = tf.compat.v1


class Helper(abc.ABC):
    """The helper interface: ``initialize``, ``sample``, ``next_inputs``."""

    # what a subclass sets: _batch_size, and these unless one id per entry in int32
    _sample_ids_shape, _sample_ids_dtype = tf.TensorShape([]), tf.int32

    @property
    def batch_size(self):
        """The batch size (a scalar int tensor)."""
        return self._batch_size

    @property
    def sample_ids_shape(self):
        """The shape of one entry's sample id (a TensorShape)."""
        return self._sample_ids_shape

    @property
    def sample_ids_dtype(self):
        """The dtype of the sample ids."""
        return self._sample_ids_dtype

    @abc.abstractmethod
    def initialize(self, name=None):
        """Returns ``(initial_finished, initial_inputs)``."""

    @abc.abstractmethod
    def sample(self, time, outputs, state, name=None):
        """Returns the sample ids of one step's outputs."""

    @abc.abstractmethod
    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        """Returns ``(finished, next_inputs, next_state)``."""


def embedding_function(embedding):
    """``embedding`` itself when callable, else a lookup in that [vocab, depth] matrix."""
    if callable(embedding):
        return embedding
    return lambda ids: tf.nn.embedding_lookup(embedding, ids)


def start_and_end_tokens(owner, start_tokens, end_token):
    """``start_tokens`` as an int32 vector and ``end_token`` as an int32 scalar.

    Raises:
        ZooError: either has another rank.
    """
    start_tokens = tf.convert_to_tensor(start_tokens, tf.int32, name="start_tokens")
    end_token = tf.convert_to_tensor(end_token, tf.int32, name="end_token")
    for tensor, rank, what in ((start_tokens, 1, "start_tokens [batch]"),
                               (end_token, 0, "a scalar end_token")):  # fmt: skip
        found = tensor.shape.rank
        problem = None if found == rank else f"expected {what}, found rank {found}"
        require(owner, problem, "pass one start token per entry and one end token")
    return start_tokens, end_token


def _sampling_probability(owner, probability):
    """``probability`` as a float32 scalar or [batch] vector."""
    probability = tf.convert_to_tensor(probability, tf.float32, name="sampling_probability")
    rank = probability.shape.rank
    problem = (None if rank in (0, 1) else
               f"expected a scalar or [batch] sampling_probability, found rank {rank}")
    require(owner, problem, "pass e.g. sampling_probability=0.25")  # fmt: skip
    return probability


def _coin(probability, batch_size, seed):
    """[batch] bools, each True with ``probability`` (a scalar or one per entry)."""
    uniform = tf.random.uniform([batch_size], seed=seed)
    return uniform < probability


def _draw(logits, seed):
    """One int32 id per row drawn from ``softmax(logits)``."""
    return tf.cast(tf.random.categorical(logits, 1, seed=seed)[:, 0], tf.int32)


class TrainingHelper(Helper):
    """Reads the given inputs one step at a time (teacher forcing).

    Args:
        inputs: [batch, time, ...] (``time_major``: [time, batch, ...]), or a
            structure of them.
        sequence_length: [batch] int: each entry's length.
        time_major: the layout of ``inputs``.
        name: the name scope.

    Raises:
        ZooError: ``sequence_length`` is not a vector.
    """

    def __init__(self, inputs, sequence_length, time_major=False, name=None):
        with v1.name_scope(name, "TrainingHelper", [inputs, sequence_length]):
            inputs = tf.nest.map_structure(tf.convert_to_tensor, inputs)
            if not time_major:
                inputs = tf.nest.map_structure(transpose_batch_time, inputs)
            self._input_arrays = tf.nest.map_structure(_unstacked, inputs)
            self._sequence_length = tf.convert_to_tensor(
                sequence_length, name="sequence_length"
            )
            rank = self._sequence_length.shape.rank
            require(type(self).__name__, None if rank == 1 else
                    f"expected sequence_length [batch], found rank {rank}",
                    "pass one length per batch entry")  # fmt: skip
            self._zero_inputs = tf.nest.map_structure(
                lambda tensor: tf.zeros_like(tensor[0]), inputs
            )
            self._batch_size = tf.size(self._sequence_length)

    @property
    def inputs(self):
        """The input TensorArrays, one per input, time-major."""
        return self._input_arrays

    @property
    def sequence_length(self):
        """The [batch] lengths."""
        return self._sequence_length

    def _inputs_at(self, time, finished):
        """The inputs of step ``time``, or zeros once every entry finished."""
        return tf.cond(
            tf.reduce_all(finished),
            lambda: self._zero_inputs,
            lambda: tf.nest.map_structure(lambda ta: ta.read(time), self._input_arrays),
        )  # fmt: skip

    def initialize(self, name=None):
        with v1.name_scope(name, "TrainingHelperInitialize"):
            finished = tf.equal(0, self._sequence_length)
            return finished, self._inputs_at(0, finished)

    def sample(self, time, outputs, state, name=None):
        with v1.name_scope(name, "TrainingHelperSample", [time, outputs]):
            return tf.argmax(outputs, axis=-1, output_type=tf.int32)

    def next_inputs(self, time, outputs, state, sample_ids=None, name=None):
        with v1.name_scope(name, "TrainingHelperNextInputs", [time, outputs, state]):
            finished = time + 1 >= self._sequence_length
            return finished, self._inputs_at(time + 1, finished), state


def _unstacked(tensor):
    """A TensorArray of ``tensor``'s first-axis slices."""
    array = tf.TensorArray(tensor.dtype, size=tf.shape(tensor)[0],
                           element_shape=tensor.shape[1:])  # fmt: skip
    return array.unstack(tensor)


class ScheduledEmbeddingTrainingHelper(TrainingHelper):
    """A training helper that feeds, with ``sampling_probability`` per entry and
    step, the embedding of an id drawn from the output logits in place of the
    given input (scheduled sampling). Sample id -1 marks an entry not sampled.

    Args:
        inputs, sequence_length, time_major, name: as :class:`TrainingHelper`.
        embedding: a [vocab, depth] matrix or a function ``ids -> inputs``.
        sampling_probability: a scalar or [batch] float in [0, 1].
        seed, scheduling_seed: the seeds of the drawn ids and of the coin.
    """

    def __init__(self, inputs, sequence_length, embedding, sampling_probability,
                 time_major=False, seed=None, scheduling_seed=None, name=None):  # fmt: skip
        with v1.name_scope(name, "ScheduledEmbeddingSamplingWrapper", [embedding]):
            self._embedding_fn = embedding_function(embedding)
            self._sampling_probability = _sampling_probability(
                type(self).__name__, sampling_probability
            )
            self._seed, self._scheduling_seed = seed, scheduling_seed
            super().__init__(inputs, sequence_length, time_major=time_major, name=name)

    def sample(self, time, outputs, state, name=None):
        with v1.name_scope(name, "ScheduledEmbeddingTrainingHelperSample"):
            sampled = _coin(self._sampling_probability, self.batch_size,
                            self._scheduling_seed)  # fmt: skip
            return tf.where(sampled, _draw(outputs, self._seed), -1)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        with v1.name_scope(name, "ScheduledEmbeddingTrainingHelperNextInputs"):
            finished, given, state = super().next_inputs(time, outputs, state, sample_ids)
            sampled = self._embedding_fn(tf.maximum(sample_ids, 0))
            mixed = tf.where((sample_ids > -1)[:, None], sampled, given)
            fed = tf.cond(tf.reduce_all(finished), lambda: given, lambda: mixed)
            return finished, fed, state


class ScheduledOutputTrainingHelper(TrainingHelper):
    """A training helper that feeds, with ``sampling_probability``, the cell's
    own output (through ``next_inputs_fn``, joined with the ``auxiliary_inputs``
    of that step) in place of the given input. The sample ids are the coin's bools.

    Args:
        inputs, sequence_length, time_major, name: as :class:`TrainingHelper`.
        sampling_probability: a scalar or [batch] float in [0, 1].
        seed: the coin's seed.
        next_inputs_fn: None, or a function applied to the output before it is fed.
        auxiliary_inputs: None, or inputs laid out as ``inputs`` that are joined
            (last axis) to every input fed, given or sampled.
    """

    _sample_ids_dtype = tf.bool

    def __init__(self, inputs, sequence_length, sampling_probability, time_major=False,
                 seed=None, next_inputs_fn=None, auxiliary_inputs=None,
                 name=None):  # fmt: skip
        with v1.name_scope(name, "ScheduledOutputTrainingHelper",
                           [inputs, auxiliary_inputs, sampling_probability]):  # fmt: skip
            self._sampling_probability = _sampling_probability(
                type(self).__name__, sampling_probability
            )
            self._auxiliary_arrays = None
            if auxiliary_inputs is not None:
                inputs = tf.nest.map_structure(
                    lambda x, y: tf.concat([x, y], -1), inputs, auxiliary_inputs
                )
                auxiliary = tf.nest.flatten(auxiliary_inputs)
                if not time_major:
                    auxiliary = [transpose_batch_time(tensor) for tensor in auxiliary]
                self._auxiliary_arrays = [_unstacked(tensor) for tensor in auxiliary]
            self._seed, self._next_inputs_fn = seed, next_inputs_fn
            super().__init__(inputs, sequence_length, time_major=time_major, name=name)

    def sample(self, time, outputs, state, name=None):
        with v1.name_scope(name, "ScheduledOutputTrainingHelperSample"):
            return _coin(self._sampling_probability, self.batch_size, self._seed)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        with v1.name_scope(name, "ScheduledOutputTrainingHelperNextInputs"):
            finished, given, state = super().next_inputs(time, outputs, state, sample_ids)

            def mixed():
                fed = outputs if self._next_inputs_fn is None else self._next_inputs_fn(
                    outputs
                )
                if self._auxiliary_arrays is not None:
                    extra = [array.read(time + 1) for array in self._auxiliary_arrays]
                    fed = tf.concat([fed, *extra], -1)
                return tf.where(sample_ids[:, None], fed, given)

            return finished, tf.cond(tf.reduce_all(finished), lambda: given, mixed), state


class GreedyEmbeddingHelper(Helper):
    """Feeds the embedding of the output's argmax; an entry finishes at ``end_token``.

    Args:
        embedding: a [vocab, depth] matrix or a function ``ids -> inputs``.
        start_tokens: [batch] int: the first step's ids.
        end_token: a scalar int.

    Raises:
        ZooError: ``start_tokens`` not a vector, or ``end_token`` not a scalar.
    """

    def __init__(self, embedding, start_tokens, end_token):
        self._embedding_fn = embedding_function(embedding)
        self._start_tokens, self._end_token = start_and_end_tokens(
            type(self).__name__, start_tokens, end_token
        )
        self._batch_size = tf.size(self._start_tokens)
        self._start_inputs = self._embedding_fn(self._start_tokens)

    def initialize(self, name=None):
        return tf.fill([self._batch_size], False), self._start_inputs

    def sample(self, time, outputs, state, name=None):
        return tf.argmax(outputs, axis=-1, output_type=tf.int32)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        finished = tf.equal(sample_ids, self._end_token)
        next_inputs = tf.cond(
            tf.reduce_all(finished),
            lambda: self._start_inputs,
            lambda: self._embedding_fn(sample_ids),
        )  # fmt: skip
        return finished, next_inputs, state


class SampleEmbeddingHelper(GreedyEmbeddingHelper):
    """As :class:`GreedyEmbeddingHelper`, the id drawn from ``softmax(outputs /
    softmax_temperature)`` instead of the argmax.

    Args:
        embedding, start_tokens, end_token: as :class:`GreedyEmbeddingHelper`.
        softmax_temperature: None (1) or a positive scalar.
        seed: the draw's seed.
    """

    def __init__(self, embedding, start_tokens, end_token, softmax_temperature=None,
                 seed=None):  # fmt: skip
        super().__init__(embedding, start_tokens, end_token)
        self._softmax_temperature, self._seed = softmax_temperature, seed

    def sample(self, time, outputs, state, name=None):
        logits = outputs
        if self._softmax_temperature is not None:
            logits = outputs / self._softmax_temperature
        return _draw(logits, self._seed)


class InferenceHelper(Helper):
    """Feeds ``next_inputs_fn(sample_fn(outputs))`` with no embedding.

    Args:
        sample_fn: ``outputs -> sample_ids``.
        sample_shape: the shape of one entry's sample id.
        sample_dtype: the sample ids' dtype.
        start_inputs: [batch, ...] the first inputs.
        end_fn: ``sample_ids -> finished`` bools.
        next_inputs_fn: None (the sample ids themselves) or ``sample_ids -> inputs``.
    """

    def __init__(self, sample_fn, sample_shape, sample_dtype, start_inputs, end_fn,
                 next_inputs_fn=None):  # fmt: skip
        self._sample_fn, self._end_fn = sample_fn, end_fn
        self._next_inputs_fn = next_inputs_fn
        self._sample_ids_shape = tf.TensorShape(sample_shape)
        self._sample_ids_dtype = sample_dtype
        self._start_inputs = tf.convert_to_tensor(start_inputs, name="start_inputs")
        self._batch_size = tf.shape(self._start_inputs)[0]

    def initialize(self, name=None):
        return tf.fill([self._batch_size], False), self._start_inputs

    def sample(self, time, outputs, state, name=None):
        return self._sample_fn(outputs)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        fed = sample_ids
        if self._next_inputs_fn is not None:
            fed = self._next_inputs_fn(sample_ids)
        return self._end_fn(sample_ids), fed, state


class CustomHelper(Helper):
    """A helper made of three functions.

    Args:
        initialize_fn: ``() -> (finished, next_inputs)``.
        sample_fn: ``(time, outputs, state) -> sample_ids``.
        next_inputs_fn: ``(time, outputs, state, sample_ids) -> (finished,
            next_inputs, next_state)``.
        sample_ids_shape: default ``[]``.
        sample_ids_dtype: default int32.
    """

    def __init__(self, initialize_fn, sample_fn, next_inputs_fn, sample_ids_shape=None,
                 sample_ids_dtype=None):  # fmt: skip
        self._initialize_fn, self._sample_fn = initialize_fn, sample_fn
        self._next_inputs_fn = next_inputs_fn
        self._sample_ids_shape = tf.TensorShape(sample_ids_shape or [])
        self._sample_ids_dtype = sample_ids_dtype or tf.int32
        self._batch_size = None

    @property
    def batch_size(self):
        """The batch size, known once :meth:`initialize` ran.

        Raises:
            ZooError: before :meth:`initialize`.
        """
        require("CustomHelper", None if self._batch_size is not None else
                "expected initialize() to have run, found batch_size read before it",
                "read batch_size after dynamic_decode started (or call initialize)")
        return self._batch_size  # fmt: skip

    def initialize(self, name=None):
        finished, next_inputs = self._initialize_fn()
        if self._batch_size is None:
            self._batch_size = tf.size(finished)
        return finished, next_inputs

    def sample(self, time, outputs, state, name=None):
        return self._sample_fn(time=time, outputs=outputs, state=state)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        return self._next_inputs_fn(time=time, outputs=outputs, state=state,
                                    sample_ids=sample_ids)  # fmt: skip
