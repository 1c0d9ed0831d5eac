"""TF 1.15's ``tf.contrib.seq2seq`` attention: the mechanisms (Bahdanau, Luong and
their monotonic forms) and ``AttentionWrapper``, a cell that attends over a memory.

Usage::

    mechanism = BahdanauAttention(64, encoder_outputs, memory_sequence_length=lengths)
    cell = AttentionWrapper(cell, mechanism, attention_layer_size=64)
    state = cell.zero_state(batch, tf.float32).clone(cell_state=encoder_state)

Variables: ``memory_layer/kernel`` where the mechanism is made; in the wrapper's
scope (``decoder/attention_wrapper``): ``bahdanau_attention/query_layer/kernel``,
``bahdanau_attention/attention_v`` (normalized: ``attention_g``, ``attention_b``),
``luong_attention/attention_g`` (scaled), ``attention_layer/kernel``.
"""

import collections
import functools
import math

import numpy as np
import tensorflow as tf

from layers.checks import choice_problem, int_value, require
from layers.errors import ShapeError, ZooError
from layers.tf1.core import Dense
from layers.tf1.rnn_cell import RNNCell, structure, zeros
from layers.tf1.seq2seq.basic_decoder import check_state
from layers.tf1.seq2seq.decoder import dimension

v1 = tf.compat.v1


def hardmax(logits, name=None):
    """One-hot of the argmax of ``logits`` along the last axis, in its dtype."""
    with v1.name_scope(name, "Hardmax", [logits]):
        logits = tf.convert_to_tensor(logits, name="logits")
        return tf.one_hot(tf.argmax(logits, -1), dimension(logits, -1), dtype=logits.dtype)


def safe_cumprod(x, *args, **kwargs):
    """``cumprod(x)`` as ``exp(cumsum(log(x)))``, ``x`` clipped to [tiny, 1]; more
    arguments go to ``tf.cumsum``."""
    with v1.name_scope(None, "SafeCumprod", [x]):
        x = tf.convert_to_tensor(x, name="x")
        tiny = np.finfo(x.dtype.as_numpy_dtype).tiny
        return tf.exp(tf.cumsum(tf.math.log(tf.clip_by_value(x, tiny, 1)), *args, **kwargs))


def monotonic_attention(p_choose_i, previous_attention, mode):
    """The expected attention of a monotonic mechanism (Raffel et al., 2017).

    Args:
        p_choose_i: [batch, memory_time] probabilities of stopping at each entry.
        previous_attention: [batch, memory_time] the last step's attention.
        mode: ``"recursive"`` (exact, a scan), ``"parallel"`` (cumulative
            products) or ``"hard"`` (``p_choose_i`` holds 0s and 1s).

    Returns:
        [batch, memory_time] attention.

    Raises:
        ZooError: another mode.
    """
    require("monotonic_attention", choice_problem(mode, ("recursive", "parallel", "hard"),
                                                  "mode"), 'pass mode="parallel"')
    p_choose_i = tf.convert_to_tensor(p_choose_i, name="p_choose_i")
    previous_attention = tf.convert_to_tensor(previous_attention, name="previous_attention")
    if mode == "hard":  # the first entry chosen at or after the last one attended
        chosen = p_choose_i * tf.cumsum(previous_attention, axis=1)
        return chosen * tf.math.cumprod(1 - chosen, axis=1, exclusive=True)
    if mode == "parallel":
        cumprod = safe_cumprod(1 - p_choose_i, axis=1, exclusive=True)
        return p_choose_i * cumprod * tf.cumsum(
            previous_attention / tf.clip_by_value(cumprod, 1e-10, 1.0), axis=1
        )
    # recursive: q_j = (1 - p_{j-1}) q_{j-1} + previous_j, attention_j = p_j q_j
    batch = tf.shape(p_choose_i)[0]
    shifted = tf.concat([tf.ones([batch, 1], p_choose_i.dtype), 1 - p_choose_i[:, :-1]], 1)
    q = tf.scan(
        lambda carry, step: step[0] * carry + step[1],
        [tf.transpose(shifted), tf.transpose(previous_attention)],
        initializer=tf.zeros([batch], p_choose_i.dtype),
    )  # fmt: skip
    return p_choose_i * tf.transpose(q)


