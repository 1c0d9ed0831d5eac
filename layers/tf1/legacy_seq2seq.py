"""TF 1.15's ``tf.contrib.legacy_seq2seq``: sequence-to-sequence models on lists of
tensors (one [batch, ...] tensor per step), unrolled statically.

Variables keep TF 1.15's names: ``rnn_decoder/<cell>/...``,
``attention_decoder/AttnW_0``, ``attention_decoder/AttnV_0``,
``attention_decoder/kernel``, ``attention_decoder/Attention_0/kernel``,
``attention_decoder/AttnOutputProjection/kernel``, ``embedding_rnn_decoder/embedding``,
``embedding_rnn_seq2seq/rnn/embedding_wrapper/embedding`` ... ``zoo.compat.install()``
makes this ``tf.contrib.legacy_seq2seq``.

Usage::

    from layers.tf1 import legacy_seq2seq
    outputs, state = legacy_seq2seq.attention_decoder(decoder_inputs, encoder_state,
                                                      attention_states, cell)
    loss = legacy_seq2seq.sequence_loss(logits, targets, weights)
"""

import copy
import math

import tensorflow as tf

from layers.checks import require
from layers.errors import ShapeError, ZooError
from layers.tf1.rnn_cell import RNNCell
from layers.tf1.seq2seq.basic_decoder import check_cell, check_state
from layers.tf1.seq2seq.decoder import dimension

v1 = tf.compat.v1

__all__ = [
    "attention_decoder", "basic_rnn_seq2seq", "embedding_attention_decoder",
    "embedding_attention_seq2seq", "embedding_rnn_decoder", "embedding_rnn_seq2seq",
    "embedding_tied_rnn_seq2seq", "model_with_buckets", "one2many_rnn_seq2seq",
    "rnn_decoder", "sequence_loss", "sequence_loss_by_example", "tied_rnn_seq2seq",
    "EmbeddingWrapper", "OutputProjectionWrapper",
]  # fmt: skip


def _linear(args, output_size):
    """``concat(args) @ kernel + bias`` with ``kernel`` and ``bias`` (zeros) made in
    the current variable scope (TF 1.15's ``core_rnn_cell._Linear``)."""
    args = tf.nest.flatten(args)
    width = sum(int(arg.shape[-1]) for arg in args)
    dtype = args[0].dtype
    kernel = v1.get_variable("kernel", [width, output_size], dtype=dtype)
    bias = v1.get_variable("bias", [output_size], dtype=dtype,
                           initializer=v1.constant_initializer(0.0))  # fmt: skip
    joined = args[0] if len(args) == 1 else tf.concat(args, 1)
    return tf.nn.bias_add(tf.matmul(joined, kernel), bias)


class EmbeddingWrapper(RNNCell):
    """TF 1.15's ``contrib.rnn.EmbeddingWrapper``: ids [batch] (or [batch, 1]) looked
    up in ``embedding`` [embedding_classes, embedding_size] before ``cell``.

    Args:
        cell: the wrapped cell.
        embedding_classes: the number of ids.
        embedding_size: the embedding depth.
        initializer: None: the scope's, else uniform in +-sqrt(3).
        reuse, name: as a layer's.
    """

    def __init__(self, cell, embedding_classes, embedding_size, initializer=None,
                 reuse=None, name=None):  # fmt: skip
        super().__init__(name=name, _reuse=reuse)
        check_cell(self._base_name, cell)
        self._cell, self._initializer = cell, initializer
        self._embedding_classes, self._embedding_size = embedding_classes, embedding_size

    @property
    def state_size(self):
        return self._cell.state_size

    @property
    def output_size(self):
        return self._cell.output_size

    def zero_state(self, batch_size, dtype):
        return self._cell.zero_state(batch_size, dtype)

    def call(self, inputs, state):
        initializer = (self._initializer or v1.get_variable_scope().initializer
                       or v1.random_uniform_initializer(-math.sqrt(3), math.sqrt(3)))
        dtype = tf.nest.flatten(state)[0].dtype  # fmt: skip
        embedding = v1.get_variable(
            "embedding", [self._embedding_classes, self._embedding_size], dtype=dtype,
            initializer=initializer,
        )  # fmt: skip
        embedded = tf.nn.embedding_lookup(embedding, tf.reshape(inputs, [-1]))
        return self._cell(embedded, state)


