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

``zoo.compat.install()`` makes ``tf.compat.v1.layers`` this module.

Usage::

    from layers import tf1
    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 28, 28, 1])
        h = tf1.conv2d(x, 32, 5, padding="same", activation=tf.nn.relu)  # conv2d/kernel
        h = tf1.batch_normalization(h, training=True)       # batch_normalization/gamma
        logits = tf1.dense(tf1.flatten(h), 10)               # dense/kernel, dense/bias
"""

import inspect
import math
import re

import tensorflow as tf

from layers.checks import (
    choice_problem,
    int_problem,
    number_problem,
    probability_problem,
    require,
)
from layers.errors import ShapeError, ZooError
from layers.normalization import check_training, moving_statistics_update
from layers.variables import (
    at_least_float32,
    full_name,
    in_dtype_of,
    require_graph,
    translate_error,
)

ZEROS = tf.compat.v1.zeros_initializer()
ONES = tf.compat.v1.ones_initializer()
UNSUPPORTED = "use tf_keras (TF_USE_LEGACY_KERAS=1) for this option, or leave it out"

__all__ = [
    "AveragePooling1D", "AveragePooling2D", "BatchNormalization", "Conv1D", "Conv2D",
    "Conv2DTranspose", "Conv3D", "Dense", "Dropout", "Flatten", "Layer", "MaxPooling1D",
    "MaxPooling2D", "SeparableConv2D", "average_pooling1d", "average_pooling2d",
    "batch_normalization", "conv1d", "conv2d", "conv2d_transpose", "conv3d", "dense",
    "dropout", "flatten", "max_pooling1d", "max_pooling2d", "separable_conv2d",
]  # fmt: skip


def snake_case(class_name):
    """``"Conv2DTranspose"`` -> ``"conv2d_transpose"``: TF's default layer names."""
    words = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", class_name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", words).lower()


