"""TF 1.15's ``tf.layers`` core module: ``Dense``, ``Dropout``, ``Flatten``."""

import math

import tensorflow as tf

from layers.checks import int_problem, int_value, probability_problem, require
from layers.tf1.base import (
    ZEROS,
    Layer,
    Projection,
    check_training,
    function_form,
    is_channels_first,
)


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
        self.units = int_value(units)
        self._project(
            activation,
            use_bias,
            kernel=(kernel_initializer, kernel_regularizer, kernel_constraint),
            bias=(bias_initializer, bias_regularizer, bias_constraint),
        )

    def _width(self, input_shape):
        """The input's last dimension (rank at least 2)."""
        return self._dimension(input_shape, max(input_shape.rank or 0, 2), -1, "last")

    def _output_shape(self, input_shape):
        self._width(input_shape)
        return input_shape[:-1].concatenate([self.units])

    def build(self, input_shape):
        shape = [self._width(input_shape), self.units]
        self.kernel = self.add_weight("kernel", shape, **self._settings_of("kernel"))
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
    input unchanged). ``rate`` is a number or a float tensor (fed each run);
    ``noise_shape`` and ``seed`` as ``tf.nn.dropout``.

    Raises:
        ZooError: a number ``rate`` outside [0, 1), or a ``training`` of another
            kind.
    """

    def __init__(self, rate=0.5, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if not tf.is_tensor(rate):
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

    def _output_shape(self, input_shape):
        if input_shape.rank is None:
            return tf.TensorShape([None, None])
        sizes = input_shape.as_list()
        width = None if None in sizes[1:] else math.prod(sizes[1:])
        return tf.TensorShape([sizes[0] if sizes else 1, width])

    def call(self, inputs):
        rank = inputs.shape.rank
        if rank == 1:
            return tf.expand_dims(inputs, 1)
        if self.channels_first and rank > 2:
            inputs = tf.transpose(inputs, [0, *range(2, rank), 1])
        shape = self._output_shape(inputs.shape)
        width = tf.compat.dimension_value(shape[1])
        if width is not None:  # int32 as TF's, int64 for a width over int32
            return tf.reshape(inputs, tf.constant([-1, width]))
        batch = tf.shape(inputs, out_type=tf.int64)[0]  # a batch over int32 too
        outputs = tf.reshape(inputs, tf.stack([batch, tf.constant(-1, tf.int64)]))
        outputs.set_shape(shape)
        return outputs


dense = function_form(Dense)
dropout = function_form(Dropout, training=True)
flatten = function_form(
    Flatten, last=("data_format",), defaults={"data_format": "channels_last"}
)