def _memory(owner, memory, memory_sequence_length, check_inner_dims_defined):
    """The memory with the entries past each sequence's length set to zeros.

    Raises:
        ShapeError: an inner dimension is unknown (when checked), or the lengths'
            batch differs from the memory's.
    """
    memory = tf.convert_to_tensor(memory, name="memory")
    if check_inner_dims_defined and not memory.shape[2:].is_fully_defined():
        raise ShapeError(
            f"{owner}: expected a memory [batch, time, depth] with a known depth, found "
            f"shape {memory.shape}; give it a static last dimension"
        )
    if memory_sequence_length is None:
        return memory
    lengths = tf.convert_to_tensor(memory_sequence_length, name="memory_sequence_length")
    if not lengths.shape[:1].is_compatible_with(memory.shape[:1]):
        raise ShapeError(
            f"{owner}: expected one memory_sequence_length per memory entry "
            f"({memory.shape[0]}), found shape {lengths.shape}; pass the memory's lengths"
        )
    mask = tf.sequence_mask(lengths, tf.shape(memory)[1], dtype=memory.dtype)
    inner = [1] * (memory.shape.rank - 2)
    return memory * tf.reshape(mask, tf.concat([tf.shape(mask), inner], 0))


class AttentionMechanism:
    """The base of every attention mechanism (TF 1.15's marker class)."""


class _BaseAttentionMechanism(AttentionMechanism):
    """Keys and values from a memory; scores turned into alignments.

    Args:
        query_layer: None, or a layer applied to the query.
        memory: [batch, time, depth] tensor.
        probability_fn: ``(score, previous_alignments) -> alignments``.
        memory_sequence_length: None or [batch] lengths; later entries are zeros
            and score ``score_mask_value``.
        memory_layer: None, or a layer making the keys from the memory.
        check_inner_dims_defined: whether the memory's depth must be static.
        score_mask_value: the score of masked entries (default -inf).
        custom_key_value_fn: None, or ``(keys, values) -> (keys, values)``.
        name: the name scope.
        dtype: the layers' and scores' dtype (default float32).
    """

    def __init__(self, query_layer, memory, probability_fn, memory_sequence_length=None,
                 memory_layer=None, check_inner_dims_defined=True, score_mask_value=None,
                 custom_key_value_fn=None, name=None, dtype=None):  # fmt: skip
        self._query_layer, self._memory_layer = query_layer, memory_layer
        self.dtype = dtype or tf.float32
        self._name = name
        memory = tf.convert_to_tensor(memory, name="memory")
        if score_mask_value is None:
            score_mask_value = tf.as_dtype(memory.dtype).as_numpy_dtype(-np.inf)
        with v1.name_scope(name, "BaseAttentionMechanismInit", [memory]):
            self._values = _memory(name, memory, memory_sequence_length,
                                   check_inner_dims_defined)  # fmt: skip
            self._keys = self._values
            if memory_layer is not None:
                self._keys = memory_layer(self._values)
            if custom_key_value_fn is not None:
                self._keys, self._values = custom_key_value_fn(self._keys, self._values)
        self._batch_size = dimension(self._keys, 0)
        self._alignments_size = dimension(self._keys, 1)

        def masked(score, previous):
            if memory_sequence_length is not None:
                mask = tf.sequence_mask(memory_sequence_length, tf.shape(score)[1])
                score = tf.where(mask, score, score_mask_value * tf.ones_like(score))
            return probability_fn(score, previous)

        self._probability_fn = masked

    def _projected(self, num_units, memory, memory_sequence_length, score_mask_value,
                   dtype, custom_key_value_fn, name, query, probability_fn):  # fmt: skip
        """The set-up of the Bahdanau and Luong families: a ``memory_layer`` (and with
        ``query`` a ``query_layer``), ``tf.layers.Dense(num_units)`` without bias, as
        TF 1.15 named them; the other arguments as :class:`_BaseAttentionMechanism`'s."""
        dtype = dtype or tf.float32
        dense = functools.partial(Dense, num_units, use_bias=False, dtype=dtype)
        _BaseAttentionMechanism.__init__(
            self, dense(name="query_layer") if query else None, memory, probability_fn,
            memory_sequence_length, dense(name="memory_layer"),
            score_mask_value=score_mask_value, custom_key_value_fn=custom_key_value_fn,
            name=name, dtype=dtype,
        )  # fmt: skip
        self._num_units = int_value(num_units)

    @property
    def memory_layer(self):
        return self._memory_layer

    @property
    def query_layer(self):
        return self._query_layer

    @property
    def values(self):
        """The masked memory, [batch, time, depth]."""
        return self._values

    @property
    def keys(self):
        """The memory through the memory layer, [batch, time, num_units]."""
        return self._keys

    @property
    def batch_size(self):
        return self._batch_size

    @property
    def alignments_size(self):
        """The memory's time length."""
        return self._alignments_size

    @property
    def state_size(self):
        return self._alignments_size

    def initial_alignments(self, batch_size, dtype):
        """Zeros [batch_size, memory time] (the memory's time may be a tensor)."""
        return tf.zeros(tf.stack([batch_size, self._alignments_size]), dtype)

    def initial_state(self, batch_size, dtype):
        """The mechanism's first state: its initial alignments."""
        return self.initial_alignments(batch_size, dtype)

    def __call__(self, query, state):
        """Scores the keys against ``query`` [batch, query depth] in the
        mechanism's scope.

        Returns:
            ``(alignments, next_state)``: [batch, memory time] each.
        """
        with v1.variable_scope(None, self._scope_name, [query]):
            alignments = self._probability_fn(self._score(query), state)
        return alignments, alignments

    def _score(self, query):
        """The [batch, memory time] scores of ``query``."""
        raise NotImplementedError


