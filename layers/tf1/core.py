"""TF 1.15's ``tf.layers`` core module: ``Dense``, ``Dropout``, ``Flatten``."""

import math

import tensorflow as tf

from layers.checks import int_problem, probability_problem, require
from layers.normalization import check_training
from layers.tf1.base import ZEROS, Layer, Projection, function_form, is_channels_first


class Dense(Projection):
    """TF 1.15's ``tf.layers.Dense``: ``activation(inputs @ kernel + bias)``.

    ``kernel`` is [input width, units]; an input of rank above 2 is multiplied
    along its last axis. See :class:`Layer` for ``trainable``, ``name`` and
    ``activity_regularizer``; each ``*_initializer/_regularizer/_constraint``
    goes to ``get_variable`` for that variable (initializer None: Glorot uniform).

    Raises:
        ZooError: ``units`` is not a positive int.
        ShapeError: the input's last dimension is unknown.
    """

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=ZEROS, kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 trainable=True, name=None, **kwargs):  # fmt: skip
        super().__init__(
            trainable, name, activity_regularizer=activity_regularizer, **kwargs
        )
        require(self._base_name, int_problem(units, name="units"), "pass e.g. units=10")
        self.units = units
        self._project(
            activation,
            use_bias,
            (kernel_initializer, kernel_regularizer, kernel_constraint),
            (bias_initializer, bias_regularizer, bias_constraint),
        )

    def build(self, input_shape):
        width = self._dimension(input_shape, max(input_shape.rank or 0, 2), -1, "last")
        shape = [width, self.units]
        self.kernel = self.add_weight("kernel", shape, **self._kernel_settings)
        self._make_bias(self.units)

    def call(self, inputs):
        if inputs.shape.rank > 2:
            outputs = tf.tensordot(inputs, self.kernel, [[inputs.shape.rank - 1], [0]])
        else:
            outputs = tf.matmul(inputs, self.kernel)
        return self._finish(outputs)


class Dropout(Layer):
    """TF 1.15's ``tf.layers.Dropout``: in training, zeroes each element with
    probability ``rate`` and scales the rest by ``1 / (1 - rate)``.

    ``training`` is a Python bool or a scalar bool tensor (default False: the
    input unchanged). ``noise_shape`` and ``seed`` as ``tf.nn.dropout``.

    Raises:
        ZooError: ``rate`` outside [0, 1), or a ``training`` of another kind.
    """

    def __init__(self, rate=0.5, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        problem = probability_problem(rate, zero=True, one=False, name="rate")
        require(self._base_name, problem, "pass e.g. rate=0.5")
        self.rate, self.noise_shape, self.seed = rate, noise_shape, seed

    def call(self, inputs, training=False):
        check_training(self.scope_name, training)

        def dropped():
            return tf.nn.dropout(inputs, rate=self.rate, noise_shape=self.noise_shape,
                                 seed=self.seed)  # fmt: skip

        if training is True:
            return dropped()
        if training is False:
            return tf.identity(inputs)
        return tf.cond(training, dropped, lambda: tf.identity(inputs))


class Flatten(Layer):
    """TF 1.15's ``tf.layers.Flatten``: [batch, ...] to [batch, product of the rest].

    With ``data_format="channels_first"`` the channels are moved last first, so
    both formats flatten in the same order.
    """

    def __init__(self, data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.channels_first = is_channels_first(self._base_name, data_format)

    def call(self, inputs):
        rank = inputs.shape.rank
        if rank == 1:
            return tf.expand_dims(inputs, 1)
        if self.channels_first and rank > 2:
            inputs = tf.transpose(inputs, [0, *range(2, rank), 1])
        rest = inputs.shape[1:]
        if rest.is_fully_defined():
            return tf.reshape(inputs, [-1, math.prod(rest)])
        return tf.reshape(inputs, tf.stack([tf.shape(inputs)[0], -1]))


dense = function_form(Dense)
dropout = function_form(Dropout, training=True)
flatten = function_form(Flatten, last=("data_format",))
