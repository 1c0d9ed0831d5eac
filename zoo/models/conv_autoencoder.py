"""A convolutional autoencoder whose transposed convolution reads the encoder's kernel.

conv 5x5x1x16, stride 2, sigmoid -> transposed conv (the same kernel when tied), sigmoid,
on square single-channel images given flat ([batch, 784] for MNIST).

Usage::

    ae = conv_autoencoder(x, tied=True, scope="conv_ae")  # conv_ae/encoder/{W,b},
    train = tf.compat.v1.train.AdagradOptimizer(0.1).minimize(ae.loss)  # decoder/b
    ae_eval = conv_autoencoder(x_test, tied=True, scope="conv_ae", reuse=True)
"""

import math

import tensorflow as tf

from layers.conv import Conv2D, Conv2DTranspose
from layers.errors import ShapeError
from zoo.models.losses import sigmoid_cross_entropy_mean
from zoo.models.parts import Autoencoder, builder_scope, input_width


def conv_autoencoder(
    x,
    tied=True,
    scope="conv_ae",
    reuse=False,
    filters=16,
    size=5,
    stride=2,
    regularizer=None,
):
    """Builds the convolutional encoder and its transposed decoder under ``scope``.

    Args:
        x: square single-channel images in [0, 1], flattened to [batch, side * side]
            with the width known statically.
        tied: the decoder's transposed convolution reads ``<scope>/encoder/W``
            [size, size, 1, filters] instead of its own kernel.
        scope: variable scope of the model.
        reuse: False, True or ``tf.compat.v1.AUTO_REUSE``.
        filters: channels of the code.
        size: side of the square filter.
        stride: step of the convolution; the side must be a multiple of it.
        regularizer: None or a function ``kernel -> scalar loss`` for each kernel the
            model owns (the tied kernel once).

    Returns:
        :class:`zoo.models.Autoencoder`: ``encoded`` is
        [batch, side / stride, side / stride, filters], ``decoded`` and ``logits``
        are flat like ``x``, ``encoder`` a :class:`layers.Conv2D` and ``decoder`` a
        :class:`layers.Conv2DTranspose`.

    Raises:
        ShapeError: ``x`` is not [batch, side * side] with the side a multiple of
            ``stride``.
        ScopeError, EagerError: as :func:`zoo.autoencoder`.
    """
    with builder_scope(scope, reuse) as var_scope:
        width = input_width(var_scope.name, x, "x")
        side = math.isqrt(width)
        if side * side != width or side % stride:
            raise ShapeError(
                f"{var_scope.name}: expected x of shape [batch, side * side] with the side "
                f"a multiple of stride={stride}, found width {width}; flatten square "
                "images of such a side, or change stride"
            )
        images = tf.reshape(x, [-1, side, side, 1], name="images")
        encoder = Conv2D(
            images,
            size,
            1,
            filters,
            scope="encoder",
            stride=stride,
            activation=tf.sigmoid,
            regularizer=regularizer,
        )
        decoder = Conv2DTranspose(
            encoder.output,
            size,
            filters,
            1,
            scope="decoder",
            stride=stride,
            activation=tf.sigmoid,
            tie_to="encoder" if tied else None,
            regularizer=None if tied else regularizer,
        )
        logits = tf.reshape(decoder.logits, [-1, width], name="logits")
        loss = sigmoid_cross_entropy_mean(labels=x, logits=logits)
    return Autoencoder(
        encoded=encoder.output,
        decoded=tf.sigmoid(logits),
        logits=logits,
        loss=loss,
        encoder=encoder,
        decoder=decoder,
        scope_name=var_scope.name,
    )
