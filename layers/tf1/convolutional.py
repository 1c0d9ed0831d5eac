"""TF 1.15's ``tf.layers`` convolutional module: ``Conv1D/2D/3D``,
``Conv2DTranspose``, ``SeparableConv2D`` and their function forms."""

import tensorflow as tf

from layers.checks import int_problem, require
from layers.tf1.base import (
    ZEROS,
    Projection,
    function_form,
    is_channels_first,
    nn_format,
    nn_padding,
    settings,
    sizes,
    variant,
)


class Convolution(Projection):
    """TF 1.15's ``tf.layers.Conv1D/2D/3D`` (``rank`` spatial dimensions).

    ``kernel`` is ``kernel_size + [input channels, filters]``, ``bias`` [filters].
    ``kernel_size``, ``strides`` and ``dilation_rate`` are an int or ``rank``
    ints; ``padding`` is ``"valid"`` or ``"same"``; ``data_format``
    ``"channels_last"`` or ``"channels_first"``. The other arguments as
    :class:`Dense`.

    Raises:
        ZooError: a size, the padding or the data format is not one of those.
        ShapeError: the input is not of rank ``rank + 2`` with known channels.
    """

    family, rank = "Conv1D/2D/3D", None

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1, activation=None,
                 use_bias=True, kernel_initializer=None, bias_initializer=ZEROS,
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                 **kwargs):  # fmt: skip
        super().__init__(
            trainable, name, activity_regularizer=activity_regularizer, **kwargs
        )
        owner = self._base_name
        require(owner, int_problem(filters, name="filters"), "pass e.g. filters=32")
        self.filters = filters
        self.kernel_size = sizes(owner, kernel_size, self.rank, "kernel_size")
        self.strides = sizes(owner, strides, self.rank, "strides")
        self.dilation_rate = sizes(owner, dilation_rate, self.rank, "dilation_rate")
        self.padding = nn_padding(owner, padding)
        self.channels_first = is_channels_first(owner, data_format)
        self._project(
            activation,
            use_bias,
            (kernel_initializer, kernel_regularizer, kernel_constraint),
            (bias_initializer, bias_regularizer, bias_constraint),
        )

    @property
    def _format(self):
        return nn_format(self.rank, self.channels_first)

    def _channels(self, input_shape):
        return self._dimension(
            input_shape, self.rank + 2, 1 if self.channels_first else -1, "channels"
        )

    def build(self, input_shape):
        shape = [*self.kernel_size, self._channels(input_shape), self.filters]
        self.kernel = self.add_weight("kernel", shape, **self._kernel_settings)
        self._make_bias(self.filters)

    def call(self, inputs):
        outputs = tf.nn.convolution(
            inputs,
            self.kernel,
            strides=self.strides,
            padding=self.padding,
            dilations=self.dilation_rate,
            data_format=self._format,
        )
        return self._finish(outputs, self._format)




Conv1D, Conv2D, Conv3D = (variant(Convolution, f"Conv{n}D", n) for n in (1, 2, 3))


