"""TF 1.15's ``tf.layers`` convolutional module: ``Conv1D/2D/3D``,
``Conv2DTranspose/3DTranspose``, ``SeparableConv1D/2D`` and their function forms."""

import tensorflow as tf

from layers.checks import int_problem, int_value, require
from layers.errors import ShapeError
from layers.tf1.base import (
    ZEROS,
    Projection,
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


class Convolution(Projection):
    """TF 1.15's ``tf.layers.Conv1D/2D/3D`` (``rank`` spatial dimensions).

    ``kernel`` is ``kernel_size + [input channels, filters]``, ``bias`` [filters].
    ``kernel_size``, ``strides`` and ``dilation_rate`` are an int or ``rank``
    ints (a list, tuple or ``tf.TensorShape``); ``padding`` is ``"valid"`` or
    ``"same"``; ``data_format`` ``"channels_last"`` or ``"channels_first"``. The
    other arguments as :class:`Dense`.

    Raises:
        ZooError: a size, the padding or the data format is not one of those.
        ShapeError: the input is not of rank ``rank + 2`` with known channels
            (TensorFlow's words: "The channel dimension of the inputs should be
            defined").
    """

    family, rank, ranked_defaults = "Conv1D/2D/3D", None, ("strides", "dilation_rate")

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
        self.filters = int_value(filters)
        self.kernel_size = sizes(owner, kernel_size, self.rank, "kernel_size")
        self.strides = sizes(owner, strides, self.rank, "strides")
        self.dilation_rate = sizes(owner, dilation_rate, self.rank, "dilation_rate")
        self.padding = nn_padding(owner, padding).lower()
        self.channels_first = is_channels_first(owner, data_format)
        self.data_format = "channels_first" if self.channels_first else "channels_last"
        self._project(
            activation,
            use_bias,
            kernel=(kernel_initializer, kernel_regularizer, kernel_constraint),
            bias=(bias_initializer, bias_regularizer, bias_constraint),
        )

    @property
    def _format(self):
        return nn_format(self.rank, self.channels_first)

    @property
    def _spatial_axes(self):
        first = 2 if self.channels_first else 1
        return range(first, first + self.rank)

    def _channels(self, input_shape):
        """The input's channels. Raises ShapeError: another rank, or unknown."""
        rank, axis = self.rank + 2, 1 if self.channels_first else -1
        size = tf.compat.dimension_value(input_shape[axis]) if input_shape.rank else None
        if input_shape.rank != rank or size is None:
            owner = self._scope.name if self._scope else self._base_name
            raise ShapeError(
                f"{owner}: expected an input of rank {rank} with known channels. The "
                "channel dimension of the inputs should be defined. The input_shape "
                f"received is {input_shape}; reshape the input, or give it a static "
                "shape (a placeholder of that shape)"
            )
        return size

    def _kernel_shape(self, channels):
        return [*self.kernel_size, channels, self.filters]

    def build(self, input_shape):
        shape = self._kernel_shape(self._channels(input_shape))
        self.kernel = self.add_weight("kernel", shape, **self._settings_of("kernel"))
        self._make_bias(self.filters)

    def _size(self, size, i):
        """The output size along the ``i``-th spatial axis for an input size ``size``."""
        return spatial_size(size, self.kernel_size[i], self.strides[i],
                            self.padding.upper(), self.dilation_rate[i])  # fmt: skip

    def _output_shape(self, input_shape):
        self._channels(input_shape)
        shape = input_shape.as_list()
        for i, axis in enumerate(self._spatial_axes):
            shape[axis] = self._size(shape[axis], i)
        shape[1 if self.channels_first else -1] = self.filters
        return tf.TensorShape(shape)

    def call(self, inputs):
        outputs = tf.nn.convolution(
            inputs,
            self.kernel,
            strides=self.strides,
            padding=self.padding.upper(),
            dilations=self.dilation_rate,
            data_format=self._format,
            name=type(self).__name__,  # the op's name, TF's (Conv2D)
        )
        return self._finish(outputs, self._format)


Conv1D, Conv2D, Conv3D = (variant(Convolution, f"Conv{n}D", n) for n in (1, 2, 3))


class Transposed(Convolution):
    """TF 1.15's ``tf.layers.Conv2DTranspose/3DTranspose``: the gradient of a
    convolution.

    ``kernel`` is ``kernel_size + [filters, input channels]``; each spatial size
    grows to ``size * stride`` (``"same"``) or ``size * stride + max(kernel -
    stride, 0)`` (``"valid"``). The arguments as :class:`Conv2D`, without
    ``dilation_rate``.
    """

    family, ranked_defaults = "Conv2DTranspose/3DTranspose", ("strides",)
    channels_last_where = None  # see runs_channels_last

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
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

    def _kernel_shape(self, channels):
        return [*self.kernel_size, self.filters, channels]

    def _size(self, size, i):
        if size is None:
            return None
        kernel, stride = self.kernel_size[i], self.strides[i]
        grown = size * stride
        return grown if self.padding == "same" else grown + max(kernel - stride, 0)

    def call(self, inputs):
        """The output's size comes from the input's static sizes where they are known
        (as TensorFlow 2's legacy ``Conv2DTranspose``: no shape ops for grappler to
        fold), from its dynamic shape where not (TF 1.15 read every size there)."""
        dynamic, static = tf.shape(inputs), inputs.shape.as_list()
        sizes = [
            self._size(dynamic[axis] if static[axis] is None else static[axis], i)
            for i, axis in enumerate(self._spatial_axes)
        ]
        if self.channels_first and runs_channels_last(self.channels_last_where):
            outputs = in_channels_last(
                lambda x: self._transposed(x, dynamic[0], sizes, False), inputs, self.rank
            )
        else:
            outputs = self._transposed(inputs, dynamic[0], sizes, self.channels_first)
        outputs.set_shape(self._output_shape(inputs.shape))
        return self._finish(outputs, self._format)

    def _transposed(self, inputs, batch, sizes, channels_first):
        """The transposed convolution of ``inputs`` to ``sizes``, in either format."""
        shape = (
            [batch, self.filters, *sizes]
            if channels_first
            else [batch, *sizes, self.filters]
        )
        return tf.nn.conv_transpose(
            inputs,
            self.kernel,
            tf.stack(shape),
            strides=self.strides,
            padding=self.padding.upper(),
            data_format=nn_format(self.rank, channels_first),
            name=f"conv{self.rank}d_transpose",
        )


# TF's Conv2DTranspose runs channels-first input channels last without a GPU (its
# backend's conv2d_transpose); its Conv3DTranspose calls the op as given
Conv2DTranspose, Conv3DTranspose = (
    variant(Transposed, f"Conv{n}DTranspose", n, channels_last_where=where)
    for n, where in ((2, "without a GPU"), (3, None))
)


class Separable(Convolution):
    """TF 1.15's ``tf.layers.SeparableConv1D/2D``: a depthwise then a pointwise
    (1x1) convolution.

    Variables ``depthwise_kernel`` ``kernel_size + [channels, depth_multiplier]``,
    ``pointwise_kernel`` ``[1] * rank + [channels * depth_multiplier, filters]``
    and ``bias`` [filters]; each ``depthwise_*``/``pointwise_*`` argument goes to
    its variable. The other arguments as :class:`Conv2D`.
    """

    family = "SeparableConv1D/2D"

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1, depth_multiplier=1,
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
        self.depth_multiplier = int_value(depth_multiplier)
        self._project(
            activation,
            use_bias,
            depthwise=(depthwise_initializer, depthwise_regularizer, depthwise_constraint),
            pointwise=(pointwise_initializer, pointwise_regularizer, pointwise_constraint),
            bias=(bias_initializer, bias_regularizer, bias_constraint),
        )

    def build(self, input_shape):
        channels = self._channels(input_shape)
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel",
            [*self.kernel_size, channels, self.depth_multiplier],
            **self._settings_of("depthwise"),
        )
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel",
            [1] * self.rank + [channels * self.depth_multiplier, self.filters],
            **self._settings_of("pointwise"),
        )
        self._make_bias(self.filters)

    def call(self, inputs):
        """In one dimension, a height of 1 is added for ``tf.nn.separable_conv2d``; the
        stride and dilation along it change nothing (a kernel of height 1), so they
        equal the width's: the CPU's float16 kernel takes equal strides only."""
        flat = self.rank == 1
        strides, dilations = self.strides * (1 + flat), self.dilation_rate * (1 + flat)
        depthwise, pointwise = self.depthwise_kernel, self.pointwise_kernel
        height = self._spatial_axes[0]
        if flat:
            inputs = tf.expand_dims(inputs, height)
            depthwise, pointwise = (tf.expand_dims(k, 0) for k in (depthwise, pointwise))
        outputs = tf.nn.separable_conv2d(
            inputs,
            depthwise,
            pointwise,
            strides=(1, 1, *strides) if self.channels_first else (1, *strides, 1),
            padding=self.padding.upper(),
            data_format=nn_format(2, self.channels_first),
            dilations=dilations,
        )
        if flat:
            outputs = tf.squeeze(outputs, [height])
        return self._finish(outputs, self._format)


SeparableConv1D, SeparableConv2D = (
    variant(Separable, f"SeparableConv{n}D", n) for n in (1, 2)
)


conv1d = function_form(Conv1D)
conv2d = function_form(Conv2D)
conv3d = function_form(Conv3D)
conv2d_transpose = function_form(Conv2DTranspose)
conv3d_transpose = function_form(Conv3DTranspose)
separable_conv1d = function_form(SeparableConv1D)
separable_conv2d = function_form(SeparableConv2D)
