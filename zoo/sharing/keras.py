"""Any TF1 ``get_variable`` function as a Keras 3 layer: tracked weights, losses, saving.

Keras 3 tracks only the variables a layer makes with ``add_weight``, ignores
``variable_scope`` reuse and has no ``track_tf1_style_variables``.
:class:`ZooLayer` finds out which variables a function asks ``get_variable`` for
(by calling it once in a scratch graph, its own ``reuse=True`` scopes included),
creates one Keras weight per variable, and on every call hands the function
those weights through a custom getter. A tower applied twice asks twice for one
name and reads one weight; a tied decoder asks for the encoder's ``W`` and reads
the same weight, before and after a save/load round trip. A regularizer given to
``get_variable`` (or by a ``variable_scope``) becomes the weight's regularizer,
so ``layer.losses`` holds it once per variable and ``fit`` adds it to the loss.

Usage::

    import keras
    from zoo.sharing.keras import ZooLayer

    model = keras.Sequential([keras.Input((784,)), ZooLayer("autoencoder", tied=True)])
    model.compile(keras.optimizers.Adagrad(0.1), "binary_crossentropy")
    model.fit(images, images, batch_size=128)
    model.save("ae.keras")
    again = keras.saving.load_model("ae.keras")   # still 3 weights, W still tied

    @keras.saving.register_keras_serializable(package="mine")   # to load it again
    def siamese(left, right):                # your TF1 code, unchanged
        ...
    distance = ZooLayer(siamese)([left, right])
"""

import collections.abc
import dataclasses

import keras
import tensorflow as tf

from layers.errors import ShapeError, ZooError
from zoo.models import get_model
from zoo.sharing.share import (
    call_builder,
    new_variable_error,
    recording_getter,
    refuse_new_variables,
    takes_training,
    variable_store,
)


@dataclasses.dataclass(frozen=True)
class VariableSpec:
    """A variable a function asks for: TF1 name, shape, dtype, trainable, init, loss."""

    name: str
    shape: tuple
    dtype: tf.DType
    trainable: bool
    initial_value: object
    regularizer: object = None


def variable_specs(owner, builder, input_shapes, scope, dtype=tf.float32, **builder_kwargs):
    """Builds ``builder`` in a scratch graph and lists the variables it creates.

    Args:
        owner: the layer's name, for messages.
        builder: a zoo builder or any get_variable function (see
            :func:`zoo.sharing.share.call_builder`).
        input_shapes: one shape per tensor argument, batch first.
        scope: the scope to build under, or None.
        dtype: the dtype of the scratch inputs.
        **builder_kwargs: other arguments of ``builder``.

    Returns:
        A list of :class:`VariableSpec` in creation order; ``initial_value`` is
        a callable that returns the initial tensor, usable eagerly.

    Raises:
        ZooError: the function makes a variable without ``get_variable``.
    """
    created, asked = [], {}  # asked: name -> regularizer or None, per get_variable name

    def record_creation(next_creator, **kwargs):
        created.append(kwargs)
        return next_creator(**kwargs)

    with tf.Graph().as_default(), tf.variable_creator_scope(record_creation):
        inputs = [
            tf.compat.v1.placeholder(dtype, [None, *shape[1:]]) for shape in input_shapes
        ]
        with tf.compat.v1.variable_scope(
            tf.compat.v1.get_variable_scope(),
            custom_getter=recording_getter(asked),
            auxiliary_name_scope=False,
        ):
            call_builder(builder, inputs, builder_kwargs, scope, reuse=False)
    outside = [kwargs["name"] for kwargs in created if kwargs["name"] not in asked]
    if outside:
        raise ZooError(
            f"{owner}: expected every variable to come from tf.compat.v1.get_variable, "
            f"found {outside} made another way (tf.Variable, a Keras layer); create them "
            "with get_variable so that the layer can track and share them"
        )
    return [
        VariableSpec(
            name=kwargs["name"],
            shape=tuple(kwargs["shape"]),
            dtype=tf.as_dtype(kwargs["dtype"]),
            trainable=kwargs.get("trainable", True) is not False,
            initial_value=kwargs["initial_value"],
            regularizer=asked.get(kwargs["name"]),
        )
        for kwargs in created
    ]