def _bahdanau_score(processed_query, keys, normalize):
    """``v . tanh(keys + query)`` summed over units; normalized: ``g v / |v|``, plus
    a bias ``b`` inside the tanh."""
    dtype = processed_query.dtype
    units = dimension(keys, 2)
    processed_query = tf.expand_dims(processed_query, 1)
    v = v1.get_variable("attention_v", [units], dtype=dtype)
    if not normalize:
        return tf.reduce_sum(v * tf.tanh(keys + processed_query), [2])
    g = v1.get_variable("attention_g", (), dtype=dtype,
                        initializer=v1.constant_initializer(math.sqrt(1.0 / units)))
    b = v1.get_variable("attention_b", [units], dtype=dtype,
                        initializer=v1.zeros_initializer())  # fmt: skip
    normed_v = g * v * tf.math.rsqrt(tf.reduce_sum(tf.square(v)))
    return tf.reduce_sum(normed_v * tf.tanh(keys + processed_query + b), [2])


def _luong_score(owner, query, keys, scale):
    """``query . key`` for each key; scaled: times a scalar ``g`` (initially 1).

    Raises:
        ShapeError: the query's depth is not the keys'.
    """
    depth, key_units = (tf.compat.dimension_value(t.shape[-1]) for t in (query, keys))
    if depth is None or depth != key_units:
        raise ShapeError(
            f"{owner}: expected a query of the keys' depth {key_units}, found {depth}; "
            f"set num_units to the query's depth (the cell's output size)"
        )
    score = tf.squeeze(tf.matmul(tf.expand_dims(query, 1), keys, transpose_b=True), [1])
    if scale:
        g = v1.get_variable("attention_g", (), dtype=query.dtype,
                            initializer=v1.ones_initializer())  # fmt: skip
        score = g * score
    return score


def _keep_previous(probability_fn):
    """``probability_fn(score)`` as ``(score, previous) -> alignments``."""
    return lambda score, _: probability_fn(score)


class BahdanauAttention(_BaseAttentionMechanism):
    """Additive attention (Bahdanau et al., 2015); ``normalize``: weight
    normalization (Salimans and Kingma, 2016).

    Args:
        num_units: the depth of keys and of the projected query.
        memory, memory_sequence_length, score_mask_value, dtype, custom_key_value_fn,
            name: see :class:`_BaseAttentionMechanism`.
        normalize: the weight-normalized form.
        probability_fn: ``score -> alignments`` (default softmax).
    """

    _scope_name = "bahdanau_attention"

    def __init__(self, num_units, memory, memory_sequence_length=None, normalize=False,
                 probability_fn=None, score_mask_value=None, dtype=None,
                 custom_key_value_fn=None, name="BahdanauAttention"):  # fmt: skip
        self._projected(num_units, memory, memory_sequence_length, score_mask_value,
                        dtype, custom_key_value_fn, name, query=True,
                        probability_fn=_keep_previous(probability_fn or tf.nn.softmax))
        self._normalize = normalize

    def _score(self, query):
        return _bahdanau_score(self.query_layer(query), self._keys, self._normalize)


