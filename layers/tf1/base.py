"""The base of TF 1.15's ``tf.layers`` (``tensorflow/python/layers/base.py``): a
layer object with a name, a variable scope and variables made on the first call,
and what the layer modules share: argument forms, the function form of a class."""

import collections
import functools
import inspect
import re
import types
import weakref

import tensorflow as tf

from layers.checks import choice_problem, int_problem, int_value, require
from layers.errors import ShapeError, ZooError
from layers.normalization import check_training as check_scalar_training
from layers.variables import (
    at_least_float32,
    full_name,
    in_dtype_of,
    require_graph,
    sharing_store_active,
    stored_variable,
    translate_error,
)

ZEROS = tf.compat.v1.zeros_initializer()
ONES = tf.compat.v1.ones_initializer()
UNSUPPORTED = "use tf_keras (TF_USE_LEGACY_KERAS=1) for this option, or leave it out"
REGULARIZATION_LOSSES = tf.compat.v1.GraphKeys.REGULARIZATION_LOSSES

# How many unnamed layers of each class each graph has named (TF's layer names).
_NAMES_TAKEN = weakref.WeakKeyDictionary()


def snake_case(class_name):
    """``"Conv2DTranspose"`` -> ``"conv2d_transpose"``: TF's default layer names."""
    words = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", class_name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", words).lower()


def unique_layer_name(base_name):
    """``base_name`` numbered from 1 in the default graph (``dense_1``, ``dense_2``):
    the name TF 1.15 gives a layer object made without one."""
    taken = _NAMES_TAKEN.setdefault(tf.compat.v1.get_default_graph(), collections.Counter())
    taken[base_name] += 1
    return f"{base_name}_{taken[base_name]}"


class InputSpec:
    """TF 1.15's ``tf.layers.InputSpec``: the inputs a layer takes, checked by
    :class:`Layer` at each call when a layer sets ``self.input_spec``.

    Args:
        dtype: the inputs' dtype, or None for any.
        shape: a full shape (None entries for any size), or None.
        ndim, max_ndim, min_ndim: the rank, or its bounds.
        axes: ``{axis: size}`` for the sizes that must be known and equal.
        allow_last_axis_squeeze, name, optional: kept as given (Keras reads them).
    """

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None,
                 axes=None, allow_last_axis_squeeze=False, name=None,
                 optional=False):  # fmt: skip
        self.dtype = None if dtype is None else tf.as_dtype(dtype).name
        self.shape = None if shape is None else tf.TensorShape(shape)
        self.ndim = ndim if shape is None else len(shape)
        self.max_ndim, self.min_ndim, self.axes = max_ndim, min_ndim, dict(axes or {})
        self.allow_last_axis_squeeze, self.name = allow_last_axis_squeeze, name
        self.optional = optional

    def __repr__(self):
        parts = [f"{key}={value!r}" for key, value in vars(self).items() if value]
        return f"InputSpec({', '.join(parts)})"

    def problem(self, inputs):
        """What is wrong with the tensor ``inputs`` for this spec, or None."""
        shape, rank = inputs.shape, inputs.shape.rank
        if self.dtype and inputs.dtype.base_dtype.name != self.dtype:
            return f"expected {self.dtype} inputs, found {inputs.dtype.name}"
        if rank is None:
            return None
        low = self.min_ndim if self.ndim is None else self.ndim
        high = self.max_ndim if self.ndim is None else self.ndim
        sizes = {**({} if self.shape is None else dict(enumerate(self.shape))), **self.axes}
        wrong = [
            axis for axis, size in sizes.items()
            if size is not None and -rank <= axis < rank and shape[axis] != size
        ]  # fmt: skip
        if (low or 0) <= rank <= (rank if high is None else high) and not wrong:
            return None
        return f"expected inputs as {self!r}, found shape {shape}"


