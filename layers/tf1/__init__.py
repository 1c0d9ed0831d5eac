"""TensorFlow 1.15's ``tf.layers`` on ``tf.compat.v1.get_variable``, for Keras 3 days.

Under Keras 3, ``tf.compat.v1.layers.dense`` raises "`dense` is not available
with Keras 3". This module is that API again, with TF 1.15's signatures and
defaults, built on :mod:`layers.variables` rather than on Keras:

* variables ``<scope>/kernel``, ``<scope>/bias``, ``<scope>/gamma`` ...; a layer
  without ``name`` gets its class's name made unique in the enclosing variable
  scope (``dense``, ``dense_1``); the function forms with ``name="fc"`` use ``fc``
  itself, and ``reuse=True`` (or an enclosing ``variable_scope(..., reuse=True)``)
  shares it; a layer object shares its variables on every call;
* ``training`` a Python bool or a scalar bool tensor; the batch-norm update in
  ``GraphKeys.UPDATE_OPS``; regularizers handed to ``get_variable``, so
  ``tf.compat.v1.losses.get_regularization_losses()`` holds each once per variable;
* graph mode, or eagerly inside a sharing template (``zoo.share``,
  ``zoo.ZooLayer``); plain eager execution raises :class:`layers.errors.EagerError`.

``zoo.compat.install()`` makes ``tf.compat.v1.layers`` this package. Its modules
follow TF 1.15's own map (``tensorflow/python/layers/``): :mod:`~layers.tf1.base`
(``Layer``), :mod:`~layers.tf1.core` (``Dense``, ``Dropout``, ``Flatten``),
:mod:`~layers.tf1.convolutional`, :mod:`~layers.tf1.normalization`,
:mod:`~layers.tf1.pooling`; every name is exported here too. The RNN cells
(``tf.nn.rnn_cell``) are the submodule :mod:`~layers.tf1.rnn_cell`, contrib's
stacked bidirectional RNNs :mod:`~layers.tf1.rnn`.

Usage::

    from layers import tf1
    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 28, 28, 1])
        h = tf1.conv2d(x, 32, 5, padding="same", activation=tf.nn.relu)  # conv2d/kernel
        h = tf1.batch_normalization(h, training=True)       # batch_normalization/gamma
        logits = tf1.dense(tf1.flatten(h), 10)               # dense/kernel, dense/bias
"""

from layers.tf1 import rnn, rnn_cell  # noqa: F401  (submodules, not tf.layers names)
from layers.tf1.base import InputSpec, Layer
from layers.tf1.convolutional import (
    Conv1D,
    Conv2D,
    Conv2DTranspose,
    Conv3D,
    Conv3DTranspose,
    SeparableConv1D,
    SeparableConv2D,
    conv1d,
    conv2d,
    conv2d_transpose,
    conv3d,
    conv3d_transpose,
    separable_conv1d,
    separable_conv2d,
)
from layers.tf1.core import Dense, Dropout, Flatten, dense, dropout, flatten
from layers.tf1.normalization import BatchNormalization, batch_normalization
from layers.tf1.pooling import (
    AveragePooling1D,
    AveragePooling2D,
    AveragePooling3D,
    MaxPooling1D,
    MaxPooling2D,
    MaxPooling3D,
    average_pooling1d,
    average_pooling2d,
    average_pooling3d,
    max_pooling1d,
    max_pooling2d,
    max_pooling3d,
)

__all__ = [
    "AveragePooling1D", "AveragePooling2D", "AveragePooling3D", "BatchNormalization",
    "Conv1D", "Conv2D", "Conv2DTranspose", "Conv3D", "Conv3DTranspose", "Dense",
    "Dropout", "Flatten", "InputSpec", "Layer", "MaxPooling1D", "MaxPooling2D",
    "MaxPooling3D", "SeparableConv1D", "SeparableConv2D", "average_pooling1d",
    "average_pooling2d", "average_pooling3d", "batch_normalization", "conv1d", "conv2d",
    "conv2d_transpose", "conv3d", "conv3d_transpose", "dense", "dropout", "flatten",
    "max_pooling1d", "max_pooling2d", "max_pooling3d", "separable_conv1d",
    "separable_conv2d",
]  # fmt: skip