class LuongAttention(_BaseAttentionMechanism):
    """Multiplicative attention (Luong et al., 2015): ``query . key``; ``scale``:
    times a learned scalar.

    Args:
        num_units: the keys' depth (must equal the query's).
        memory, memory_sequence_length, score_mask_value, dtype, custom_key_value_fn,
            name: see :class:`_BaseAttentionMechanism`.
        scale: the scaled form.
        probability_fn: ``score -> alignments`` (default softmax).
    """

    _scope_name = "luong_attention"

    def __init__(self, num_units, memory, memory_sequence_length=None, scale=False,
                 probability_fn=None, score_mask_value=None, dtype=None,
                 custom_key_value_fn=None, name="LuongAttention"):  # fmt: skip
        self._projected(num_units, memory, memory_sequence_length, score_mask_value,
                        dtype, custom_key_value_fn, name, query=False,
                        probability_fn=_keep_previous(probability_fn or tf.nn.softmax))
        self._scale = scale

    def _score(self, query):
        return _luong_score(self._name, query, self._keys, self._scale)


def _monotonic_probability_fn(score, previous_alignments, sigmoid_noise, mode, seed=None):
    """Monotonic alignments from scores: ``sigmoid(score + noise)`` (``hard``: score > 0)
    as the probability of stopping at each entry."""
    if sigmoid_noise > 0:
        score += sigmoid_noise * tf.random.normal(tf.shape(score), dtype=score.dtype,
                                                  seed=seed)  # fmt: skip
    p_choose_i = tf.cast(score > 0, score.dtype) if mode == "hard" else tf.sigmoid(score)
    return monotonic_attention(p_choose_i, previous_alignments, mode)


class _BaseMonotonicAttentionMechanism(_BaseAttentionMechanism):
    """A monotonic mechanism: alignments start one-hot at the first memory entry,
    and the score has a learned scalar bias ``attention_score_bias``."""

    def _monotonic(self, sigmoid_noise, sigmoid_noise_seed, score_bias_init, mode):
        require(self._name, choice_problem(mode, ("recursive", "parallel", "hard"), "mode"),
                'pass mode="parallel"')  # fmt: skip
        self._score_bias_init = score_bias_init
        return functools.partial(_monotonic_probability_fn, sigmoid_noise=sigmoid_noise,
                                 mode=mode, seed=sigmoid_noise_seed)  # fmt: skip

    def _biased(self, score):
        initializer = v1.constant_initializer(self._score_bias_init)
        bias = v1.get_variable("attention_score_bias", (), score.dtype, initializer)
        return score + bias

    def initial_alignments(self, batch_size, dtype):
        """One-hot at the first memory entry, [batch_size, memory time]."""
        return tf.one_hot(tf.zeros([batch_size], tf.int32), self._alignments_size,
                          dtype=dtype)  # fmt: skip


class BahdanauMonotonicAttention(_BaseMonotonicAttentionMechanism):
    """Monotonic attention on the Bahdanau score (Raffel et al., 2017).

    Args: as :class:`BahdanauAttention`, and ``sigmoid_noise`` (the std of the
    noise added to the scores), ``sigmoid_noise_seed``, ``score_bias_init``, ``mode``
    (see :func:`monotonic_attention`).
    """

    _scope_name = "bahdanau_monotonic_attention"

    def __init__(self, num_units, memory, memory_sequence_length=None, normalize=False,
                 score_mask_value=None, sigmoid_noise=0.0, sigmoid_noise_seed=None,
                 score_bias_init=0.0, mode="parallel", dtype=None,
                 name="BahdanauMonotonicAttention"):  # fmt: skip
        self._name = name
        stops = self._monotonic(sigmoid_noise, sigmoid_noise_seed, score_bias_init, mode)
        self._projected(num_units, memory, memory_sequence_length, score_mask_value,
                        dtype, None, name, query=True, probability_fn=stops)
        self._normalize = normalize

    def _score(self, query):
        return self._biased(
            _bahdanau_score(self.query_layer(query), self._keys, self._normalize)
        )


