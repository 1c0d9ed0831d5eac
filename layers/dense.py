"""Fully connected layers on ``tf.compat.v1.get_variable``.

Each layer is built when it is constructed, under a variable scope, and keeps
its tensors and variables behind read-only properties. Sharing follows the
enclosing ``variable_scope``'s ``reuse`` flag, exactly as TF1 code expects;
tying is explicit: a ``Decoder`` with ``tie_to`` reads the encoder's ``W``
transposed instead of creating its own.

Usage::

    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 784])
        enc = Encoder(x, 784, 625, scope="encoder")      # encoder/W, encoder/b
        dec = Decoder(enc.output, 625, 784, tie_to="encoder")  # decoder/b only
        fc = FullConnected(x, 784, 625, names=("W_hid_1", "b_hid_1"))
        ro = ReadOut(fc.output, 625, 10, names=("W_RO", "b_RO"))
"""

import contextlib

import tensorflow as tf

from layers.base import Layer
from layers.checks import int_problem, require
from layers.errors import ShapeError, TieError, ZooError
from layers.variables import (
    at_least_float32,
    full_name,
    get_variable,
    in_dtype_of,
    stored_variable,
)


def truncated_normal(stddev=0.05):
    """Returns the seeds' weight initializer: truncated normal, mean 0."""
    return tf.compat.v1.truncated_normal_initializer(mean=0.0, stddev=stddev)


def random_normal(stddev=0.05):
    """Returns the seeds' read-out initializer: normal, mean 0."""
    return tf.compat.v1.random_normal_initializer(mean=0.0, stddev=stddev)


def softmax_float32(logits):
    """The softmax, computed in float32 whatever the logits' dtype (a precision
    policy's bfloat16 or float16 logits are cast first)."""
    return tf.nn.softmax(at_least_float32(logits))


def check_input(owner, inputs, n_in):
    """Checks that ``inputs`` is ``[batch, n_in]``.

    Args:
        owner: layer name used in the message.
        inputs: a tensor.
        n_in: the expected last dimension.

    Raises:
        ShapeError: wrong rank, or a known last dimension other than ``n_in``.
    """
    shape = inputs.shape
    if shape.rank is not None and shape.rank != 2:
        raise ShapeError(
            f"{owner}: expected input of shape [batch, {n_in}], found {shape}; "
            "flatten the input first"
        )
    if shape.rank == 2 and shape[-1] is not None and shape[-1] != n_in:
        raise ShapeError(
            f"{owner}: expected input of shape [batch, {n_in}], found {shape}; pass "
            f"n_in={shape[-1]} or feed {n_in}-wide inputs"
        )


def check_size(owner, **sizes):
    """Raises ShapeError naming ``owner`` unless every size is an int >= 1."""
    for key, value in sizes.items():
        require(owner, int_problem(value, name=key), f"pass {key}=<int>", ShapeError)


def scope_or_current(scope):
    """Returns ``variable_scope(scope)``, or the current scope when ``scope`` is None."""
    if scope is None:
        return contextlib.nullcontext(tf.compat.v1.get_variable_scope())
    return tf.compat.v1.variable_scope(scope)


