"""The parts several zoo builders share, each written once.

- :func:`builder_scope`: the ``scope``/``reuse`` entry every builder goes through
  (:func:`check_scope_args` its check), and :func:`input_width`.
- :func:`hidden_stack`: the ``W_hid_i``/``b_hid_i`` layers of the MLP, the GAN,
  the Q-network and the siamese tower, checked by :func:`check_widths`.
- :func:`classifier_head`: a read-out's :class:`Classifier` (MLP, conv, RNN);
  :class:`Autoencoder`, what both autoencoders return.
- :func:`next_draw`, :func:`stateless_seed`: random draws a restored checkpoint
  repeats (the MLP's dropout, the GAN's noise).

Builders import from here, never from a sibling builder.

Usage::

    with builder_scope(scope, reuse) as var_scope:
        width = input_width(var_scope.name, x, "x")
        layers, h, width = hidden_stack(x, width, hidden)   # W_hid_1 ... checked
        readout = ReadOut(h, width, n_classes, names=("W_RO", "b_RO"))
        return classifier_head(readout, y, layers, var_scope.name)
"""

import contextlib
import dataclasses

import tensorflow as tf

from layers.dense import Decoder, Encoder, FullConnected, check_size
from layers.errors import ScopeError, ShapeError
from layers.variables import at_least_float32, get_variable, require_graph

AUTO_REUSE = tf.compat.v1.AUTO_REUSE


@contextlib.contextmanager
def builder_scope(scope, reuse):
    """Opens ``variable_scope(scope, reuse=reuse)`` after checking both.

    Args:
        scope: non-empty scope name, relative to the current scope.
        reuse: False/None (create), True (share existing), or ``AUTO_REUSE``.

    Yields:
        The ``VariableScope``.

    Raises:
        ScopeError: a bad scope name or reuse value.
        EagerError: called eagerly outside a sharing template.
    """
    check_scope_args(scope, reuse)
    require_graph(scope)
    with tf.compat.v1.variable_scope(scope, reuse=reuse) as var_scope:
        yield var_scope


def check_scope_args(scope, reuse):
    """Raises ScopeError unless ``scope`` is a non-empty name and ``reuse`` is valid."""
    if not isinstance(scope, str) or not scope.strip("/"):
        raise ScopeError(
            f"builder: expected scope to be a non-empty string, found {scope!r}; "
            "pass scope='name'"
        )
    if not any(reuse is allowed for allowed in (True, False, None, AUTO_REUSE)):
        raise ScopeError(
            f"{scope}: expected reuse in (False, True, tf.compat.v1.AUTO_REUSE), found "
            f"{reuse!r}; pass one of those"
        )


def input_width(owner, tensor, what):
    """Returns the static last dimension of a rank-2 ``tensor``.

    Raises:
        ShapeError: rank is not 2 or the last dimension is unknown.
    """
    shape = tensor.shape
    if shape.rank != 2 or shape[-1] is None:
        raise ShapeError(
            f"{owner}: expected {what} of shape [batch, n] with n known, found {shape}; "
            "give the placeholder a static last dimension"
        )
    return shape[-1]


def check_widths(owner, widths, name="hidden"):
    """Returns the hidden-layer widths ``widths`` as a tuple, after checking them.

    The one check of hidden widths: :func:`hidden_stack` makes it, and a builder
    with two stacks (the GAN) makes it on both before building either.

    Args:
        owner: the scope named in the message.
        widths: a sequence of positive ints (may be empty: no hidden layer).
        name: the builder argument that holds ``widths``, named in the message.

    Returns:
        ``tuple(widths)``.

    Raises:
        ShapeError: ``widths`` is not a sequence (an int, a string) or holds a
            width that is not a positive int.
    """
    if isinstance(widths, int | str) or not hasattr(widths, "__iter__"):
        raise ShapeError(
            f"{owner}: expected {name} to be a sequence of positive ints, found "
            f"{widths!r}; pass e.g. {name}=(256,), or {name}=() for no hidden layer"
        )
    widths = tuple(widths)
    check_size(owner, **{f"{name}[{i}]": width for i, width in enumerate(widths)})
    return widths