class LuongMonotonicAttention(_BaseMonotonicAttentionMechanism):
    """Monotonic attention on the Luong score (Raffel et al., 2017).

    Args: as :class:`LuongAttention`, and ``sigmoid_noise``, ``sigmoid_noise_seed``,
    ``score_bias_init``, ``mode`` as :class:`BahdanauMonotonicAttention`.
    """

    _scope_name = "luong_monotonic_attention"

    def __init__(self, num_units, memory, memory_sequence_length=None, scale=False,
                 score_mask_value=None, sigmoid_noise=0.0, sigmoid_noise_seed=None,
                 score_bias_init=0.0, mode="parallel", dtype=None,
                 name="LuongMonotonicAttention"):  # fmt: skip
        self._name = name
        stops = self._monotonic(sigmoid_noise, sigmoid_noise_seed, score_bias_init, mode)
        self._projected(num_units, memory, memory_sequence_length, score_mask_value,
                        dtype, None, name, query=False, probability_fn=stops)
        self._scale = scale

    def _score(self, query):
        return self._biased(_luong_score(self._name, query, self._keys, self._scale))


_STATE_FIELDS = ("cell_state", "attention", "time", "alignments", "alignment_history",
                 "attention_state")  # fmt: skip


class AttentionWrapperState(collections.namedtuple("AttentionWrapperState", _STATE_FIELDS)):
    """The state of an :class:`AttentionWrapper`.

    Fields: ``cell_state`` (the wrapped cell's), ``attention`` (the last output
    attention), ``time``, ``alignments`` (one per mechanism), ``alignment_history``
    (TensorArrays, or ``()`` without history), ``attention_state`` (the mechanisms').
    """

    def clone(self, **kwargs):
        """This state with the given fields replaced, each tensor keeping the old
        one's static shape (``state.clone(cell_state=encoder_state)``).

        Raises:
            ZooError: a replacement has another structure or an incompatible shape.
        """
        replaced = self._replace(**kwargs)

        def same_shape(old, new):
            if isinstance(old, tf.Tensor) and isinstance(new, tf.Tensor):
                if not old.shape.is_compatible_with(new.shape):
                    raise ZooError(
                        f"AttentionWrapperState.clone: expected a tensor of shape "
                        f"{old.shape}, found {new.shape}; pass a state of the cell's sizes"
                    )
                new = tf.identity(new)
                new.set_shape(old.shape)
            return new

        for field, value in kwargs.items():
            try:
                tf.nest.assert_same_structure(getattr(self, field), value,
                                              check_types=False)  # fmt: skip
            except (ValueError, TypeError):
                raise ZooError(
                    f"AttentionWrapperState.clone: expected {field} structured as "
                    f"{structure(getattr(self, field))}, found {structure(value)}; pass a "
                    "value of the wrapped cell's state structure"
                ) from None
        return tf.nest.map_structure(same_shape, self, replaced)


def _compute_attention(mechanism, cell_output, attention_state, attention_layer):
    """One mechanism's ``(attention, alignments, next_attention_state)``: the
    context (alignments . values), through ``attention_layer`` with the cell output."""
    alignments, next_attention_state = mechanism(cell_output, state=attention_state)
    context = tf.squeeze(tf.matmul(tf.expand_dims(alignments, 1), mechanism.values), [1])
    if attention_layer is not None:
        context = attention_layer(tf.concat([cell_output, context], 1))
    return context, alignments, next_attention_state