class Dense(Layer):
    """``activation(inputs @ W + b)`` with ``W`` [n_in, n_out] and ``b`` [n_out].

    Args:
        inputs: tensor [batch, n_in].
        n_in: input width.
        n_out: output width.
        scope: variable scope for the layer's variables, relative to the current
            one; None creates them directly under the current scope.
        names: the (weight, bias) variable names.
        activation: callable applied to the logits.
        w_init: weight initializer (default truncated normal, stddev 0.05).
        b_init: bias initializer (default zeros).
        tie_to: None for an own ``W`` [n_in, n_out]; or the name of a scope
            relative to the current variable scope (inside
            ``autoencoder(scope="ae")``, ``"encoder"`` means ``ae/encoder``) whose
            ``W`` [n_out, n_in] is read transposed (an encoder's weight, an
            :class:`Embedding` matrix [vocab, dim]); or that variable itself.
        regularizer: None, or a function ``W -> scalar loss`` (for instance
            ``layers.variables.l2_regularizer(0.01)``) given to ``get_variable``
            for the weight; the bias is not regularized.

    Raises:
        ShapeError: sizes are not positive ints, or inputs are not [batch, n_in].
        ScopeError: the variables exist and reuse is off, or reuse is on and
            they do not exist.
        TieError: the tie target has no ``W``, its ``W`` is not [n_out, n_in], or
            a regularizer is given to a tied layer (it owns no ``W``).
        EagerError: built eagerly outside a sharing template.
    """

    default_activation = staticmethod(tf.nn.relu)
    default_scope = None

    def __init__(
        self,
        inputs,
        n_in,
        n_out,
        *,
        scope=None,
        names=("W", "b"),
        activation=None,
        w_init=None,
        b_init=None,
        tie_to=None,
        regularizer=None,
    ):
        scope = scope if scope is not None else self.default_scope
        owner = full_name(scope) if scope else type(self).__name__
        check_size(owner, n_in=n_in, n_out=n_out)
        self._tied_weight = find_tied_weight(owner, tie_to, [n_out, n_in], regularizer)
        check_input(owner, inputs, n_in)
        self._inputs = inputs
        with scope_or_current(scope) as var_scope:
            self._scope_name = var_scope.name
            self._w, self._params = None, []  # tied: made on the first read of ``w``
            if self._tied_weight is None:
                self._w = get_variable(
                    owner,
                    names[0],
                    [n_in, n_out],
                    w_init or self.default_w_init(),
                    regularizer=regularizer,
                )
                self._params = [self._w]
            self._b = get_variable(
                owner, names[1], [n_out], b_init or tf.compat.v1.zeros_initializer()
            )
            self._params.append(self._b)
            self._regularization_loss = own_regularization_loss(self._w, regularizer)
            self._logits = tf.nn.bias_add(
                self._product(in_dtype_of(inputs, self._b)), self._b
            )
            self._output = (activation or self.default_activation)(self._logits)

    @staticmethod
    def default_w_init():
        return truncated_normal()

    def _product(self, inputs):
        """Returns ``inputs @ W``; tied, a product with the target's W transposed.

        ``transpose_b`` instead of a transpose op keeps both the product and its
        weight gradient free of a [n_out, n_in] transposed copy (about 9 % of a
        tied training step on one core).
        """
        if self._tied_weight is None:
            return tf.matmul(inputs, self._w)
        return tf.matmul(inputs, self._tied_weight, transpose_b=True)

    @property
    def w(self):
        """The weight; tied, ``<scope>/W_tied``: the target's W transposed.

        A tied layer makes that transpose op on the first read of ``w`` (not in a
        finalized graph), so the target's ``W`` has exactly two readers in training.
        """
        if self._w is None:
            with tf.name_scope(f"{self._scope_name}/" if self._scope_name else None):
                self._w = tf.transpose(self._tied_weight, name="W_tied")
        return self._w

    @property
    def tied_weight(self):
        """The variable this layer reads transposed, or None if untied."""
        return self._tied_weight


class FullConnected(Dense):
    """A ReLU hidden layer under the current scope (see :class:`Dense`)."""


class ReadOut(Dense):
    """A softmax read-out layer: ``.output`` is the softmax, ``.logits`` before it.

    Weights start from a normal (not truncated) distribution, as in the seeds.
    With ``tie_to`` naming an :class:`Embedding`'s scope it is the output
    projection tied to the embedding matrix (logits ``h @ E^T + b``).
    """

    default_activation = staticmethod(softmax_float32)

    @staticmethod
    def default_w_init():
        return random_normal()


class Encoder(Dense):
    """A sigmoid layer in its own scope (default ``encoder``): ``W`` [n_in, n_out]."""

    default_activation = staticmethod(tf.sigmoid)
    default_scope = "encoder"


class Decoder(Dense):
    """A sigmoid layer in scope ``decoder``, untied or tied (``tie_to="encoder"``).

    See :class:`Dense` for the arguments; ``tie_to`` names the encoder's scope.
    """

    default_activation = staticmethod(tf.sigmoid)
    default_scope = "decoder"