class OutputProjectionWrapper(RNNCell):
    """TF 1.15's ``contrib.rnn.OutputProjectionWrapper``: the cell's output through
    ``kernel`` [cell output, output_size] and ``bias``, then ``activation``.

    Args:
        cell: the wrapped cell.
        output_size: the projected width.
        activation: None, or a function applied after the projection.
        reuse, name: as a layer's.
    """

    def __init__(self, cell, output_size, activation=None, reuse=None, name=None):
        super().__init__(name=name, _reuse=reuse)
        check_cell(self._base_name, cell)
        self._cell, self._output_size, self._activation = cell, output_size, activation

    @property
    def state_size(self):
        return self._cell.state_size

    @property
    def output_size(self):
        return self._output_size

    def zero_state(self, batch_size, dtype):
        return self._cell.zero_state(batch_size, dtype)

    def call(self, inputs, state):
        output, state = self._cell(inputs, state)
        projected = _linear(output, self._output_size)
        if self._activation is not None:
            projected = self._activation(projected)
        return projected, state


def _encoder_copy(owner, cell):
    """A copy of ``cell`` for the encoder, its variables its own.

    Raises:
        ZooError: the cell was called already (its variables cannot be copied).
    """
    try:
        return copy.deepcopy(cell)
    except (NotImplementedError, TypeError):
        raise ZooError(
            f"{owner}: expected a cell not called yet (it is copied for the encoder), "
            f"found {type(cell).__name__} with variables; make a new cell inside the "
            "function given to model_with_buckets, one per call (TF 1.x failed here too)"
        ) from None


def rnn_decoder(decoder_inputs, initial_state, cell, loop_function=None, scope=None):
    """Runs ``cell`` on each input; with ``loop_function``, each input after the
    first is ``loop_function(previous output, step)`` instead.

    Args:
        decoder_inputs: a list of [batch, depth] tensors.
        initial_state: the cell's first state.
        cell: an RNN cell.
        loop_function: None, or ``(prev, i) -> next input``.
        scope: the variable scope (default ``rnn_decoder``).

    Returns:
        ``(outputs, state)``: the list of [batch, output size] outputs, the last state.

    Raises:
        ZooError: ``cell`` is not a cell, or ``initial_state`` not of its structure.
    """
    check_cell("rnn_decoder", cell)
    check_state(cell, initial_state, "an rnn_decoder initial_state")
    with v1.variable_scope(scope or "rnn_decoder"):
        state, outputs, previous = initial_state, [], None
        for i, inp in enumerate(decoder_inputs):
            if loop_function is not None and previous is not None:
                with v1.variable_scope("loop_function", reuse=True):
                    inp = loop_function(previous, i)
            if i > 0:
                v1.get_variable_scope().reuse_variables()
            output, state = cell(inp, state)
            outputs.append(output)
            if loop_function is not None:
                previous = output
    return outputs, state


def basic_rnn_seq2seq(encoder_inputs, decoder_inputs, cell, dtype=tf.float32, scope=None):
    """An encoder ``static_rnn`` (on a copy of ``cell``) whose last state starts
    :func:`rnn_decoder`, under ``basic_rnn_seq2seq``.

    Returns:
        ``(outputs, state)`` of the decoder.
    """
    with v1.variable_scope(scope or "basic_rnn_seq2seq"):
        encoder_cell = _encoder_copy("basic_rnn_seq2seq", cell)
        _, encoder_state = v1.nn.static_rnn(encoder_cell, encoder_inputs, dtype=dtype)
        return rnn_decoder(decoder_inputs, encoder_state, cell)


def tied_rnn_seq2seq(encoder_inputs, decoder_inputs, cell, loop_function=None,
                     dtype=tf.float32, scope=None):  # fmt: skip
    """As :func:`basic_rnn_seq2seq`, the encoder and decoder sharing ``cell``'s
    variables, under ``combined_tied_rnn_seq2seq/<scope or tied_rnn_seq2seq>``."""
    with v1.variable_scope("combined_tied_rnn_seq2seq"):
        scope = scope or "tied_rnn_seq2seq"
        _, encoder_state = v1.nn.static_rnn(cell, encoder_inputs, dtype=dtype, scope=scope)
        v1.get_variable_scope().reuse_variables()
        return rnn_decoder(decoder_inputs, encoder_state, cell, loop_function=loop_function,
                           scope=scope)  # fmt: skip


