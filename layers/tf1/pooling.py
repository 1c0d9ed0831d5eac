"""TF 1.15's ``tf.layers`` pooling module: max and average pooling in 1, 2 and 3
dimensions, classes and function forms."""

import tensorflow as tf

from layers.tf1.base import (
    Layer,
    function_form,
    in_channels_last,
    is_channels_first,
    nn_format,
    nn_padding,
    runs_channels_last,
    sizes,
    spatial_size,
    variant,
)


class Pooling(Layer):
    """TF 1.15's ``tf.layers.MaxPooling/AveragePooling`` over ``rank`` dimensions.

    ``pool_size`` and ``strides`` (both required) are an int or ``rank`` ints
    (a list, tuple or ``tf.TensorShape``); ``padding`` and ``data_format`` as
    :class:`Conv2D`.

    Raises:
        ZooError: a size, the padding or the data format is not one of those.
    """

    family, rank, pool = "MaxPooling/AveragePooling", None, None
    op_name = None  # the pooling op's name, TF's (``MaxPool``, ``AvgPool3D``)
    # where TF's layer pools channels-first input channels last (runs_channels_last):
    # 1-D through its backend's pool2d, 3-D always; 2-D as given
    channels_last_where = None

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last",
                 name=None, **kwargs):  # fmt: skip
        super().__init__(name=name, **kwargs)
        owner = self._base_name
        self.pool_size = sizes(owner, pool_size, self.rank, "pool_size")
        self.strides = sizes(owner, strides, self.rank, "strides")
        self.padding = nn_padding(owner, padding).lower()
        self.channels_first = is_channels_first(owner, data_format)
        self.data_format = "channels_first" if self.channels_first else "channels_last"

    def _output_shape(self, input_shape):
        shape = input_shape.as_list()
        first = 2 if self.channels_first else 1
        for i, axis in enumerate(range(first, first + self.rank)):
            window, stride = self.pool_size[i], self.strides[i]
            shape[axis] = spatial_size(shape[axis], window, stride, self.padding.upper())
        return tf.TensorShape(shape)

    def call(self, inputs):
        if self.channels_first and runs_channels_last(self.channels_last_where):
            return in_channels_last(lambda x: self._pool(x, False), inputs, self.rank)
        return self._pool(inputs, self.channels_first)

    def _pool(self, inputs, channels_first):
        return self.pool(
            inputs,
            self.pool_size,
            self.strides,
            self.padding.upper(),
            data_format=nn_format(self.rank, channels_first),
            name=self.op_name,
        )


CHANNELS_LAST_WHERE = {1: "without a GPU", 2: None, 3: "always"}  # by rank
MaxPooling1D, MaxPooling2D, MaxPooling3D = (
    variant(Pooling, f"MaxPooling{n}D", n, pool=staticmethod(pool), op_name=op_name,
            channels_last_where=CHANNELS_LAST_WHERE[n])  # fmt: skip
    for n, pool, op_name in (
        (1, tf.nn.max_pool1d, "MaxPool"),
        (2, tf.nn.max_pool2d, "MaxPool"),
        (3, tf.nn.max_pool3d, "MaxPool3D"),
    )
)
AveragePooling1D, AveragePooling2D, AveragePooling3D = (
    variant(Pooling, f"AveragePooling{n}D", n, pool=staticmethod(pool), op_name=op_name,
            channels_last_where=CHANNELS_LAST_WHERE[n])  # fmt: skip
    for n, pool, op_name in (
        (1, tf.nn.avg_pool1d, "AvgPool"),
        (2, tf.nn.avg_pool2d, "AvgPool"),
        (3, tf.nn.avg_pool3d, "AvgPool3D"),
    )
)


max_pooling1d = function_form(MaxPooling1D)
max_pooling2d = function_form(MaxPooling2D)
max_pooling3d = function_form(MaxPooling3D)
average_pooling1d = function_form(AveragePooling1D)
average_pooling2d = function_form(AveragePooling2D)
average_pooling3d = function_form(AveragePooling3D)