@keras.saving.register_keras_serializable(package="zoo")
class ZooLayer(keras.layers.Layer):
    """A registered zoo builder, or any TF1 get_variable function, as a Keras layer.

    Args:
        model: a name in :data:`zoo.models.MODELS` (``"autoencoder"``), or any
            function of tensors that creates its variables with
            ``tf.compat.v1.get_variable`` under ``variable_scope``s. A function
            with ``scope`` and ``reuse`` parameters receives them; any other runs
            under ``variable_scope(scope)``. Called with the layer's input, or
            with the tensors of a list input (``layer([left, right])``). To load
            a saved model again, register the function with
            ``@keras.saving.register_keras_serializable(package=...)`` (or pass it
            in ``custom_objects``); lambdas cannot be loaded in safe mode.
        output: the field (attribute or key) of the function's result the layer
            returns; None when the function returns a tensor (or a list of them).
            For a registered name the default is ``"decoded"``.
        scope: the variable scope the function builds under; default the model's
            name for a registered builder, none (the function's own names) for a
            function. The TF1 names are in :attr:`variable_names`; Keras's weight
            names are those with ``/`` written ``.``.
        **kwargs: builder arguments, JSON-serializable or registered
            (``tied``, ``n_hidden``), and ``keras.layers.Layer`` arguments
            (``name``, ``trainable``, ``dtype``).

    Raises:
        ZooError: an unknown model name or a model that is neither a name nor
            callable; at the first call, ``output`` that names no field of the
            result, or a variable made without ``get_variable``.
        ScopeError: a call that would create a variable the first build did not
            (names that change between calls).
        ShapeError: an input of another width than the layer was built for.
    """

    def __init__(self, model="autoencoder", output=None, scope=None, **kwargs):
        layer_kwargs = {k: kwargs.pop(k) for k in _LAYER_ARGS if k in kwargs}
        super().__init__(**layer_kwargs)
        if isinstance(model, str):
            self._builder = get_model(model)
            self.model_name = model
            output = output or "decoded"
            scope = scope or model
        elif callable(model):
            self._builder = model
            self.model_name = getattr(model, "__name__", type(model).__name__)
        else:
            raise ZooError(
                f"{self.name}: expected model to be a registered name or a function, "
                f"found {model!r}; pass e.g. ZooLayer('autoencoder') or ZooLayer(my_fn)"
            )
        self.model = model
        self.output_name = output
        self.scope = scope
        self.builder_kwargs = kwargs
        self._names = []

    def build(self, input_shape):
        """Creates one Keras weight per variable the function asks for."""
        specs = variable_specs(
            self.name,
            self._builder,
            _shapes(input_shape),
            self.scope,
            tf.as_dtype(self.compute_dtype),
            **self._call_kwargs(training=False),
        )
        for spec in specs:
            self.add_weight(
                shape=spec.shape,
                dtype=spec.dtype.name,
                trainable=spec.trainable,
                autocast=spec.trainable,  # mixed policies: moving statistics stay float32
                name=spec.name.replace("/", "."),
                initializer=lambda shape, dtype, init=spec.initial_value: init(),
                regularizer=_on_tensor(spec.regularizer),
            )
        self._names = [spec.name for spec in specs]

    @property
    def variable_names(self):
        """The TF1 names (``autoencoder/encoder/W``) of :attr:`weights`, in order."""
        return list(self._names)

    @property
    def tf1_variables(self):
        """TF1 name -> the ``tf.Variable`` behind each weight, for checkpoints by name.

        ``zoo.sharing.share.restore_by_name(layer.tf1_variables, "tf1.ckpt")`` loads a TF1
        program's checkpoint into the layer; ``save_by_name`` writes one.
        """
        weights = zip(self._names, self.weights, strict=True)
        return {name: weight.value for name, weight in weights}

    def call(self, inputs, training=None):
        """Runs the function on ``inputs`` with this layer's weights; returns ``output``.

        A function with a ``training`` parameter receives Keras' training flag
        (False when Keras passes None): :class:`layers.BatchNorm` then uses the
        batch statistics in ``fit`` and moves the moving ones, which are
        non-trainable weights, and uses them in ``predict`` and ``evaluate``.
        """
        weights = dict(zip(self._names, self.weights, strict=True))
        fix = (
            "make the function ask for the same names on every call (no default_name "
            "scopes, counters or tf.Variable), or build a new layer for new arguments"
        )

        def layer_weight(getter, name, *args, shape=None, **kwargs):
            if name not in weights:
                raise new_variable_error(self.name, name, fix)
            weight = weights[name]
            if shape is not None and list(shape) != list(weight.shape):
                raise ShapeError(
                    f"{self.name}: expected {name} with shape {list(weight.shape)}, "
                    f"found a request for {list(shape)}; feed inputs of the width the "
                    "layer was built for"
                )
            return weight.value

        tensors = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        root = tf.compat.v1.get_variable_scope()
        with (
            variable_store().as_default(),
            refuse_new_variables(self.name, fix),
            tf.compat.v1.variable_scope(
                root, custom_getter=layer_weight, auxiliary_name_scope=False
            ),
        ):
            result = call_builder(
                self._builder,
                tensors,
                self._call_kwargs(training),
                self.scope,
                tf.compat.v1.AUTO_REUSE,
            )
        return self._pick_output(result)

    def _call_kwargs(self, training):
        """The builder arguments, with ``training`` when the function takes one."""
        if not takes_training(self._builder):
            return self.builder_kwargs
        return {
            **self.builder_kwargs,
            "training": False if training is None else training,
        }

    def _pick_output(self, result):
        """Returns the result itself (a tensor) or its ``output`` field."""
        if self.output_name is None:
            if tf.is_tensor(result) or (
                type(result) in (list, tuple) and all(map(tf.is_tensor, result))
            ):
                return result
            raise ZooError(
                f"{self.name}: expected {self.model_name} to return a tensor, found a "
                f"{type(result).__name__} with fields {_fields(result)}; pass "
                "output='<field>' to pick one"
            )
        if isinstance(result, collections.abc.Mapping):
            value = result.get(self.output_name)
        else:
            value = getattr(result, self.output_name, None)
        if value is None:
            raise ZooError(
                f"{self.name}: expected output to name a field of the "
                f"{self.model_name} result, found {self.output_name!r}; pick one of "
                f"{_fields(result)}"
            )
        return value

    def get_config(self):
        """Returns what ``keras.saving`` needs to rebuild the layer."""
        model = self.model
        if not isinstance(model, str):
            model = keras.saving.serialize_keras_object(model)
        return {
            **super().get_config(),
            "model": model,
            "output": self.output_name,
            "scope": self.scope,
            **self.builder_kwargs,
        }

    @classmethod
    def from_config(cls, config):
        """Rebuilds the layer, finding the saved function among the registered ones.

        Raises:
            ZooError: the function is not registered with Keras.
        """
        config = dict(config)
        model = config.get("model")
        if isinstance(model, dict):
            try:
                config["model"] = keras.saving.deserialize_keras_object(model)
            except (TypeError, ValueError):
                raise ZooError(
                    f"{config.get('name', 'ZooLayer')}: expected the function "
                    f"{model.get('config')!r} (module {model.get('module')!r}) to be "
                    "known to Keras, found it unregistered; decorate it with "
                    "@keras.saving.register_keras_serializable(package=...) and import "
                    "it before load_model, or pass custom_objects={name: function}"
                ) from None
        return cls(**config)


def _shapes(input_shape):
    """One shape per tensor argument: a list input gives several."""
    shapes = list(input_shape)
    if shapes and all(isinstance(s, (list, tuple)) for s in shapes):
        return [tuple(s) for s in shapes]
    return [tuple(shapes)]


def _on_tensor(regularizer):
    """Wraps a TF1 regularizer for a Keras weight, which Keras passes as a variable."""
    if regularizer is None:
        return None
    return lambda weight: regularizer(tf.convert_to_tensor(weight))


def _fields(result):
    """The names of a result's fields, for messages."""
    if dataclasses.is_dataclass(result):
        return [field.name for field in dataclasses.fields(result)]
    if isinstance(result, collections.abc.Mapping):
        return sorted(result)
    if hasattr(result, "_fields"):
        return list(result._fields)
    return sorted(k for k in getattr(result, "__dict__", {}) if not k.startswith("_"))


_LAYER_ARGS = ("name", "trainable", "dtype", "autocast", "input_dim", "input_shape")