def _extract_argmax_and_embed(embedding, output_projection=None, update_embedding=True):
    """A loop function feeding back the embedding of the previous output's argmax
    (through ``output_projection`` (W, b) first when given)."""

    def loop_function(previous, _):
        if output_projection is not None:
            previous = tf.compat.v1.nn.xw_plus_b(previous, *output_projection)
        embedded = tf.nn.embedding_lookup(embedding, tf.argmax(previous, 1))
        return embedded if update_embedding else tf.stop_gradient(embedded)

    return loop_function


def _check_projection(owner, output_projection, num_symbols, dtype):
    """Raises unless ``output_projection`` is None or (W [depth, num_symbols],
    b [num_symbols])."""
    if output_projection is None:
        return
    weights = tf.convert_to_tensor(output_projection[0], dtype)
    biases = tf.convert_to_tensor(output_projection[1], dtype)
    if not (weights.shape[-1:].is_compatible_with([num_symbols])
            and biases.shape.is_compatible_with([num_symbols])):  # fmt: skip
        raise ShapeError(
            f"{owner}: expected output_projection (W [depth, {num_symbols}], "
            f"b [{num_symbols}]), found {weights.shape} and {biases.shape}; project to "
            "num_symbols"
        )


def _embedded_inputs(owner, decoder_inputs, num_symbols, embedding_size,
                     output_projection, feed_previous, update_embedding,
                     dtype):  # fmt: skip
    """The decoder inputs looked up in a new ``embedding`` [num_symbols,
    embedding_size] of the current scope, and the loop function (None unless
    ``feed_previous``) feeding back the previous output's argmax.

    Raises:
        ShapeError: a bad ``output_projection``.
    """
    _check_projection(owner, output_projection, num_symbols, dtype)
    embedding = v1.get_variable("embedding", [num_symbols, embedding_size])
    loop_function = _extract_argmax_and_embed(
        embedding, output_projection, update_embedding
    ) if feed_previous else None  # fmt: skip
    return [tf.nn.embedding_lookup(embedding, i) for i in decoder_inputs], loop_function


def _decoded_by_flag(feed_previous, decoder, state_structure):
    """``decoder(feed_previous)``; when ``feed_previous`` is a bool tensor, both
    decoders (sharing variables) under a ``tf.cond``, the state packed as
    ``state_structure``."""
    if isinstance(feed_previous, bool):
        return decoder(feed_previous)

    def decoded(feed):
        with v1.variable_scope(v1.get_variable_scope(), reuse=None if feed else True):
            outputs, state = decoder(feed)
        return outputs + tf.nest.flatten(state)

    both = tf.cond(feed_previous, lambda: decoded(True), lambda: decoded(False))
    count = len(both) - len(tf.nest.flatten(state_structure))
    return both[:count], tf.nest.pack_sequence_as(state_structure, both[count:])


def embedding_rnn_decoder(decoder_inputs, initial_state, cell, num_symbols, embedding_size,
                          output_projection=None, feed_previous=False,
                          update_embedding_for_previous=True, scope=None):  # fmt: skip
    """:func:`rnn_decoder` on ids looked up in ``embedding`` [num_symbols,
    embedding_size] (under ``embedding_rnn_decoder``).

    Args:
        decoder_inputs: a list of [batch] int ids.
        initial_state, cell: as :func:`rnn_decoder`.
        num_symbols, embedding_size: the embedding's shape.
        output_projection: None, or (W, b) turning outputs into logits.
        feed_previous: True: feed the embedding of the previous output's argmax.
        update_embedding_for_previous: False: no gradient through fed embeddings.
        scope: the variable scope.

    Returns:
        ``(outputs, state)``.
    """
    with v1.variable_scope(scope or "embedding_rnn_decoder") as varscope:
        embedded, loop_function = _embedded_inputs(
            "embedding_rnn_decoder", decoder_inputs, num_symbols, embedding_size,
            output_projection, feed_previous, update_embedding_for_previous, varscope.dtype,
        )  # fmt: skip
        return rnn_decoder(embedded, initial_state, cell, loop_function=loop_function)