class Layer:
    """TF 1.15's ``tf.layers.Layer``: a name, a variable scope, variables made on the
    first call and owned by the object, so every later call uses them again.

    In a graph (and inside a sharing template) the variables come from
    ``tf.compat.v1.get_variable`` in the layer's scope; eagerly, the object makes
    them once and holds them, as TF 1.15's layer objects did. The function forms
    (``dense(x, 10)``) make a new object per call, so they refuse plain eager
    execution (see :func:`function_form`).

    Args:
        trainable: whether the variables join ``TRAINABLE_VARIABLES``.
        name: the layer's name, and the variable scope made unique in the
            enclosing one (``fc``, ``fc_1``); None: :attr:`name` is the class's
            name in snake case numbered in the graph (``dense_1``) and the scope
            that name unnumbered, made unique (``dense``).
        dtype: the variables' dtype; None takes the input's.
        activity_regularizer: None, or a function ``outputs -> scalar``; its
            value divided by the batch size joins :attr:`losses` (and, in a
            graph, ``REGULARIZATION_LOSSES``).
        **kwargs: only what the function forms pass: ``_scope`` (this exact
            scope) and ``_reuse``.

    Raises:
        ZooError: another keyword argument.
    """

    # False for a class whose variables may come from get_variable in ``call``: not
    # held by the object, so refused in plain eager execution (EagerError).
    owns_variables_eagerly = True

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        scope, self._reuse = kwargs.pop("_scope", None), kwargs.pop("_reuse", None)
        self.activity_regularizer = kwargs.pop("activity_regularizer", None)
        default = snake_case(type(self).__name__)
        if isinstance(name, tf.compat.v1.VariableScope):
            self._base_name, self._name = name.name, unique_layer_name(default)
        else:
            self._base_name = name or default
            self._name = name or unique_layer_name(default)
        require(
            self._base_name,
            f"expected TF 1.15's arguments, found {sorted(kwargs)}" if kwargs else None,
            f"see the signature of layers.tf1.{type(self).__name__}",
        )
        self.trainable, self.built, self.dtype = trainable, False, dtype
        self.input_spec = None
        self._scope = None
        if scope:
            with tf.compat.v1.variable_scope(scope) as captured:
                self._scope = captured
        self._trainable_weights, self._non_trainable_weights, self._updates = [], [], []
        # weight regularization: tensors, or functions evaluated at each read; added
        self._weight_losses, self._loss_functions, self._losses = [], [], []

    @property
    def name(self):
        """The layer's name: the one given, or ``<class in snake case>_<n>``."""
        return self._name

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

    @property
    def losses(self):
        """The layer's losses: its weights' regularization (in a graph the tensors
        of ``REGULARIZATION_LOSSES``; eagerly computed now), then :meth:`add_loss`'s
        and the activity regularizer's (eagerly, those of the last call only)."""
        computed = [loss() for loss in self._loss_functions]
        return computed + self._weight_losses + self._losses

    def add_loss(self, losses, inputs=None):
        """Adds a loss tensor, a list of them, or a function ``() -> loss`` (computed
        at each read of :attr:`losses`); in a graph a tensor also joins
        ``REGULARIZATION_LOSSES``, as in TF 1.15. ``inputs`` is not used."""
        del inputs  # TF 1.15 ties a loss to its inputs for Keras models only
        for loss in losses if isinstance(losses, (list, tuple)) else [losses]:
            if callable(loss):
                self._loss_functions.append(loss)
                continue
            self._losses.append(loss)
            if not tf.executing_eagerly():
                tf.compat.v1.add_to_collection(REGULARIZATION_LOSSES, loss)

    def get_config(self):
        """The layer's constructor arguments as it holds them (Keras' ``get_config``):
        ``name``, ``trainable``, ``dtype`` and each argument kept under its own name."""
        arguments = inspect.signature(type(self).__init__).parameters
        held = {key: getattr(self, key) for key in arguments if key in vars(self)}
        dtype = self.dtype if self.dtype is None else tf.as_dtype(self.dtype).name
        return {**held, "name": self.name, "trainable": self.trainable, "dtype": dtype}

    def __call__(self, inputs, *args, **kwargs):
        """Builds the variables on the first call, then applies the layer.

        Raises:
            EagerError: plain eager execution, for a class that does not own its
                variables (``owns_variables_eagerly`` False).
            ScopeError: in a graph, the variables exist and reuse is off, or
                reuse is on and they do not exist (TensorFlow's own words are in
                the message).
        """
        if not self.owns_variables_eagerly and self.has_variables():
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
            if tf.executing_eagerly():  # a call's losses are values: keep the last's
                self._losses = []
            if self.input_spec is not None:
                problem = self.input_spec.problem(inputs)
                require(self._scope.name, problem, "give an input of that form", ShapeError)
            if not self.built:
                self.dtype = tf.as_dtype(self.dtype or inputs.dtype.base_dtype)
                self.build(inputs.shape)
                self.built = True
            outputs = self.call(self._cast_inputs(inputs), *args, **kwargs)
            if self.activity_regularizer is not None:  # a float32 loss under a policy
                loss = self.activity_regularizer(at_least_float32(outputs))
                self.add_loss(loss / tf.cast(tf.shape(outputs)[0], loss.dtype))
        return outputs

    apply = __call__

    @classmethod
    def has_variables(cls):
        """Whether the layer makes variables (its class defines ``build``)."""
        return cls.build is not Layer.build

    def build(self, input_shape):
        """Makes the layer's variables (none here)."""

    def compute_output_shape(self, input_shape):
        """The output's static shape for an input of ``input_shape``.

        Args:
            input_shape: a ``tf.TensorShape``, or a list or tuple of sizes.

        Returns:
            A ``tf.TensorShape``.

        Raises:
            ShapeError: the layer cannot take an input of that shape.
        """
        return self._output_shape(tf.TensorShape(input_shape))

    def _output_shape(self, input_shape):
        """:meth:`compute_output_shape` of a ``tf.TensorShape``: here the same."""
        return input_shape

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
                ``REGULARIZATION_LOSSES`` once, when the variable is created; it
                joins :attr:`losses` in any case.
            trainable: False for statistics that are not trained.
            constraint: None, or a projection applied after optimizer updates.

        Returns:
            The variable.
        """
        owner = self._scope.name
        trainable = trainable and self.trainable
        stored = sharing_store_active()  # else made once here, owned by this object
        collected = tf.compat.v1.get_collection_ref(REGULARIZATION_LOSSES)
        before = len(collected)
        try:
            variable = tf.compat.v1.get_variable(
                name, shape, dtype or self.dtype, initializer=initializer,
                regularizer=regularizer if stored else None,
                trainable=trainable, constraint=constraint,
            )  # fmt: skip
        except ValueError as err:
            raise with_tensorflow_words(owner, name, shape, err) from None
        if stored:
            self._weight_losses += collected[before:]
        elif regularizer is not None:
            self._loss_functions.append(
                functools.partial(regularizer, stored_variable(variable))
            )
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
        size = tf.compat.dimension_value(input_shape[axis]) if input_shape.rank else None
        if input_shape.rank != rank or size is None:
            owner = self._scope.name if self._scope else self._base_name
            raise ShapeError(
                f"{owner}: expected an input of rank {rank} with a known "
                f"{what} dimension, found shape {input_shape}; reshape the input, or "
                "give it a static shape (a placeholder of that shape)"
            )
        return size


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
    """``value`` (an int, or ``rank`` ints in a list, tuple or ``tf.TensorShape``;
    each >= 1; TF1 ``Dimension`` s too) as a tuple of ``rank`` ints."""
    if isinstance(value, tf.TensorShape) and value.rank is not None:
        value = tuple(value.as_list())
    values = tuple(value) if isinstance(value, (list, tuple)) else (value,) * rank
    values = tuple(map(int_value, values))
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


def check_training(owner, training):
    """Raises ZooError unless ``training`` is a bool or a bool tensor of rank 0 or of
    unknown rank (``tf.compat.v1.placeholder(tf.bool)``, fed a scalar)."""
    if not (tf.is_tensor(training) and training.dtype == tf.bool
            and training.shape.rank is None):  # fmt: skip
        check_scalar_training(owner, training)


def spatial_size(size, kernel, stride, padding, dilation=1):
    """The output size along one spatial axis of a convolution or pooling window
    (``padding`` ``"VALID"`` or ``"SAME"``); None for an unknown ``size``."""
    if size is None:
        return None
    reach = (kernel - 1) * dilation + 1
    return -(-(size if padding == "SAME" else size - reach + 1) // stride)


def nn_format(rank, channels_first):
    """``tf.nn``'s data format for ``rank`` spatial dimensions: ``"NHWC"``, ``"NCW"`` ..."""
    spatial = "DHW"[-rank:]
    return f"NC{spatial}" if channels_first else f"N{spatial}C"


