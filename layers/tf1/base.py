"""The base of TF 1.15's ``tf.layers`` (``tensorflow/python/layers/base.py``): a
layer object with a name, a variable scope and variables made on the first call,
and what the layer modules share: argument forms, the function form of a class."""

import inspect
import re

import tensorflow as tf

from layers.checks import choice_problem, int_problem, require
from layers.errors import ShapeError, ZooError
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


def sizes(owner, value, rank, what):
    """``value`` (an int or ``rank`` ints, each >= 1) as a tuple of ``rank`` ints."""
    values = tuple(value) if isinstance(value, (list, tuple)) else (value,) * rank
    problems = [int_problem(item, name=what) for item in values]
    if len(values) != rank:
        problems = [f"expected {what} to be an int or {rank} ints, found {value!r}"]
    require(owner, next(filter(None, problems), None), f"pass e.g. {what}=1")
    return values


def nn_padding(owner, padding):
    """``"valid"`` or ``"same"`` in upper case, as ``tf.nn`` takes it."""
    padding = padding.lower() if isinstance(padding, str) else padding
    require(owner, choice_problem(padding, ("valid", "same"), "padding"), 'pass "same"')
    return padding.upper()


def is_channels_first(owner, data_format):
    """True for ``"channels_first"``, False for ``"channels_last"`` (or None)."""
    data_format = data_format or "channels_last"
    choices = ("channels_last", "channels_first")
    problem = choice_problem(data_format, choices, "data_format")
    require(owner, problem, 'pass "channels_last"')
    return data_format == "channels_first"


def nn_format(rank, channels_first):
    """``tf.nn``'s data format for ``rank`` spatial dimensions: ``"NHWC"``, ``"NCW"`` ..."""
    spatial = "DHW"[-rank:]
    return f"NC{spatial}" if channels_first else f"N{spatial}C"


class Projection(Layer):
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


def variant(base, name, rank, **attributes):
    """The subclass ``name`` of ``base`` for ``rank`` spatial dimensions, TF's name
    written into its docstring in place of ``base.family``."""
    namespace = {"__doc__": base.__doc__.replace(base.family, name),
                 "__module__": base.__module__, "__qualname__": name, "rank": rank,
                 **attributes}  # fmt: skip
    return type(name, (base,), namespace)


def function_form(cls, training=False, last=()):
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