class Conv2DTranspose(Convolution):
    """TF 1.15's ``tf.layers.Conv2DTranspose``: the gradient of a 2-D convolution.

    ``kernel`` is ``kernel_size + [filters, input channels]``; each spatial size
    grows to ``size * stride`` (``"same"``) or ``size * stride + max(kernel -
    stride, 0)`` (``"valid"``). The arguments as :class:`Conv2D`, without
    ``dilation_rate``.
    """

    rank = 2

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", activation=None, use_bias=True,
                 kernel_initializer=None, bias_initializer=ZEROS, kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable=True, name=None, **kwargs):  # fmt: skip
        super().__init__(
            filters, kernel_size, strides, padding, data_format, 1, activation, use_bias,
            kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
            activity_regularizer, kernel_constraint, bias_constraint, trainable, name,
            **kwargs,
        )  # fmt: skip

    def build(self, input_shape):
        shape = [*self.kernel_size, self.filters, self._channels(input_shape)]
        self.kernel = self.add_weight("kernel", shape, **self._kernel_settings)
        self._make_bias(self.filters)

    def _grown(self, size, axis):
        """The output size along spatial ``axis`` for an input size ``size``."""
        if size is None:
            return None
        kernel, stride = self.kernel_size[axis], self.strides[axis]
        grown = size * stride
        return grown if self.padding == "SAME" else grown + max(kernel - stride, 0)

    def call(self, inputs):
        spatial = (2, 3) if self.channels_first else (1, 2)
        dynamic = tf.shape(inputs)
        sizes = [self._grown(dynamic[axis], i) for i, axis in enumerate(spatial)]
        known = [self._grown(inputs.shape[axis], i) for i, axis in enumerate(spatial)]
        channels = [self.filters]

        def arrange(batch, heights_widths):
            if self.channels_first:
                return [batch, *channels, *heights_widths]
            return [batch, *heights_widths, *channels]

        outputs = tf.nn.conv2d_transpose(
            inputs,
            self.kernel,
            tf.stack(arrange(dynamic[0], sizes)),
            strides=self.strides,
            padding=self.padding,
            data_format=self._format,
        )
        outputs.set_shape(arrange(inputs.shape[0], known))
        return self._finish(outputs, self._format)


class SeparableConv2D(Convolution):
    """TF 1.15's ``tf.layers.SeparableConv2D``: a depthwise then a 1x1 convolution.

    Variables ``depthwise_kernel`` ``kernel_size + [channels, depth_multiplier]``,
    ``pointwise_kernel`` [1, 1, channels * depth_multiplier, filters] and
    ``bias`` [filters]; each ``depthwise_*``/``pointwise_*`` argument goes to its
    variable. The other arguments as :class:`Conv2D`.
    """

    rank = 2

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", dilation_rate=(1, 1), depth_multiplier=1,
                 activation=None, use_bias=True, depthwise_initializer=None,
                 pointwise_initializer=None, bias_initializer=ZEROS,
                 depthwise_regularizer=None, pointwise_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                 trainable=True, name=None, **kwargs):  # fmt: skip
        super().__init__(
            filters, kernel_size, strides, padding, data_format, dilation_rate,
            activation, use_bias, bias_initializer=bias_initializer,
            bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
            bias_constraint=bias_constraint, trainable=trainable, name=name, **kwargs,
        )  # fmt: skip
        require(
            self._base_name,
            int_problem(depth_multiplier, name="depth_multiplier"),
            "pass e.g. depth_multiplier=1",
        )
        self.depth_multiplier = depth_multiplier
        self._depthwise_settings = settings(
            depthwise_initializer, depthwise_regularizer, depthwise_constraint
        )
        self._pointwise_settings = settings(
            pointwise_initializer, pointwise_regularizer, pointwise_constraint
        )

    def build(self, input_shape):
        channels = self._channels(input_shape)
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel",
            [*self.kernel_size, channels, self.depth_multiplier],
            **self._depthwise_settings,
        )
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel",
            [1, 1, channels * self.depth_multiplier, self.filters],
            **self._pointwise_settings,
        )
        self._make_bias(self.filters)

    def call(self, inputs):
        strides = (1, 1, *self.strides) if self.channels_first else (1, *self.strides, 1)
        outputs = tf.nn.separable_conv2d(
            inputs,
            self.depthwise_kernel,
            self.pointwise_kernel,
            strides=strides,
            padding=self.padding,
            data_format=self._format,
            dilations=self.dilation_rate,
        )
        return self._finish(outputs, self._format)


conv1d = function_form(Conv1D)
conv2d = function_form(Conv2D)
conv3d = function_form(Conv3D)
conv2d_transpose = function_form(Conv2DTranspose)
separable_conv2d = function_form(SeparableConv2D)
