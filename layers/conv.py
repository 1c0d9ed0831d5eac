"""Convolution and max-pooling layers on ``tf.compat.v1.get_variable``.

In the style of :mod:`layers.dense`: a layer is built when it is constructed,
its variables follow the enclosing ``variable_scope``'s ``reuse`` flag, and its
tensors and variables sit behind read-only properties.

Usage::

    with tf.Graph().as_default():
        images = tf.compat.v1.placeholder(tf.float32, [None, 28, 28, 1])
        conv = Conv2D(images, 5, 1, 32, names=("W_conv1", "b_conv1"))  # 5x5x1x32
        pool = MaxPool(conv.output)                                     # [B, 14, 14, 32]
"""

import tensorflow as tf

from layers.base import Layer
from layers.dense import check_size, scope_or_current, truncated_normal
from layers.errors import ShapeError
from layers.variables import full_name, get_variable


def check_images(owner, inputs, channels=None):
    """Checks that ``inputs`` is ``[batch, height, width, channels]``.

    Args:
        owner: layer name used in the message.
        inputs: a tensor.
        channels: the expected last dimension, or None for any.

    Raises:
        ShapeError: a known rank other than 4, or a known channel count other than
            ``channels``.
    """
    shape = inputs.shape
    wanted = f"[batch, height, width, {channels if channels else 'channels'}]"
    if shape.rank is not None and shape.rank != 4:
        raise ShapeError(
            f"{owner}: expected input of shape {wanted}, found {shape}; reshape the "
            "input to images first, e.g. tf.reshape(x, [-1, 28, 28, 1])"
        )
    if channels and shape.rank == 4 and shape[-1] is not None and shape[-1] != channels:
        raise ShapeError(
            f"{owner}: expected input of shape {wanted}, found {shape}; pass "
            f"n_in={shape[-1]} or feed {channels}-channel inputs"
        )


class Conv2D(Layer):
    """``activation(conv2d(inputs, W) + b)``, stride 1, ``SAME`` padding by default.

    ``W`` is [size, size, n_in, n_out] and ``b`` is [n_out].

    Args:
        inputs: tensor [batch, height, width, n_in].
        size: side of the square filter.
        n_in: input channels.
        n_out: output channels (filters).
        scope: variable scope for the layer's variables, relative to the current
            one; None creates them directly under the current scope.
        names: the (weight, bias) variable names.
        activation: callable applied to the pre-activation (default ReLU).
        w_init: weight initializer (default truncated normal, stddev 0.1).
        b_init: bias initializer (default the constant 0.1).
        stride: step of the filter in both directions.
        padding: ``"SAME"`` or ``"VALID"``.

    Raises:
        ShapeError: sizes are not positive ints, or inputs are not
            [batch, height, width, n_in].
        ScopeError: the variables exist and reuse is off, or reuse is on and
            they do not exist.
        EagerError: built eagerly outside a sharing template.
    """

    def __init__(
        self,
        inputs,
        size,
        n_in,
        n_out,
        *,
        scope=None,
        names=("W", "b"),
        activation=tf.nn.relu,
        w_init=None,
        b_init=None,
        stride=1,
        padding="SAME",
    ):
        owner = full_name(scope) if scope else type(self).__name__
        check_size(owner, size=size, n_in=n_in, n_out=n_out, stride=stride)
        check_images(owner, inputs, n_in)
        self._inputs = inputs
        with scope_or_current(scope) as var_scope:
            self._scope_name = var_scope.name
            self._w = get_variable(
                owner, names[0], [size, size, n_in, n_out], w_init or truncated_normal(0.1)
            )
            self._b = get_variable(
                owner, names[1], [n_out], b_init or tf.compat.v1.constant_initializer(0.1)
            )
            conv = tf.nn.conv2d(inputs, self._w, strides=stride, padding=padding)
            self._logits = tf.nn.bias_add(conv, self._b)
            self._output = activation(self._logits)
        self._params = [self._w, self._b]


class MaxPool:
    """Max pooling over ``size`` x ``size`` windows (default 2x2, stride 2, ``SAME``).

    Has no variables.

    Args:
        inputs: tensor [batch, height, width, channels].
        size: side of the pooling window.
        stride: step of the window; default ``size``.
        padding: ``"SAME"`` or ``"VALID"``.
        name: name of the pooling op.

    Raises:
        ShapeError: sizes are not positive ints, or inputs are not rank 4.
    """

    def __init__(self, inputs, size=2, stride=None, padding="SAME", name="max_pool"):
        stride = size if stride is None else stride
        owner = full_name(name)
        check_size(owner, size=size, stride=stride)
        check_images(owner, inputs)
        self._inputs = inputs
        self._output = tf.nn.max_pool2d(
            inputs, ksize=size, strides=stride, padding=padding, name=name
        )

    @property
    def input(self):
        """The input tensor [batch, height, width, channels]."""
        return self._inputs

    @property
    def output(self):
        """The pooled tensor [batch, height / stride, width / stride, channels]."""
        return self._output

    @property
    def params(self):
        """The variables this layer created: none."""
        return []
