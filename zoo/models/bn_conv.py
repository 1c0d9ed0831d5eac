"""A small conv classifier with batch norm, a builder with ``scope`` and ``reuse``.

conv 5x5 -> batch norm -> ReLU -> max-pool 2x2, twice, then a softmax read-out:
``<scope>/conv1/W``, ``<scope>/bn1/gamma`` (and ``beta``, ``moving_mean``,
``moving_variance``), ``<scope>/conv2/W``, ``<scope>/bn2/...``,
``<scope>/W_RO``, ``<scope>/b_RO``. The convolutions have no bias: batch norm
subtracts it again and its ``beta`` takes its place (as in ResNet and DCGAN),
and in float32 the bias makes data-parallel towers lose 40 times more to round-off
(docs/towers.md). ``batch_norm=False`` is the ablation: the convolutions, with
their biases ``conv1/b`` and ``conv2/b``, ReLU directly, no ``bn*`` scopes. The
model of ``experiments/towers.py``, where :mod:`zoo.parallel.towers` builds it once per
device.

Usage::

    net = bn_conv_classifier(x, y, scope="net")                    # training=True
    train = zoo.training.with_updates(optimizer.minimize(net.loss))
    net_eval = bn_conv_classifier(x_test, y_test, scope="net", reuse=True,
                                  training=False)                  # moving statistics
"""

import math

import tensorflow as tf

from layers.conv import Conv2D, MaxPool
from layers.dense import ReadOut, check_size
from layers.errors import ShapeError
from layers.normalization import BatchNorm
from zoo.models.parts import builder_scope, classifier_head, input_width


def bn_conv_classifier(
    x, y, scope="bn_conv", reuse=False, training=True, filters=(16, 32), batch_norm=True
):
    """Builds the classifier under ``scope``.

    Args:
        x: square single-channel images flattened to [batch, side * side], the
            width known statically and the side divisible by 4.
        y: one-hot labels [batch, n_classes].
        scope: variable scope of the model.
        reuse: False, True or ``tf.compat.v1.AUTO_REUSE``.
        training: batch norm's mode (see :class:`layers.BatchNorm`): True
            normalizes with the batch's statistics and adds their update to
            ``UPDATE_OPS``; False uses the moving statistics; a scalar bool
            tensor chooses when run.
        filters: output channels of the two convolutions.
        batch_norm: normalize each convolution's output (the convolutions then
            have no bias); False for the ablation.

    Returns:
        :class:`zoo.models.parts.Classifier` (loss summed over the batch); its
        ``layers`` are the two convolutions then the read-out.

    Raises:
        ShapeError: the images are not square with a side divisible by 4, or a
            filter count is not a positive int.
        ZooError: ``training`` is neither a bool nor a scalar bool tensor.
        ScopeError, EagerError: as :func:`zoo.autoencoder`.
    """
    with builder_scope(scope, reuse) as var_scope:
        owner = var_scope.name
        width = input_width(owner, x, "x")
        n_classes = input_width(owner, y, "one-hot labels y")
        side = math.isqrt(width)
        if side * side != width or side % 4:
            raise ShapeError(
                f"{owner}: expected square images whose side is divisible by 4, found "
                f"{width} pixels; pad the images to such a side"
            )
        if not isinstance(filters, tuple | list) or len(filters) != 2:
            raise ShapeError(
                f"{owner}: expected filters of the two convolutions, found {filters!r}; "
                "pass e.g. filters=(16, 32)"
            )
        check_size(owner, **{f"filters[{i}]": n for i, n in enumerate(filters)})
        h, channels, convs = tf.reshape(x, [-1, side, side, 1]), 1, []
        for i, n_out in enumerate(filters, start=1):
            conv = Conv2D(
                h, 5, channels, n_out, scope=f"conv{i}",
                activation=tf.identity if batch_norm else tf.nn.relu,
                bias=not batch_norm,
            )  # fmt: skip
            h = conv.output
            if batch_norm:
                h = tf.nn.relu(BatchNorm(h, training, scope=f"bn{i}").output)
            h, channels = MaxPool(h).output, n_out
            convs.append(conv)
        n_flat = (side // 4) ** 2 * channels
        readout = ReadOut(
            tf.reshape(h, [-1, n_flat]), n_flat, n_classes, names=("W_RO", "b_RO")
        )
        return classifier_head(readout, y, convs, owner)