def runs_channels_last(where):
    """Whether TF's legacy layer runs channels-first input channels last here.

    Args:
        where: "always" (TF has no channels-first kernel: 3-D pooling), "without a
            GPU" (its backend's rule for ``pool2d`` and ``conv2d_transpose``: CPU
            kernels may lack the format) or None (the op as given).
    """
    if where == "without a GPU":
        return not tf.config.list_physical_devices("GPU")
    return where == "always"


def in_channels_last(op, inputs, rank):
    """``op`` (of a channels-last tensor) on channels-first ``inputs``, transposed in
    and out, as TF's legacy layers run it where :func:`runs_channels_last`."""
    to_last, to_first = [0, *range(2, rank + 2), 1], [0, rank + 1, *range(1, rank + 1)]
    return tf.transpose(op(tf.transpose(inputs, to_last)), to_first)


class Projection(Layer):
    """A kernel, an optional bias and an activation: what Dense and the convolutions share.

    Subclasses call :meth:`_project` in ``__init__`` and :meth:`_finish` at the end
    of ``call``.
    """

    def _project(self, activation, use_bias, **variables):
        """Keeps the activation and, for each ``variable=(initializer, regularizer,
        constraint)``, the attributes ``<variable>_initializer`` ... as TF's layers;
        an activation given by name (``"relu"``) is Keras's, as TF 1.15 took it."""
        if isinstance(activation, str):
            activation = tf.keras.activations.get(activation)
        self.activation, self.use_bias = activation, use_bias
        for variable, values in variables.items():
            for part, value in settings(*values).items():
                setattr(self, f"{variable}_{part}", value)
        self.kernel = self.bias = None

    def _settings_of(self, variable):
        """``add_weight``'s arguments for ``variable`` from the layer's attributes."""
        return {part: getattr(self, f"{variable}_{part}") for part in settings()}

    def _cast_inputs(self, inputs):
        """The inputs in the dtype the weights are read in: a precision policy's
        compute dtype (``zoo.training.precision``), as the zoo's layers do."""
        return in_dtype_of(inputs, self.weights[0])

    def _make_bias(self, width):
        if self.use_bias:
            self.bias = self.add_weight("bias", [width], **self._settings_of("bias"))

    def _finish(self, outputs, data_format=None):
        """Adds the bias (on the channels of ``data_format``), applies the activation."""
        if self.bias is not None:
            outputs = tf.nn.bias_add(outputs, self.bias, data_format=data_format)
        return outputs if self.activation is None else self.activation(outputs)