def embedding_rnn_seq2seq(encoder_inputs, decoder_inputs, cell, num_encoder_symbols,
                          num_decoder_symbols, embedding_size, output_projection=None,
                          feed_previous=False, dtype=None, scope=None):  # fmt: skip
    """An embedding encoder (``static_rnn`` of an :class:`EmbeddingWrapper` around a
    copy of ``cell``) and :func:`embedding_rnn_decoder` (with an
    :class:`OutputProjectionWrapper` to ``num_decoder_symbols`` unless
    ``output_projection``), under ``embedding_rnn_seq2seq``.

    ``feed_previous`` may be a bool tensor: both decoders are built.

    Returns:
        ``(outputs, state)`` of the decoder.
    """
    with v1.variable_scope(scope or "embedding_rnn_seq2seq") as varscope:
        if dtype is not None:
            varscope.set_dtype(dtype)
        dtype = varscope.dtype
        encoder_cell = EmbeddingWrapper(_encoder_copy("embedding_rnn_seq2seq", cell),
                                        num_encoder_symbols, embedding_size)  # fmt: skip
        _, encoder_state = v1.nn.static_rnn(encoder_cell, encoder_inputs, dtype=dtype)
        if output_projection is None:
            cell = OutputProjectionWrapper(cell, num_decoder_symbols)

        def decoder(feed):
            return embedding_rnn_decoder(
                decoder_inputs, encoder_state, cell, num_decoder_symbols, embedding_size,
                output_projection=output_projection, feed_previous=feed,
                update_embedding_for_previous=isinstance(feed_previous, bool),
            )  # fmt: skip

        return _decoded_by_flag(feed_previous, decoder, encoder_state)


def embedding_tied_rnn_seq2seq(encoder_inputs, decoder_inputs, cell, num_symbols,
                               embedding_size, num_decoder_symbols=None,
                               output_projection=None, feed_previous=False, dtype=None,
                               scope=None):  # fmt: skip
    """:func:`tied_rnn_seq2seq` on ids, the encoder and decoder sharing one
    ``embedding`` [num_symbols, embedding_size] and the cell (with an
    :class:`OutputProjectionWrapper` to ``num_decoder_symbols`` or ``num_symbols``
    unless ``output_projection``), under ``embedding_tied_rnn_seq2seq``.

    Returns:
        ``(outputs, state)`` of the decoder.
    """
    with v1.variable_scope(scope or "embedding_tied_rnn_seq2seq", dtype=dtype) as varscope:
        dtype = varscope.dtype
        _check_projection("embedding_tied_rnn_seq2seq", output_projection, num_symbols,
                          dtype)  # fmt: skip
        embedding = v1.get_variable("embedding", [num_symbols, embedding_size], dtype=dtype)
        encoder = [tf.nn.embedding_lookup(embedding, x) for x in encoder_inputs]
        decoder = [tf.nn.embedding_lookup(embedding, x) for x in decoder_inputs]
        if output_projection is None:
            cell = OutputProjectionWrapper(cell, num_decoder_symbols or num_symbols)

        def decoded(feed):
            loop_function = _extract_argmax_and_embed(
                embedding, output_projection, isinstance(feed_previous, bool)
            ) if feed else None  # fmt: skip
            return tied_rnn_seq2seq(encoder, decoder, cell, loop_function=loop_function,
                                    dtype=dtype)  # fmt: skip

        return _decoded_by_flag(feed_previous, decoded, cell.state_size)


def one2many_rnn_seq2seq(encoder_inputs, decoder_inputs_dict, enc_cell, dec_cells_dict,
                         num_encoder_symbols, num_decoder_symbols_dict, embedding_size,
                         feed_previous=False, dtype=None, scope=None):  # fmt: skip
    """One embedding encoder, one :func:`embedding_rnn_decoder` per name (each with
    its cell in an :class:`OutputProjectionWrapper`), under
    ``one2many_rnn_seq2seq/one2many_decoder_<name>``.

    Returns:
        ``(outputs_dict, state_dict)`` by decoder name.

    Raises:
        ZooError: the decoders' names differ from the inputs', or a cell is no cell.
    """
    require("one2many_rnn_seq2seq", None if set(dec_cells_dict) == set(decoder_inputs_dict)
            else f"expected dec_cells_dict's names {sorted(decoder_inputs_dict)}, found "
            f"{sorted(dec_cells_dict)}", "give one cell per decoder input")  # fmt: skip
    for cell in (enc_cell, *dec_cells_dict.values()):
        check_cell("one2many_rnn_seq2seq", cell)
    outputs_dict, state_dict = {}, {}
    with v1.variable_scope(scope or "one2many_rnn_seq2seq", dtype=dtype) as varscope:
        encoder_cell = EmbeddingWrapper(enc_cell, num_encoder_symbols, embedding_size)
        _, encoder_state = v1.nn.static_rnn(encoder_cell, encoder_inputs,
                                            dtype=varscope.dtype)  # fmt: skip
        for name, decoder_inputs in decoder_inputs_dict.items():
            symbols = num_decoder_symbols_dict[name]
            with v1.variable_scope(f"one2many_decoder_{name}"):
                cell = OutputProjectionWrapper(dec_cells_dict[name], symbols)

                def decoder(feed, inputs=decoder_inputs, cell=cell, symbols=symbols):
                    return embedding_rnn_decoder(inputs, encoder_state, cell, symbols,
                                                 embedding_size, feed_previous=feed)

                outputs_dict[name], state_dict[name] = _decoded_by_flag(
                    feed_previous, decoder, encoder_state
                )
    return outputs_dict, state_dict