class Layer:
    """TF 1.15's ``tf.layers.Layer``: a name, a variable scope, variables made on the
    first call and shared on every later one.

    Args:
        trainable: whether the variables join ``TRAINABLE_VARIABLES``.
        name: the layer's name; its scope is this name made unique in the
            enclosing variable scope (``fc``, ``fc_1``); None: the class's name
            in snake case (``dense``).
        dtype: the variables' dtype; None takes the input's.
        activity_regularizer: None, or a function ``outputs -> scalar``; its
            value divided by the batch size joins ``REGULARIZATION_LOSSES``.
        **kwargs: only what the function forms pass: ``_scope`` (this exact
            scope) and ``_reuse``.

    Raises:
        ZooError: another keyword argument.
    """

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        self._base_name = name or snake_case(type(self).__name__)
        scope, self._reuse = kwargs.pop("_scope", None), kwargs.pop("_reuse", None)
        self.activity_regularizer = kwargs.pop("activity_regularizer", None)
        require(
            self._base_name,
            f"expected TF 1.15's arguments, found {sorted(kwargs)}" if kwargs else None,
            f"see the signature of layers.tf1.{type(self).__name__}",
        )
        self.trainable, self.built, self.dtype = trainable, False, dtype
        self._scope = None
        if scope:
            with tf.compat.v1.variable_scope(scope) as captured:
                self._scope = captured
        self._trainable_weights, self._non_trainable_weights, self._updates = [], [], []

    @property
    def name(self):
        """The layer's name (its scope's last part once it was called)."""
        return self._scope.name.split("/")[-1] if self._scope else self._base_name

    @property
    def scope_name(self):
        """The full variable scope of the layer's variables (after the first call)."""
        if self._scope is None:
            raise ZooError(
                f"{self._base_name}: expected a layer that was called, found none yet; "
                "call it on an input first, the scope is chosen then"
            )
        return self._scope.name

    @property
    def trainable_weights(self):
        """The trainable variables, in the order they were made."""
        return list(self._trainable_weights)

    @property
    def non_trainable_weights(self):
        """The variables that are not trained (moving statistics)."""
        return list(self._non_trainable_weights)

    @property
    def weights(self):
        """Trainable then non-trainable variables, as TF 1.15 lists them."""
        return self.trainable_weights + self.non_trainable_weights

    trainable_variables, non_trainable_variables = trainable_weights, non_trainable_weights
    variables = weights

    @property
    def updates(self):
        """The update ops of every call (batch normalization in training)."""
        return list(self._updates)

    def __call__(self, inputs, *args, **kwargs):
        """Builds the variables on the first call, then applies the layer.

        Raises:
            EagerError: in plain eager execution, outside a sharing template.
            ScopeError: the variables exist and reuse is off, or reuse is on and
                they do not exist (TensorFlow's own words are in the message).
        """
        if self.has_variables():  # refused before its default name is taken
            require_graph(self._scope.name if self._scope else self._base_name)
        if self._scope is None:
            opened = (
                tf.compat.v1.variable_scope(self._base_name)
                if self._reuse
                else tf.compat.v1.variable_scope(None, default_name=self._base_name)
            )
            with opened as captured:
                self._scope = captured
        reuse = self.built or self._reuse
        with tf.compat.v1.variable_scope(
            self._scope, reuse=reuse, auxiliary_name_scope=False
        ), tf.compat.v1.name_scope(self._scope.original_name_scope or None):
            inputs = tf.convert_to_tensor(inputs)
            if not self.built:
                self.dtype = tf.as_dtype(self.dtype or inputs.dtype.base_dtype)
                self.build(inputs.shape)
                self.built = True
            outputs = self.call(self._cast_inputs(inputs), *args, **kwargs)
            if self.activity_regularizer is not None:  # a float32 loss under a policy
                loss = self.activity_regularizer(at_least_float32(outputs))
                batch = tf.cast(tf.shape(outputs)[0], loss.dtype)
                tf.compat.v1.add_to_collection(
                    tf.compat.v1.GraphKeys.REGULARIZATION_LOSSES, loss / batch
                )
        return outputs

    apply = __call__

    @classmethod
    def has_variables(cls):
        """Whether the layer makes variables (its class defines ``build``)."""
        return cls.build is not Layer.build

    def build(self, input_shape):
        """Makes the layer's variables (none here)."""

    def _cast_inputs(self, inputs):
        """The inputs as :meth:`call` takes them: here as they are."""
        return inputs

    def add_weight(self, name, shape, dtype=None, initializer=None, regularizer=None,
                   trainable=True, constraint=None):  # fmt: skip
        """Creates or reuses ``<scope>/<name>`` with ``tf.compat.v1.get_variable``.

        Args:
            name: the variable's name in the layer's scope.
            shape: list of ints.
            dtype: None for the layer's.
            initializer: None for the scope's (TF's default: Glorot uniform).
            regularizer: None, or ``variable -> scalar``; in a graph its loss joins
                ``REGULARIZATION_LOSSES`` once, when the variable is created.
            trainable: False for statistics that are not trained.
            constraint: None, or a projection applied after optimizer updates.

        Returns:
            The variable.
        """
        owner = self._scope.name
        require_graph(owner)  # a subclass may make variables outside ``build``
        trainable = trainable and self.trainable
        try:
            variable = tf.compat.v1.get_variable(
                name, shape, dtype or self.dtype, initializer=initializer,
                regularizer=regularizer,
                trainable=trainable, constraint=constraint,
            )  # fmt: skip
        except ValueError as err:
            raise with_tensorflow_words(owner, name, shape, err) from None
        (self._trainable_weights if trainable else self._non_trainable_weights).append(
            variable
        )
        return variable

    add_variable = add_weight

    def _dimension(self, input_shape, rank, axis, what):
        """The static size of ``axis`` of an input of ``rank`` dimensions.

        Raises:
            ShapeError: another rank, or that dimension is unknown.
        """
        if input_shape.rank != rank or input_shape[axis] is None:
            raise ShapeError(
                f"{self._scope.name}: expected an input of rank {rank} with a known "
                f"{what} dimension, found shape {input_shape}; reshape the input, or "
                "give it a static shape (a placeholder of that shape)"
            )
        return int(input_shape[axis])


def with_tensorflow_words(owner, name, shape, err):
    """The zoo error for TensorFlow's variable-store ``err``, TensorFlow's words kept.

    Returns:
        A :class:`layers.errors.ScopeError` or ``ShapeError`` whose message ends
        with TensorFlow's first line, or ``err`` itself when it is another error.
    """
    zoo_error = translate_error(owner, full_name(name), list(shape), err)
    if zoo_error is err:
        return err
    return type(zoo_error)(f"{zoo_error} (TensorFlow: {str(err).splitlines()[0]})")


def settings(initializer=None, regularizer=None, constraint=None):
    """One variable's ``add_weight`` arguments, from a layer's ``<variable>_*`` ones."""
    return dict(initializer=initializer, regularizer=regularizer, constraint=constraint)