def variant(base, name, rank, **attributes):
    """The subclass ``name`` of ``base`` for ``rank`` spatial dimensions, TF's name
    written into its docstring in place of ``base.family``; each argument named in
    ``base.ranked_defaults`` defaults to TF 1.15's form for that rank: ``1`` in one
    dimension, ``(1, 1)`` in two, ``(1, 1, 1)`` in three."""
    namespace = {"__doc__": base.__doc__.replace(base.family, name),
                 "__module__": base.__module__, "__qualname__": name, "rank": rank,
                 **attributes}  # fmt: skip
    ranked = getattr(base, "ranked_defaults", ())
    if ranked:
        ones = (1,) * rank if rank > 1 else 1
        namespace["__init__"] = with_defaults(base.__init__, dict.fromkeys(ranked, ones))
    return type(name, (base,), namespace)


def with_defaults(function, defaults):
    """A copy of ``function`` whose keyword defaults ``defaults`` (name -> value)
    replace its own; the same code, so a zero-argument ``super()`` still works."""
    code = function.__code__
    names = code.co_varnames[: code.co_argcount]
    first = len(names) - len(function.__defaults__)
    own = zip(names[first:], function.__defaults__, strict=True)
    values = [defaults.get(name, value) for name, value in own]
    copy = types.FunctionType(code, function.__globals__, function.__name__,
                              tuple(values), function.__closure__)  # fmt: skip
    copy.__kwdefaults__, copy.__doc__ = function.__kwdefaults__, function.__doc__
    copy.__qualname__ = function.__qualname__
    return copy


def function_form(cls, training=False, last=(), defaults=None):
    """TF 1.15's function form of ``cls``: ``f(inputs, <cls's arguments>, name=None)``.

    Args:
        cls: the layer class.
        training: whether the function takes ``training`` (placed before
            ``trainable``, or before ``name``) and hands it to the call.
        last: arguments TF 1.15 lists after ``name`` and ``reuse``.
        defaults: ``{argument: default}`` where TF 1.15's function differs
            from its class.

    Returns:
        A function that builds ``cls(..., name=name, _scope=name, _reuse=reuse)``
        (exactly the scope ``name``, or the class's unique default name) and
        applies it to ``inputs``; ``reuse`` is taken by layers with variables.
        Such a function raises :class:`layers.errors.EagerError` in plain eager
        execution (outside a sharing template), where TF 1.15 made new
        variables on every call.
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
    arguments = [
        p.replace(default=defaults[p.name]) if p.name in (defaults or {}) else p
        for p in arguments
    ]  # fmt: skip
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
        if reuse:  # a new object per call would make new variables silently
            require_graph(full_name(layer._base_name))
        return layer(inputs, **call)

    layer_function.__signature__ = signature
    layer_function.__name__ = layer_function.__qualname__ = snake_case(cls.__name__)
    layer_function.__doc__ = (
        f"TF 1.15's ``tf.layers.{layer_function.__name__}``: applies "
        f":class:`{cls.__name__}` to ``inputs`` and returns the output tensor."
    )
    return layer_function
