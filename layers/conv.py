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

from layers.base import Layer, read_only
from layers.dense import (
    check_size,
    find_tied_weight,
    own_regularization_loss,
    scope_or_current,
    truncated_normal,
)
from layers.errors import ShapeError
from layers.variables import full_name, get_variable, in_dtype_of


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


class _Convolution(Layer):
    """The one constructor of :class:`Conv2D` and :class:`Conv2DTranspose`.

    It checks the sizes and the input, finds a tied kernel, makes the kernel
    (unless tied) and the bias, and applies the activation; a subclass says what
    is particular to it in :meth:`_kernel_shape`, :meth:`_check_spatial` and
    :meth:`_convolve`. The arguments are documented on the two subclasses.
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
        tie_to=None,
        regularizer=None,
        bias=True,
    ):
        owner = full_name(scope) if scope else type(self).__name__
        check_size(owner, size=size, n_in=n_in, n_out=n_out, stride=stride)
        check_images(owner, inputs, n_in)
        self._check_spatial(owner, inputs, n_in)
        shape = self._kernel_shape(size, n_in, n_out)
        self._tied_weight = find_tied_weight(owner, tie_to, shape, regularizer)
        self._inputs = inputs
        with scope_or_current(scope) as var_scope:
            self._scope_name = var_scope.name
            self._w, self._params = self._tied_weight, []
            if self._tied_weight is None:
                self._w = get_variable(
                    owner,
                    names[0],
                    shape,
                    w_init or truncated_normal(0.1),
                    regularizer=regularizer,
                )
                self._params = [self._w]
            self._b = None
            if bias:
                self._b = get_variable(
                    owner,
                    names[1],
                    [n_out],
                    b_init or tf.compat.v1.constant_initializer(0.1),
                )
                self._params.append(self._b)
            self._regularization_loss = own_regularization_loss(self._w, regularizer)
            inputs = in_dtype_of(inputs, self._w)
            self._logits = self._convolve(inputs, size, n_out, stride, padding)
            if bias:
                self._logits = tf.nn.bias_add(self._logits, self._b)
            self._output = activation(self._logits)

    tied_weight = read_only(
        "_tied_weight", "The mirrored layer's kernel this layer reads, or None if untied."
    )

    def _kernel_shape(self, size, n_in, n_out):
        """The shape of ``W``."""
        raise NotImplementedError

    def _check_spatial(self, owner, inputs, n_in):
        """Raises ShapeError when the convolution needs a height and width it lacks."""

    def _convolve(self, inputs, size, n_out, stride, padding):
        """Returns the convolution of ``inputs`` with ``self._w``, before the bias."""
        raise NotImplementedError


class Conv2D(_Convolution):
    """``activation(conv2d(inputs, W) + b)``, stride 1, ``SAME`` padding by default.

    ``W`` is [size, size, n_in, n_out] and ``b`` is [n_out]. ``bias=False`` makes
    no ``b``: ``activation(conv2d(inputs, W))``, for a convolution that batch norm
    follows (its ``beta`` is the bias; see :mod:`zoo.models.bn_conv`).

    Args:
        inputs: tensor [batch, height, width, n_in].
        size: side of the square filter.
        n_in: input channels.
        n_out: output channels (filters).
        scope: variable scope for the layer's variables, relative to the current
            one; None creates them directly under the current scope.
        names: the (weight, bias) variable names; a tied layer makes no weight,
            and the bias name is unused when ``bias=False``.
        activation: callable applied to the pre-activation (default ReLU).
        w_init: weight initializer (default truncated normal, stddev 0.1).
        b_init: bias initializer (default the constant 0.1).
        stride: step of the filter in both directions.
        padding: ``"SAME"`` or ``"VALID"``.
        tie_to: None for an own ``W``; the scope (relative to the current variable
            scope) of the :class:`Conv2DTranspose` this layer mirrors, whose
            kernel ``W`` [size, size, n_in, n_out] it reads; or that variable itself.
        regularizer: as :class:`layers.Dense`, for the kernel; not allowed when tied.
        bias: False for no bias variable (``b`` is then None).

    Raises:
        ShapeError: sizes are not positive ints, or inputs are not
            [batch, height, width, n_in].
        ScopeError: the variables exist and reuse is off, or reuse is on and
            they do not exist.
        TieError: as :class:`layers.Dense` (the kernel's shape is checked).
        EagerError: built eagerly outside a sharing template.
    """

    def _kernel_shape(self, size, n_in, n_out):
        return [size, size, n_in, n_out]

    def _convolve(self, inputs, size, n_out, stride, padding):
        return tf.nn.conv2d(inputs, self._w, strides=stride, padding=padding)


class Conv2DTranspose(_Convolution):
    """``activation(conv2d_transpose(inputs, W) + b)``: the transpose of a :class:`Conv2D`.

    ``W`` is [size, size, n_out, n_in], the layout of a ``Conv2D`` kernel from
    ``n_out`` to ``n_in`` channels, so ``tie_to`` can name such a layer's scope and
    the transpose reads *its* kernel (a convolutional autoencoder with tied
    weights; Sonnet 1's ``Conv2D.transpose()`` makes new variables instead). The
    output is [batch, height * stride, width * stride, n_out] with ``SAME``
    padding, [batch, (height - 1) * stride + size, ..., n_out] with ``VALID``:
    the input shape of the convolution it mirrors.

    Args:
        inputs: tensor [batch, height, width, n_in], height and width known.
        size: side of the square filter.
        n_in: input channels (the mirrored convolution's output channels).
        n_out: output channels (the mirrored convolution's input channels).
        scope: as :class:`Conv2D`.
        names: as :class:`Conv2D`.
        activation: callable applied to the pre-activation (default ReLU).
        w_init: weight initializer of an untied layer (default truncated normal, 0.1).
        b_init: bias initializer (default the constant 0.1).
        stride: step of the mirrored convolution in both directions.
        padding: ``"SAME"`` or ``"VALID"``, as in the mirrored convolution.
        tie_to: None for an own ``W``; the scope (relative to the current variable
            scope) of a ``Conv2D`` whose kernel ``W`` [size, size, n_out, n_in] this
            layer reads; or that variable itself.
        regularizer: as :class:`layers.Dense`; not allowed when tied.
        bias: False for no bias variable (``b`` is then None), as in :class:`Conv2D`.

    Raises:
        ShapeError: sizes are not positive ints, or inputs are not
            [batch, height, width, n_in] with height and width known.
        TieError: as :class:`layers.Dense` (the kernel's shape is checked).
        ScopeError, EagerError: as :class:`Conv2D`.
    """

    def _kernel_shape(self, size, n_in, n_out):
        return [size, size, n_out, n_in]

    def _check_spatial(self, owner, inputs, n_in):
        if inputs.shape[1] is None or inputs.shape[2] is None:
            raise ShapeError(
                f"{owner}: expected input of shape [batch, height, width, {n_in}] with "
                f"height and width known, found {inputs.shape}; give the input a static "
                "spatial shape"
            )

    def _convolve(self, inputs, size, n_out, stride, padding):
        height, width = inputs.shape[1], inputs.shape[2]
        sides = [transposed_side(n, size, stride, padding) for n in (height, width)]
        output_shape = [tf.shape(inputs)[0], *sides, n_out]
        return tf.nn.conv2d_transpose(
            inputs, self._w, output_shape, strides=stride, padding=padding
        )


def transposed_side(side, size, stride, padding):
    """The input side of a convolution whose output side is ``side``."""
    return side * stride if padding == "SAME" else (side - 1) * stride + size


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

    input = read_only("_inputs", "The input tensor [batch, height, width, channels].")

    output = read_only(
        "_output", "The pooled tensor [batch, height / stride, width / stride, channels]."
    )

    @property
    def params(self):
        """The variables this layer created: none."""
        return []