def hidden_stack(
    inputs, width, hidden, activation=None, w_init=None, regularizer=None, after=None
):
    """Stacks hidden layers ``W_hid_i``/``b_hid_i`` on ``inputs`` under the current scope.

    Args:
        inputs: tensor [batch, width].
        width: its static width.
        hidden: widths of the hidden layers (may be empty), checked here by
            :func:`check_widths` before any variable is made.
        activation: of every layer (default: :class:`layers.FullConnected`'s ReLU).
        w_init: weight initializer of every layer (default: the layer's own).
        regularizer: of every layer's weight (see :class:`layers.Dense`), or None.
        after: optional ``f(h, i) -> h`` applied to the output of layer ``i``
            (from 1) before the next layer reads it: the MLP's dropout.

    Returns:
        ``(layers, top tensor, its width)``; ``([], inputs, width)`` without layers.
        The top tensor is the last layer's output after ``after``.

    Raises:
        ShapeError: a width in ``hidden`` is not a positive int, or ``hidden`` is
            not a sequence; the message names the current scope.
    """
    owner = tf.compat.v1.get_variable_scope().name or "hidden_stack"
    hidden = check_widths(owner, hidden)
    layers, h = [], inputs
    for i, n_out in enumerate(hidden, start=1):
        layer = FullConnected(
            h,
            width,
            n_out,
            names=(f"W_hid_{i}", f"b_hid_{i}"),
            activation=activation,
            w_init=w_init,
            regularizer=regularizer,
        )
        layers.append(layer)
        h, width = layer.output, n_out
        if after is not None:
            h = after(h, i)
    return layers, h, width


@dataclasses.dataclass(frozen=True)
class Autoencoder:
    """What an autoencoder builds: :func:`zoo.autoencoder`, ``conv_autoencoder``.

    Attributes:
        encoded: hidden code [batch, n_hidden].
        decoded: reconstruction in (0, 1) [batch, n_in].
        logits: reconstruction before the sigmoid.
        loss: mean elementwise binary cross-entropy (a scalar).
        encoder: the :class:`layers.Encoder`.
        decoder: the :class:`layers.Decoder`.
        scope_name: the full variable scope.
    """

    encoded: tf.Tensor
    decoded: tf.Tensor
    logits: tf.Tensor
    loss: tf.Tensor
    encoder: Encoder
    decoder: Decoder
    scope_name: str


@dataclasses.dataclass(frozen=True)
class Classifier:
    """What a classifier builds: :func:`zoo.models.mlp_classifier`, ``conv_classifier``.

    Attributes:
        y_pred: class probabilities [batch, n_classes].
        logits: read-out before the softmax.
        loss: cross-entropy summed over the batch, plus the builder's penalty
            (the MLP's l2 * sum of hidden l2_loss).
        accuracy: fraction of argmax(y_pred) == argmax(y) (a scalar).
        layers: the hidden layers then the read-out.
        scope_name: the full variable scope.
    """

    y_pred: tf.Tensor
    logits: tf.Tensor
    loss: tf.Tensor
    accuracy: tf.Tensor
    layers: tuple
    scope_name: str


def accuracy_of(y_pred, y):
    """Returns the fraction of rows whose argmax agrees (a scalar tensor)."""
    correct = tf.equal(tf.argmax(y_pred, 1), tf.argmax(y, 1))
    return tf.reduce_mean(tf.cast(correct, tf.float32), name="accuracy")


def classifier_head(readout, y, layers, scope_name, penalty=None):
    """Returns the :class:`Classifier` of a read-out layer.

    Args:
        readout: the :class:`layers.ReadOut`.
        y: one-hot labels [batch, n_classes].
        layers: the layers before the read-out.
        scope_name: the model's full variable scope.
        penalty: optional scalar added to the loss (weight decay).

    Returns:
        :class:`Classifier` whose loss is the cross-entropy summed over the batch,
        plus ``penalty``.
    """
    loss = tf.reduce_sum(
        tf.nn.softmax_cross_entropy_with_logits(
            labels=y, logits=at_least_float32(readout.logits)
        )
    )
    if penalty is not None:
        loss += penalty
    return Classifier(
        y_pred=readout.output,
        logits=readout.logits,
        loss=tf.identity(loss, name="loss"),
        accuracy=accuracy_of(readout.output, y),
        layers=(*layers, readout),
        scope_name=scope_name,
    )


def next_draw(owner, name="dropout_draws"):
    """Returns this run's draw number: the counter ``name`` incremented once.

    The counter is a non-trainable int64 variable in the current scope, so a
    checkpoint holds it and a resumed run continues the same draws.

    Args:
        owner: scope named in error messages.
        name: the counter's name in the current scope.
    """
    draws = get_variable(
        owner, name, [], tf.zeros_initializer(), trainable=False, dtype=tf.int64
    )
    return draws.assign_add(1)


def stateless_seed(draw, salt=0):
    """Returns the int64 [2] seed of a stateless random op: (graph seed, salt), draw.

    Args:
        draw: int64 scalar tensor, different for every run (see :func:`next_draw`).
        salt: distinguishes the random ops that share a draw.
    """
    graph_seed, op_seed = tf.compat.v1.get_seed(None)
    base = (graph_seed or 0) * 1_000_003 + (op_seed or 0) * 131 + salt
    return tf.stack([tf.constant(base % 2**62, tf.int64), draw])