def _sizes(owner, value, rank, what):
    """``value`` (an int or ``rank`` ints, each >= 1) as a tuple of ``rank`` ints."""
    values = tuple(value) if isinstance(value, (list, tuple)) else (value,) * rank
    problems = [int_problem(item, name=what) for item in values]
    if len(values) != rank:
        problems = [f"expected {what} to be an int or {rank} ints, found {value!r}"]
    require(owner, next(filter(None, problems), None), f"pass e.g. {what}=1")
    return values


def _padding(owner, padding):
    """``"valid"`` or ``"same"`` in upper case, as ``tf.nn`` takes it."""
    padding = padding.lower() if isinstance(padding, str) else padding
    require(owner, choice_problem(padding, ("valid", "same"), "padding"), 'pass "same"')
    return padding.upper()


def _channels_first(owner, data_format):
    """True for ``"channels_first"``, False for ``"channels_last"`` (or None)."""
    data_format = data_format or "channels_last"
    choices = ("channels_last", "channels_first")
    problem = choice_problem(data_format, choices, "data_format")
    require(owner, problem, 'pass "channels_last"')
    return data_format == "channels_first"


def _nn_format(rank, channels_first):
    """``tf.nn``'s data format for ``rank`` spatial dimensions: ``"NHWC"``, ``"NCW"`` ..."""
    spatial = "DHW"[-rank:]
    return f"NC{spatial}" if channels_first else f"N{spatial}C"


class _Projection(Layer):
    """A kernel, an optional bias and an activation: what Dense and the convolutions share.

    Subclasses call :meth:`_project` in ``__init__`` and :meth:`_finish` at the end
    of ``call``.
    """

    def _project(self, activation, use_bias, kernel, bias):
        """Keeps the activation and each (initializer, regularizer, constraint)."""
        self.activation, self.use_bias = activation, use_bias
        self._kernel_settings, self._bias_settings = settings(*kernel), settings(*bias)
        self.kernel = self.bias = None

    def _cast_inputs(self, inputs):
        """The inputs in the dtype the weights are read in: a precision policy's
        compute dtype (``zoo.training.precision``), as the zoo's layers do."""
        return in_dtype_of(inputs, self.weights[0])

    def _make_bias(self, width):
        if self.use_bias:
            self.bias = self.add_weight("bias", [width], **self._bias_settings)

    def _finish(self, outputs, data_format=None):
        """Adds the bias (on the channels of ``data_format``), applies the activation."""
        if self.bias is not None:
            outputs = tf.nn.bias_add(outputs, self.bias, data_format=data_format)
        return outputs if self.activation is None else self.activation(outputs)


class Dense(_Projection):
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


class _Convolution(_Projection):
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
        self.kernel_size = _sizes(owner, kernel_size, self.rank, "kernel_size")
        self.strides = _sizes(owner, strides, self.rank, "strides")
        self.dilation_rate = _sizes(owner, dilation_rate, self.rank, "dilation_rate")
        self.padding = _padding(owner, padding)
        self.channels_first = _channels_first(owner, data_format)
        self._project(
            activation,
            use_bias,
            (kernel_initializer, kernel_regularizer, kernel_constraint),
            (bias_initializer, bias_regularizer, bias_constraint),
        )

    @property
    def _format(self):
        return _nn_format(self.rank, self.channels_first)

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


def _variant(base, name, rank, **attributes):
    """The subclass ``name`` of ``base`` for ``rank`` spatial dimensions, TF's name
    written into its docstring in place of ``base.family``."""
    namespace = {"__doc__": base.__doc__.replace(base.family, name), "__module__": __name__,
                 "__qualname__": name, "rank": rank, **attributes}  # fmt: skip
    return type(name, (base,), namespace)


Conv1D, Conv2D, Conv3D = (_variant(_Convolution, f"Conv{n}D", n) for n in (1, 2, 3))


class Conv2DTranspose(_Convolution):
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


class SeparableConv2D(_Convolution):
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