class AttentionWrapper(RNNCell):
    """A cell that attends over one or more memories after each step of ``cell``.

    Args:
        cell: the wrapped RNN cell.
        attention_mechanism: a mechanism or a list of them.
        attention_layer_size: None, or an int (a list: one per mechanism): the
            attention is ``attention_layer([cell output, context])`` of that size;
            None: the context itself.
        alignment_history: keep every step's alignments in a TensorArray.
        cell_input_fn: ``(inputs, attention) -> cell inputs`` (default: concatenated).
        output_attention: output the attention (Luong) rather than the cell's
            output (Bahdanau).
        initial_cell_state: the wrapped cell's state for :meth:`zero_state`.
        name: the scope's name (default ``attention_wrapper``).
        attention_layer: a layer or list of layers in place of ``attention_layer_size``.
        attention_fn: ``(mechanism, cell_output, attention_state, attention_layer)
            -> (attention, alignments, next_attention_state)``.

    Raises:
        ZooError: both ``attention_layer_size`` and ``attention_layer``, a count of
            them other than the mechanisms', or an ``initial_cell_state`` not of
            the cell's state structure.
    """

    def __init__(self, cell, attention_mechanism, attention_layer_size=None,
                 alignment_history=False, cell_input_fn=None, output_attention=True,
                 initial_cell_state=None, name=None, attention_layer=None,
                 attention_fn=None):  # fmt: skip
        super().__init__(name=name)
        owner = self._base_name
        self._is_multi = isinstance(attention_mechanism, (list, tuple))
        mechanisms = tuple(_as_list(attention_mechanism))
        for mechanism in mechanisms:
            require(owner, None if isinstance(mechanism, AttentionMechanism) else
                    f"expected an AttentionMechanism, found {type(mechanism).__name__}",
                    "pass e.g. BahdanauAttention(num_units, memory)")  # fmt: skip
        require(owner, "expected attention_layer_size or attention_layer, found both"
                if attention_layer_size is not None and attention_layer is not None
                else None, "pass only one")  # fmt: skip
        if attention_layer_size is not None:
            sizes = _as_list(attention_layer_size)
            layers = [Dense(size, name="attention_layer", use_bias=False, dtype=m.dtype)
                      for size, m in zip(sizes, mechanisms, strict=False)]  # fmt: skip
        else:
            layers = None if attention_layer is None else _as_list(attention_layer)
        count = len(sizes if attention_layer_size is not None else layers or mechanisms)
        require(owner, None if count == len(mechanisms) else
                f"expected one attention layer per mechanism ({len(mechanisms)}), "
                f"found {count}", "pass one size or layer per mechanism")  # fmt: skip
        if attention_layer_size is not None:
            self._attention_layer_size = sum(sizes)
        elif layers is not None:
            cell_width = tf.TensorShape(cell.output_size)[-1]
            self._attention_layer_size = sum(
                _layer_width(layer, m.values.shape[-1] + cell_width)
                for layer, m in zip(layers, mechanisms, strict=True)
            )  # fmt: skip
        else:
            self._attention_layer_size = sum(int(m.values.shape[-1]) for m in mechanisms)
        self._cell, self._mechanisms, self._attention_layers = cell, mechanisms, layers
        self._cell_input_fn = cell_input_fn or (lambda x, a: tf.concat([x, a], -1))
        self._output_attention = output_attention
        self._alignment_history = alignment_history
        self._attention_fn = attention_fn or _compute_attention
        if initial_cell_state is not None:
            check_state(cell, initial_cell_state, f"an {owner} initial_cell_state")
        self._initial_cell_state = initial_cell_state

    def _item_or_tuple(self, items):
        items = tuple(items)
        return items if self._is_multi else items[0]

    @property
    def output_size(self):
        if self._output_attention:
            return self._attention_layer_size
        return self._cell.output_size

    @property
    def state_size(self):
        return AttentionWrapperState(
            cell_state=self._cell.state_size,
            time=tf.TensorShape([]),
            attention=self._attention_layer_size,
            alignments=self._item_or_tuple(m.alignments_size for m in self._mechanisms),
            attention_state=self._item_or_tuple(m.state_size for m in self._mechanisms),
            alignment_history=self._item_or_tuple(
                m.alignments_size if self._alignment_history else ()
                for m in self._mechanisms
            ),
        )  # fmt: skip

    def _checked(self, batch_size, tensors, what):
        """``tensors`` once ``batch_size`` equals each memory's (checked now when
        both are static, else when run).

        Raises:
            ZooError: the static batch sizes differ.
        """
        fix = ("with a BeamSearchDecoder, tile the memory with tile_batch(memory, "
               "beam_width) and use batch_size * beam_width")  # fmt: skip
        found, checks = tf.get_static_value(batch_size), []
        for mechanism in self._mechanisms:
            memory_batch = tf.get_static_value(mechanism.batch_size)
            problem = (f"expected {what} of the memory's batch size {memory_batch}, "
                       f"found {found}")  # fmt: skip
            if memory_batch is None or found is None:
                message = f"{self.name}: expected {what} of the memory's batch size; {fix}"
                checks.append(
                    tf.debugging.assert_equal(batch_size, mechanism.batch_size, message)
                )
            else:
                require(self.name, None if memory_batch == found else problem, fix)
        with tf.control_dependencies(checks):
            return tf.nest.map_structure(tf.identity, tensors)

    def zero_state(self, batch_size, dtype):
        """The first state: the wrapped cell's (``initial_cell_state`` if given),
        zero attention, the mechanisms' first alignments, empty histories.

        Raises:
            ZooError: ``batch_size`` is not the memory's.
        """
        with tf.name_scope(f"{type(self).__name__}ZeroState"):
            cell_state = self._initial_cell_state
            if cell_state is None:
                cell_state = self._cell.zero_state(batch_size, dtype)
            cell_state = self._checked(batch_size, cell_state, "a zero_state batch_size")
            alignments = [m.initial_alignments(batch_size, dtype) for m in self._mechanisms]
            return AttentionWrapperState(
                cell_state=cell_state,
                time=tf.zeros([], tf.int32),
                attention=zeros(batch_size, self._attention_layer_size, dtype),
                alignments=self._item_or_tuple(alignments),
                attention_state=self._item_or_tuple(
                    m.initial_state(batch_size, dtype) for m in self._mechanisms
                ),
                alignment_history=self._item_or_tuple(
                    tf.TensorArray(dtype, size=0, dynamic_size=True,
                                   element_shape=alignment.shape)
                    if self._alignment_history else ()
                    for alignment in alignments
                ),
            )  # fmt: skip

    def call(self, inputs, state):
        """One step: the cell on ``[inputs, last attention]``, then attention with
        the cell's output as the query.

        Returns:
            ``(attention or cell output, next AttentionWrapperState)``.

        Raises:
            ZooError: ``state`` is not an AttentionWrapperState of this cell's structure.
        """
        if not isinstance(state, AttentionWrapperState):
            raise ZooError(
                f"{self.scope_name}: expected an AttentionWrapperState, found "
                f"{type(state).__name__} {structure(state)}; pass "
                "cell.zero_state(batch_size, dtype).clone(cell_state=...)"
            )
        cell_output, next_cell_state = self._cell(
            self._cell_input_fn(inputs, state.attention), state.cell_state
        )
        batch = dimension(cell_output, 0)
        cell_output = self._checked(batch, cell_output, "a query (cell output)")
        previous = [state.attention_state, state.alignment_history]
        if not self._is_multi:
            previous = [[part] for part in previous]
        attentions, alignments, attention_states, histories = [], [], [], []
        for i, mechanism in enumerate(self._mechanisms):
            layer = self._attention_layers[i] if self._attention_layers else None
            attention, alignment, attention_state = self._attention_fn(
                mechanism, cell_output, previous[0][i], layer
            )
            history = previous[1][i]
            histories.append(history.write(state.time, alignment)
                             if self._alignment_history else ())  # fmt: skip
            attentions.append(attention)
            alignments.append(alignment)
            attention_states.append(attention_state)
        attention = tf.concat(attentions, 1)
        next_state = AttentionWrapperState(
            time=state.time + 1,
            cell_state=next_cell_state,
            attention=attention,
            attention_state=self._item_or_tuple(attention_states),
            alignments=self._item_or_tuple(alignments),
            alignment_history=self._item_or_tuple(histories),
        )
        return (attention if self._output_attention else cell_output), next_state


def _as_list(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _layer_width(layer, input_width):
    """The output width of ``layer`` on inputs ``input_width`` wide."""
    if hasattr(layer, "compute_output_shape"):
        return int(tf.TensorShape(layer.compute_output_shape([None, input_width]))[-1])
    return int(layer.units)
