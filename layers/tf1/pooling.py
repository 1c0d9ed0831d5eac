"""TF 1.15's ``tf.layers`` pooling module: max and average pooling in 1 and 2
dimensions, classes and function forms."""

import tensorflow as tf

from layers.tf1.base import (
    Layer,
    function_form,
    is_channels_first,
    nn_format,
    nn_padding,
    sizes,
    variant,
)


class Pooling(Layer):
    """TF 1.15's ``tf.layers.MaxPooling/AveragePooling`` over ``rank`` dimensions.

    ``pool_size`` and ``strides`` (both required) are an int or ``rank`` ints;
    ``padding`` and ``data_format`` as :class:`Conv2D`.

    Raises:
        ZooError: a size, the padding or the data format is not one of those.
    """

    family, rank, pool = "MaxPooling/AveragePooling", None, None

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last",
                 name=None, **kwargs):  # fmt: skip
        super().__init__(name=name, **kwargs)
        owner = self._base_name
        self.pool_size = sizes(owner, pool_size, self.rank, "pool_size")
        self.strides = sizes(owner, strides, self.rank, "strides")
        self.padding = nn_padding(owner, padding)
        self.channels_first = is_channels_first(owner, data_format)

    def call(self, inputs):
        return self.pool(
            inputs,
            self.pool_size,
            self.strides,
            self.padding,
            data_format=nn_format(self.rank, self.channels_first),
        )


MaxPooling1D = variant(Pooling, "MaxPooling1D", 1, pool=staticmethod(tf.nn.max_pool1d))
MaxPooling2D = variant(Pooling, "MaxPooling2D", 2, pool=staticmethod(tf.nn.max_pool2d))
AveragePooling1D = variant(
    Pooling, "AveragePooling1D", 1, pool=staticmethod(tf.nn.avg_pool1d)
)
AveragePooling2D = variant(
    Pooling, "AveragePooling2D", 2, pool=staticmethod(tf.nn.avg_pool2d)
)


max_pooling1d = function_form(MaxPooling1D)
max_pooling2d = function_form(MaxPooling2D)
average_pooling1d = function_form(AveragePooling1D)
average_pooling2d = function_form(AveragePooling2D)
