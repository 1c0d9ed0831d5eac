"""The ``scope``/``reuse`` entry every zoo builder goes through, and its hidden layers."""

import contextlib

import tensorflow as tf

from layers.dense import FullConnected, check_size
from layers.errors import ScopeError, ShapeError
from layers.variables import require_graph

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


def hidden_stack(inputs, width, hidden, activation=None, w_init=None):
    """Stacks hidden layers ``W_hid_i``/``b_hid_i`` on ``inputs`` under the current scope.

    Args:
        inputs: tensor [batch, width].
        width: its static width.
        hidden: widths of the hidden layers (may be empty), checked here by
            :func:`check_widths` before any variable is made.
        activation: of every layer (default: :class:`layers.FullConnected`'s ReLU).
        w_init: weight initializer of every layer (default: the layer's own).

    Returns:
        ``(layers, top tensor, its width)``; ``([], inputs, width)`` without layers.

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
        )
        layers.append(layer)
        h, width = layer.output, n_out
    return layers, h, width
