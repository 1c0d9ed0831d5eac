"""The Deep MNIST convolutional network as a builder with ``scope`` and ``reuse``.

conv 5x5x32 -> max-pool 2x2 -> conv 5x5x64 -> max-pool 2x2 -> fc 1024 -> dropout
-> softmax read-out, with the seed's variable names ``W_conv1``/``b_conv1``,
``W_conv2``/``b_conv2``, ``W_fc1``/``b_fc1``, ``W_fc2``/``b_fc2``.

Usage::

    keep_prob = tf.compat.v1.placeholder_with_default(1.0, [])
    net = conv_classifier(x, y, scope="conv", keep_prob=keep_prob)  # x: [B, 784]
    train = tf.compat.v1.train.AdamOptimizer(1e-4).minimize(net.loss)
    net_eval = conv_classifier(x_test, y_test, scope="conv", reuse=True)  # shared
"""

import math

import tensorflow as tf

from layers.conv import Conv2D, MaxPool
from layers.dense import FullConnected, ReadOut
from layers.errors import ShapeError
from zoo.models.parts import builder_scope, classifier_head, input_width


def conv_classifier(
    x, y, scope="conv", reuse=False, keep_prob=None, filters=(32, 64), n_fc=1024
):
    """Builds the two-convolution classifier under ``scope``.

    Args:
        x: square single-channel images flattened to [batch, side * side] (784 for
            MNIST), the width known statically.
        y: one-hot labels [batch, n_classes].
        scope: variable scope of the model.
        reuse: False, True or ``tf.compat.v1.AUTO_REUSE``.
        keep_prob: dropout keep probability after the fc layer (a number or a
            scalar tensor); None for no dropout.
        filters: output channels of the two 5x5 convolutions.
        n_fc: width of the fully connected layer.

    Returns:
        :class:`zoo.models.Classifier`; ``loss`` is the cross-entropy summed
        over the batch, as in the seed.

    Raises:
        ShapeError: ``x`` is not [batch, side * side] with the width known.
        ScopeError, EagerError: as :func:`zoo.autoencoder`.
    """
    with builder_scope(scope, reuse) as var_scope:
        width = input_width(var_scope.name, x, "x")
        n_classes = input_width(var_scope.name, y, "one-hot labels y")
        side = math.isqrt(width)
        if side * side != width:
            raise ShapeError(
                f"{var_scope.name}: expected x of shape [batch, side * side] (square "
                f"single-channel images), found width {width}; flatten square images"
            )
        h = tf.reshape(x, [-1, side, side, 1], name="images")
        layers, channels = [], 1
        for i, n_out in enumerate(filters, start=1):
            conv = Conv2D(h, 5, channels, n_out, names=(f"W_conv{i}", f"b_conv{i}"))
            pool = MaxPool(conv.output, name=f"pool{i}")
            layers += [conv, pool]
            h, channels = pool.output, n_out
        n_flat = math.prod(h.shape[1:])
        fc = FullConnected(
            tf.reshape(h, [-1, n_flat]), n_flat, n_fc, names=("W_fc1", "b_fc1")
        )
        h = fc.output
        if keep_prob is not None:
            h = tf.nn.dropout(h, rate=1.0 - keep_prob)
        readout = ReadOut(h, n_fc, n_classes, names=("W_fc2", "b_fc2"))
        return classifier_head(readout, y, [*layers, fc], var_scope.name)