def attention_decoder(decoder_inputs, initial_state, attention_states, cell,
                      output_size=None, num_heads=1, loop_function=None, dtype=None,
                      scope=None, initial_state_attention=False):  # fmt: skip
    """An RNN decoder with Bahdanau-style attention over ``attention_states``.

    Each step: ``x = linear([input, attentions])``, the cell on ``x``, then for each
    head ``a``: ``s = sum(AttnV_a * tanh(hidden @ AttnW_a + linear(state)))`` over the
    memory, ``softmax(s)`` weights the memory into that head's attention, and the
    output is ``linear([cell output, attentions])`` (``AttnOutputProjection``).

    Args:
        decoder_inputs: a list of [batch, depth] tensors.
        initial_state: the cell's first state.
        attention_states: [batch, memory time, memory depth] (depth known).
        cell: an RNN cell.
        output_size: the output width (default the cell's).
        num_heads: the number of attention heads.
        loop_function: as :func:`rnn_decoder`.
        dtype: the variables' dtype (default float32).
        scope: the variable scope (default ``attention_decoder``).
        initial_state_attention: True: the first attentions read ``initial_state``;
            False: zeros.

    Returns:
        ``(outputs, state)``: a list of [batch, output_size], the last state.

    Raises:
        ZooError: no inputs, ``num_heads`` < 1, or a bad cell or state.
        ShapeError: the memory depth or an input's depth is unknown.
    """
    require("attention_decoder", None if decoder_inputs else
            "expected at least one decoder input, found none", "pass a list of inputs")
    require("attention_decoder", None if num_heads >= 1 else
            f"expected num_heads >= 1, found {num_heads}",
            "use rnn_decoder for no attention")  # fmt: skip
    check_cell("attention_decoder", cell)
    check_state(cell, initial_state, "an attention_decoder initial_state")
    decoder_inputs = [tf.convert_to_tensor(inp) for inp in decoder_inputs]
    attention_states = tf.convert_to_tensor(attention_states, name="attention_states")
    if tf.compat.dimension_value(attention_states.shape[2]) is None:
        raise ShapeError(
            f"attention_decoder: expected attention_states [batch, time, depth] with a "
            f"known depth, found {attention_states.shape}; give it a static last dimension"
        )
    output_size = output_size or cell.output_size
    with v1.variable_scope(scope or "attention_decoder", dtype=dtype) as varscope:
        dtype = varscope.dtype
        batch_size = tf.shape(decoder_inputs[0])[0]
        length = dimension(attention_states, 1)
        depth = int(attention_states.shape[2])
        hidden = tf.reshape(attention_states, [-1, length, 1, depth])
        features, vectors = [], []
        for head in range(num_heads):
            kernel = v1.get_variable(f"AttnW_{head}", [1, 1, depth, depth], dtype=dtype)
            features.append(tf.nn.conv2d(hidden, kernel, [1, 1, 1, 1], "SAME"))
            vectors.append(v1.get_variable(f"AttnV_{head}", [depth], dtype=dtype))

        def attention(query):
            query = tf.concat(tf.nest.flatten(query), 1)
            reads = []
            for head in range(num_heads):
                with v1.variable_scope(f"Attention_{head}"):
                    y = tf.reshape(_linear(query, depth), [-1, 1, 1, depth])
                    s = tf.reduce_sum(vectors[head] * tf.tanh(features[head] + y), [2, 3])
                    a = tf.cast(tf.nn.softmax(tf.cast(s, tf.float32)), dtype)
                    read = tf.reduce_sum(tf.reshape(a, [-1, length, 1, 1]) * hidden, [1, 2])
                    reads.append(tf.reshape(read, [-1, depth]))
            return reads

        zeros = tf.stack([batch_size, depth])
        attentions = [tf.zeros(zeros, dtype) for _ in range(num_heads)]
        for read in attentions:
            read.set_shape([None, depth])
        if initial_state_attention:
            attentions = attention(initial_state)
        state, outputs, previous = initial_state, [], None
        for i, inp in enumerate(decoder_inputs):
            if i > 0:
                v1.get_variable_scope().reuse_variables()
            if loop_function is not None and previous is not None:
                with v1.variable_scope("loop_function", reuse=True):
                    inp = loop_function(previous, i)
            if tf.compat.dimension_value(inp.shape.with_rank(2)[1]) is None:
                raise ShapeError(
                    f"attention_decoder: expected inputs [batch, depth] with a known "
                    f"depth, found {inp.shape} for {inp.name}; give it a static depth"
                )
            x = _linear([tf.cast(t, dtype) for t in [inp, *attentions]], int(inp.shape[1]))
            cell_output, state = cell(x, state)
            if i == 0 and initial_state_attention:
                with v1.variable_scope(v1.get_variable_scope(), reuse=True):
                    attentions = attention(state)
            else:
                attentions = attention(state)
            with v1.variable_scope("AttnOutputProjection"):
                output = _linear([tf.cast(cell_output, dtype), *attentions], output_size)
            if loop_function is not None:
                previous = output
            outputs.append(output)
    return outputs, state