class BatchNormalization(Layer):
    """TF 1.15's ``tf.layers.BatchNormalization``, over the ``axis`` (the features).

    Variables ``gamma`` (if ``scale``), ``beta`` (if ``center``), ``moving_mean``
    and ``moving_variance`` (not trained). Called with ``training`` True (or a
    bool tensor fed True), it normalizes with the batch's mean and biased
    variance and moves ``moving := moving - (1 - momentum) * (moving - batch)``
    by one op in ``GraphKeys.UPDATE_OPS`` and :attr:`updates` (fed False: the
    moving statistics normalize and stay as they are); with False, the moving
    statistics normalize and nothing is added. As in TF 1.15, where its fused
    kernel would run (``fused`` not False, rank 4 or 5, features on axis 1 or
    last) the moving variance moves toward the unbiased batch variance; the
    output equals the fused kernel's up to round-off.

    Raises:
        ZooError: ``renorm``, ``virtual_batch_size`` or ``adjustment`` (not
            provided), ``momentum`` outside [0, 1], ``epsilon`` not above 0, or
            ``training`` neither a bool nor a scalar bool tensor.
        ShapeError: the input's rank or a normalized dimension is unknown.
    """

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer=ZEROS, gamma_initializer=ONES,
                 moving_mean_initializer=ZEROS, moving_variance_initializer=ONES,
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, renorm=False, renorm_clipping=None,
                 renorm_momentum=0.99, fused=None, trainable=True, virtual_batch_size=None,
                 adjustment=None, name=None, **kwargs):  # fmt: skip
        super().__init__(trainable, name, **kwargs)
        owner = self._base_name
        for option, value in (("renorm", renorm), ("renorm_clipping", renorm_clipping),
                              ("virtual_batch_size", virtual_batch_size),
                              ("adjustment", adjustment)):  # fmt: skip
            require(owner, None if not value else f"expected no {option}, found {value!r}",
                    UNSUPPORTED)  # fmt: skip
        require(owner, probability_problem(momentum, zero=True, name="momentum"),
                "pass e.g. momentum=0.99")  # fmt: skip
        require(owner, number_problem(epsilon, 0, low_open=True, name="epsilon"),
                "pass e.g. epsilon=1e-3")  # fmt: skip
        self.axis, self.momentum, self.epsilon = axis, momentum, epsilon
        self.center, self.scale, self.fused = center, scale, fused
        self._settings = {
            "gamma": settings(gamma_initializer, gamma_regularizer, gamma_constraint),
            "beta": settings(beta_initializer, beta_regularizer, beta_constraint),
            "moving_mean": settings(moving_mean_initializer),
            "moving_variance": settings(moving_variance_initializer),
        }
        self.gamma = self.beta = None

    def build(self, input_shape):
        rank = input_shape.rank
        axes = [self.axis] if isinstance(self.axis, int) else list(self.axis)
        if rank is None or any(input_shape[axis] is None for axis in axes):
            raise ShapeError(
                f"{self._scope.name}: expected an input whose axis {self.axis} is known, "
                f"found shape {input_shape}; give the input a static shape"
            )
        self._axes = sorted(axis % rank for axis in axes)
        sizes = [int(input_shape[axis]) for axis in self._axes]
        self._shape = [input_shape[i] if i in self._axes else 1 for i in range(rank)]
        params = sizes if len(sizes) == 1 else self._shape
        if self.scale:
            self.gamma = self.add_weight("gamma", params, **self._settings["gamma"])
        if self.center:
            self.beta = self.add_weight("beta", params, **self._settings["beta"])
        self.moving_mean, self.moving_variance = (
            self.add_weight(name, params, trainable=False, **self._settings[name])
            for name in ("moving_mean", "moving_variance")
        )

    def _fused_in_tensorflow(self, rank):
        """Whether TF 1.15 takes its fused kernel here, whose moving variance moves
        toward the unbiased batch variance (count / (count - 1) times the biased)."""
        fusable = ((4, [1]), (4, [3]), (5, [1]), (5, [4]))
        return self.fused is not False and (rank, self._axes) in fusable

    def _broadcast(self, value, rank):
        """``value`` shaped to broadcast against the input (features not last)."""
        if value is None or value.shape.rank == rank or self._axes == [rank - 1]:
            return value
        return tf.reshape(value, self._shape)

    def call(self, inputs, training=False):
        check_training(self.scope_name, training)
        rank = inputs.shape.rank
        reduction = [i for i in range(rank) if i not in self._axes]
        moving = [self.moving_mean, self.moving_variance]
        # In float32 under a precision policy too; the output in the inputs' dtype.
        inputs32 = at_least_float32(inputs)

        def batch_moments():
            return tf.nn.moments(inputs32, reduction, keepdims=len(self._axes) > 1)

        if training is False:
            mean, variance = moving
        elif training is True:
            mean, variance = batch_moments()
        else:
            mean, variance = tf.cond(
                training, batch_moments, lambda: tuple(tf.identity(v) for v in moving)
            )
        if training is not False:
            toward = variance
            if self._fused_in_tensorflow(rank):
                count = tf.cast(tf.size(inputs) / tf.size(variance), variance.dtype)
                toward = variance * (count / (count - 1.0))
            self._updates += moving_statistics_update(
                training, self.momentum, moving, mean, toward
            )
        offset, scale = (
            None if v is None else at_least_float32(v) for v in (self.beta, self.gamma)
        )
        outputs = tf.nn.batch_normalization(
            inputs32,
            *(self._broadcast(v, rank) for v in (mean, variance, offset, scale)),
            self.epsilon,
        )
        return tf.cast(outputs, inputs.dtype)


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