class Embedding:
    """``W[ids]``: rows of an embedding matrix ``W`` [vocab, dim], in scope ``embedding``.

    Tie an output projection to it with ``ReadOut(h, dim, vocab, tie_to="embedding")``:
    the logits are ``h @ W^T + b`` and ``W`` is one variable with two readers.

    Args:
        ids: integer tensor of any shape, values in [0, vocab).
        vocab: number of rows.
        dim: width of a row.
        scope: as :class:`Dense`.
        name: the matrix's variable name.
        w_init: initializer (default normal, stddev 0.05).
        regularizer: as :class:`Dense`.

    Raises:
        ShapeError: sizes are not positive ints.
        ZooError: ``ids`` are not integers.
        ScopeError, EagerError: as :class:`Dense`.
    """

    def __init__(
        self, ids, vocab, dim, *, scope="embedding", name="W", w_init=None, regularizer=None
    ):
        owner = full_name(scope) if scope else type(self).__name__
        check_size(owner, vocab=vocab, dim=dim)
        if not ids.dtype.is_integer:
            raise ZooError(
                f"{owner}: expected integer ids, found {ids.dtype.name}; cast them with "
                "tf.cast(ids, tf.int32)"
            )
        self._inputs = ids
        with scope_or_current(scope) as var_scope:
            self._scope_name = var_scope.name
            self._w = get_variable(
                owner,
                name,
                [vocab, dim],
                w_init or random_normal(),
                regularizer=regularizer,
            )
            self._regularization_loss = own_regularization_loss(self._w, regularizer)
            self._output = tf.nn.embedding_lookup(self._w, ids)

    input = Layer.input
    output = Layer.output
    w = Layer.w
    scope_name = Layer.scope_name
    regularization_loss = Layer.regularization_loss

    @property
    def params(self):
        """The variables this layer created: the matrix."""
        return [self._w]


def own_regularization_loss(weight, regularizer):
    """Returns ``regularizer(weight)`` named ``regularization_loss``, or None.

    Under a precision policy the regularizer sees the stored float32 variable,
    not the compute-dtype read (:func:`layers.variables.stored_variable`).

    The loss of this build of a layer, for a builder's own loss (eager code has no
    collection); the graph collection holds TensorFlow's copy, once per variable.
    """
    if regularizer is None:  # always so for a tied layer (find_tied_weight)
        return None
    return tf.identity(regularizer(stored_variable(weight)), name="regularization_loss")


def find_tied_weight(owner, tie_to, shape, regularizer=None):
    """Returns the variable ``<tie_to>/W`` of shape ``shape``, or None for no tie.

    Args:
        owner: the tied layer's name, for messages.
        tie_to: None, a scope name relative to the current variable scope, or a
            variable.
        shape: the shape the tied layer reads the weight with.
        regularizer: the tied layer's regularizer; must be None when tied.

    Raises:
        TieError: no ``W`` under ``tie_to``, another shape, or a regularizer.
    """
    if tie_to is None:
        return None
    if regularizer is not None:
        raise TieError(
            f"{owner}: expected no regularizer on a layer tied to {tie_to!r} (it owns no "
            f"weight), found {regularizer!r}; pass the regularizer to the layer that "
            "creates the weight, so its loss counts once"
        )
    if isinstance(tie_to, tf.Variable):
        weight, target = tie_to, tie_to.name
    else:
        target = full_name(f"{tie_to}/W")
        try:
            with tf.compat.v1.variable_scope(tie_to, reuse=True):
                weight = tf.compat.v1.get_variable("W")
        except ValueError:
            raise TieError(
                f"{owner}: expected tie_to={tie_to!r} to name a scope with a weight W, "
                f"found no variable {target}; build the layer it ties to under that "
                "scope first, or pass tie_to=None for an untied layer"
            ) from None
    if weight.shape.as_list() != shape:
        raise TieError(
            f"{owner}: expected the tied weight {target} with shape {shape}, found "
            f"{weight.shape.as_list()}; tie to a layer of the mirrored sizes, or pass "
            "tie_to=None"
        )
    return weight