def embedding_attention_decoder(decoder_inputs, initial_state, attention_states, cell,
                                num_symbols, embedding_size, num_heads=1, output_size=None,
                                output_projection=None, feed_previous=False,
                                update_embedding_for_previous=True, dtype=None, scope=None,
                                initial_state_attention=False):  # fmt: skip
    """:func:`attention_decoder` on ids looked up in ``embedding`` (under
    ``embedding_attention_decoder``); arguments as :func:`embedding_rnn_decoder`
    and :func:`attention_decoder`.

    Returns:
        ``(outputs, state)``.
    """
    output_size = output_size or cell.output_size
    with v1.variable_scope(scope or "embedding_attention_decoder", dtype=dtype) as varscope:
        embedded, loop_function = _embedded_inputs(
            "embedding_attention_decoder", decoder_inputs, num_symbols, embedding_size,
            output_projection, feed_previous, update_embedding_for_previous, varscope.dtype,
        )  # fmt: skip
        return attention_decoder(
            embedded, initial_state, attention_states, cell, output_size=output_size,
            num_heads=num_heads, loop_function=loop_function,
            initial_state_attention=initial_state_attention,
        )  # fmt: skip


def embedding_attention_seq2seq(encoder_inputs, decoder_inputs, cell, num_encoder_symbols,
                                num_decoder_symbols, embedding_size, num_heads=1,
                                output_projection=None, feed_previous=False, dtype=None,
                                scope=None, initial_state_attention=False):  # fmt: skip
    """An embedding encoder whose outputs are the memory of
    :func:`embedding_attention_decoder` (under ``embedding_attention_seq2seq``);
    arguments as :func:`embedding_rnn_seq2seq`.

    Returns:
        ``(outputs, state)`` of the decoder.
    """
    with v1.variable_scope(scope or "embedding_attention_seq2seq", dtype=dtype) as varscope:
        dtype = varscope.dtype
        encoder_cell = EmbeddingWrapper(_encoder_copy("embedding_attention_seq2seq", cell),
                                        num_encoder_symbols, embedding_size)  # fmt: skip
        encoder_outputs, encoder_state = v1.nn.static_rnn(encoder_cell, encoder_inputs,
                                                          dtype=dtype)  # fmt: skip
        attention_states = tf.stack(encoder_outputs, 1)
        output_size = None
        if output_projection is None:
            cell = OutputProjectionWrapper(cell, num_decoder_symbols)
            output_size = num_decoder_symbols

        def decoder(feed):
            return embedding_attention_decoder(
                decoder_inputs, encoder_state, attention_states, cell, num_decoder_symbols,
                embedding_size, num_heads=num_heads, output_size=output_size,
                output_projection=output_projection, feed_previous=feed,
                update_embedding_for_previous=isinstance(feed_previous, bool),
                initial_state_attention=initial_state_attention,
            )  # fmt: skip

        return _decoded_by_flag(feed_previous, decoder, encoder_state)