class _Pooling(Layer):
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
        self.pool_size = _sizes(owner, pool_size, self.rank, "pool_size")
        self.strides = _sizes(owner, strides, self.rank, "strides")
        self.padding = _padding(owner, padding)
        self.channels_first = _channels_first(owner, data_format)

    def call(self, inputs):
        return self.pool(
            inputs,
            self.pool_size,
            self.strides,
            self.padding,
            data_format=_nn_format(self.rank, self.channels_first),
        )


MaxPooling1D = _variant(_Pooling, "MaxPooling1D", 1, pool=staticmethod(tf.nn.max_pool1d))
MaxPooling2D = _variant(_Pooling, "MaxPooling2D", 2, pool=staticmethod(tf.nn.max_pool2d))
AveragePooling1D = _variant(
    _Pooling, "AveragePooling1D", 1, pool=staticmethod(tf.nn.avg_pool1d)
)
AveragePooling2D = _variant(
    _Pooling, "AveragePooling2D", 2, pool=staticmethod(tf.nn.avg_pool2d)
)


class Flatten(Layer):
    """TF 1.15's ``tf.layers.Flatten``: [batch, ...] to [batch, product of the rest].

    With ``data_format="channels_first"`` the channels are moved last first, so
    both formats flatten in the same order.
    """

    def __init__(self, data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.channels_first = _channels_first(self._base_name, data_format)

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


def _function_form(cls, training=False, last=()):
    """TF 1.15's function form of ``cls``: ``f(inputs, <cls's arguments>, name=None)``.

    Args:
        cls: the layer class.
        training: whether the function takes ``training`` (placed before
            ``trainable``, or before ``name``) and hands it to the call.
        last: arguments TF 1.15 lists after ``name`` and ``reuse``.

    Returns:
        A function that builds ``cls(..., name=name, _scope=name, _reuse=reuse)``
        (exactly the scope ``name``, or the class's unique default name) and
        applies it to ``inputs``; ``reuse`` is taken by layers with variables.
    """
    keyword = inspect.Parameter.POSITIONAL_OR_KEYWORD
    arguments = [
        p for p in list(inspect.signature(cls.__init__).parameters.values())[1:]
        if p.kind is keyword
    ]  # fmt: skip
    reuse = cls.has_variables()
    if training:
        before = "trainable" if any(p.name == "trainable" for p in arguments) else "name"
        at = next(i for i, p in enumerate(arguments) if p.name == before)
        arguments.insert(at, inspect.Parameter("training", keyword, default=False))
    if reuse:
        arguments.append(inspect.Parameter("reuse", keyword, default=None))
    arguments.sort(key=lambda p: p.name in last)
    signature = inspect.Signature([inspect.Parameter("inputs", keyword), *arguments])

    def layer_function(*args, **kwargs):
        values = signature.bind(*args, **kwargs)
        values.apply_defaults()
        values = dict(values.arguments)
        inputs = values.pop("inputs")
        call = {"training": values.pop("training")} if training else {}
        reuse_scope = values.pop("reuse", None)
        layer = cls(**values, _scope=values["name"], _reuse=reuse_scope)
        return layer(inputs, **call)

    layer_function.__signature__ = signature
    layer_function.__name__ = layer_function.__qualname__ = snake_case(cls.__name__)
    layer_function.__doc__ = (
        f"TF 1.15's ``tf.layers.{layer_function.__name__}``: applies "
        f":class:`{cls.__name__}` to ``inputs`` and returns the output tensor."
    )
    return layer_function


dense = _function_form(Dense)
conv1d = _function_form(Conv1D)
conv2d = _function_form(Conv2D)
conv3d = _function_form(Conv3D)
conv2d_transpose = _function_form(Conv2DTranspose)
separable_conv2d = _function_form(SeparableConv2D)
batch_normalization = _function_form(
    BatchNormalization,
    training=True,
    last=("renorm", "renorm_clipping", "renorm_momentum", "fused", "virtual_batch_size",
          "adjustment"),
)  # fmt: skip
dropout = _function_form(Dropout, training=True)
max_pooling1d = _function_form(MaxPooling1D)
max_pooling2d = _function_form(MaxPooling2D)
average_pooling1d = _function_form(AveragePooling1D)
average_pooling2d = _function_form(AveragePooling2D)
flatten = _function_form(Flatten, last=("data_format",))