def sequence_loss_by_example(logits, targets, weights, average_across_timesteps=True,
                             softmax_loss_function=None, name=None):  # fmt: skip
    """The weighted cross entropy of each example, summed over the steps.

    Args:
        logits: a list of [batch, classes] tensors.
        targets: a list of [batch] int tensors.
        weights: a list of [batch] float tensors.
        average_across_timesteps: divide by the summed weights (+1e-12).
        softmax_loss_function: None, or ``f(labels=, logits=)``.
        name: the name scope (default ``sequence_loss_by_example``).

    Returns:
        [batch] losses.

    Raises:
        ZooError: the three lists differ in length.
    """
    counts = (len(logits), len(weights), len(targets))
    require("sequence_loss_by_example", None if len(set(counts)) == 1 else
            f"expected as many logits, weights and targets, found {counts}",
            "pass one of each per step")  # fmt: skip
    with v1.name_scope(name, "sequence_loss_by_example", logits + targets + weights):
        losses = []
        for logit, target, weight in zip(logits, targets, weights, strict=True):
            if softmax_loss_function is None:
                crossent = tf.nn.sparse_softmax_cross_entropy_with_logits(
                    labels=tf.reshape(target, [-1]), logits=logit
                )
            else:
                crossent = softmax_loss_function(labels=target, logits=logit)
            losses.append(crossent * weight)
        total = tf.add_n(losses)
        if average_across_timesteps:
            total /= tf.add_n(weights) + 1e-12
        return total


def sequence_loss(logits, targets, weights, average_across_timesteps=True,
                  average_across_batch=True, softmax_loss_function=None,
                  name=None):  # fmt: skip
    """The summed :func:`sequence_loss_by_example`, divided by the batch size when
    ``average_across_batch``; arguments as that function.

    Returns:
        A scalar.
    """
    with v1.name_scope(name, "sequence_loss", logits + targets + weights):
        cost = tf.reduce_sum(sequence_loss_by_example(
            logits, targets, weights, average_across_timesteps=average_across_timesteps,
            softmax_loss_function=softmax_loss_function,
        ))  # fmt: skip
        if not average_across_batch:
            return cost
        return cost / tf.cast(tf.shape(targets[0])[0], cost.dtype)


def model_with_buckets(encoder_inputs, decoder_inputs, targets, weights, buckets, seq2seq,
                       softmax_loss_function=None, per_example_loss=False,
                       name=None):  # fmt: skip
    """One ``seq2seq(encoder_inputs, decoder_inputs)`` model per bucket (encoder
    length, decoder length), sharing variables, and each bucket's loss.

    Returns:
        ``(outputs, losses)``: a list per bucket.

    Raises:
        ZooError: fewer inputs, targets or weights than the last bucket needs.
    """
    last_encoder, last_decoder = buckets[-1]
    for what, found, needed in (("encoder_inputs", encoder_inputs, last_encoder),
                                ("targets", targets, last_decoder),
                                ("weights", weights, last_decoder)):  # fmt: skip
        require("model_with_buckets", None if len(found) >= needed else
                f"expected at least {needed} {what} (the last bucket), found {len(found)}",
                "pass inputs as long as the largest bucket")  # fmt: skip
    loss = sequence_loss_by_example if per_example_loss else sequence_loss
    outputs, losses = [], []
    inputs = encoder_inputs + decoder_inputs + targets + weights
    with v1.name_scope(name, "model_with_buckets", inputs):
        for j, (encoder_length, decoder_length) in enumerate(buckets):
            with v1.variable_scope(v1.get_variable_scope(), reuse=True if j > 0 else None):
                bucket_outputs, _ = seq2seq(encoder_inputs[:encoder_length],
                                            decoder_inputs[:decoder_length])  # fmt: skip
                outputs.append(bucket_outputs)
                losses.append(loss(
                    bucket_outputs, targets[:decoder_length], weights[:decoder_length],
                    softmax_loss_function=softmax_loss_function,
                ))  # fmt: skip
    return outputs, losses
