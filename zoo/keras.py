"""A zoo builder as a Keras 3 layer: tracked weights, ``model.save``, ties that survive.

Keras 3 tracks only the variables a layer makes with ``add_weight`` and ignores
``variable_scope`` reuse. :class:`ZooLayer` finds out which variables a builder
asks ``get_variable`` for (by building it once in a scratch graph), creates one
Keras weight per variable, and on every call hands the builder those weights
through a custom getter. A tied decoder asks for the encoder's ``W``, so it
reads the same Keras weight, before and after a save/load round trip.

Usage::

    import keras
    from zoo.keras import ZooLayer

    model = keras.Sequential([keras.Input((784,)), ZooLayer("autoencoder", tied=True)])
    model.compile(keras.optimizers.Adagrad(0.1), "binary_crossentropy")
    model.fit(images, images, batch_size=128)
    model.save("ae.keras")
    again = keras.saving.load_model("ae.keras")   # still 3 weights, W still tied
"""

import dataclasses

import keras
import tensorflow as tf

from layers.errors import ScopeError, ShapeError, ZooError
from zoo.models import get_model
from zoo.models.scoping import AUTO_REUSE
from zoo.share import variable_store


@dataclasses.dataclass(frozen=True)
class VariableSpec:
    """A variable a builder asks for: TF1 name, shape, dtype, trainable, initializer."""

    name: str
    shape: tuple
    dtype: tf.DType
    trainable: bool
    initial_value: object


def variable_specs(builder, input_shape, scope, **builder_kwargs):
    """Builds ``builder`` in a scratch graph and lists the variables it creates.

    Args:
        builder: a zoo builder taking one input tensor.
        input_shape: the input's shape, batch first.
        scope: the builder's scope.
        **builder_kwargs: other builder arguments.

    Returns:
        A list of :class:`VariableSpec` in creation order; ``initial_value`` is
        a callable that returns the initial tensor, usable eagerly.
    """
    specs = []

    def record(next_creator, **kwargs):
        specs.append(
            VariableSpec(
                name=kwargs["name"],
                shape=tuple(kwargs["shape"]),
                dtype=tf.as_dtype(kwargs["dtype"]),
                trainable=kwargs.get("trainable", True) is not False,
                initial_value=kwargs["initial_value"],
            )
        )
        return next_creator(**kwargs)

    with tf.Graph().as_default(), tf.variable_creator_scope(record):
        x = tf.compat.v1.placeholder(tf.float32, [None, *input_shape[1:]])
        builder(x, scope=scope, **builder_kwargs)
    return specs


@keras.saving.register_keras_serializable(package="zoo")
class ZooLayer(keras.layers.Layer):
    """A registered zoo builder as a Keras layer.

    Args:
        model: a name in :data:`zoo.models.MODELS` whose builder takes one input
            tensor (``"autoencoder"``).
        output: the field of the builder's result the layer returns
            (``"decoded"``, ``"encoded"``, ``"logits"``).
        scope: the builder's variable scope; the TF1 names of the weights are
            ``<scope>/...`` (see :attr:`variable_names`).
        **kwargs: JSON-serializable builder arguments (``tied``, ``n_hidden``) and
            ``keras.layers.Layer`` arguments (``name``, ``trainable``, ``dtype``).

    Raises:
        ZooError: unknown model name, or ``output`` is not a field of its result.
    """

    def __init__(self, model="autoencoder", output="decoded", scope=None, **kwargs):
        layer_kwargs = {k: kwargs.pop(k) for k in _LAYER_ARGS if k in kwargs}
        super().__init__(**layer_kwargs)
        self._builder = get_model(model)
        self.model_name = model
        self.output_name = output
        self.scope = scope or model
        self.builder_kwargs = kwargs
        self._names = []

    def build(self, input_shape):
        """Creates one Keras weight per variable the builder asks for."""
        specs = variable_specs(
            self._builder, input_shape, self.scope, **self.builder_kwargs
        )
        for spec in specs:
            self.add_weight(
                shape=spec.shape,
                dtype=spec.dtype.name,
                trainable=spec.trainable,
                name=spec.name.replace("/", "."),
                initializer=lambda shape, dtype, init=spec.initial_value: init(),
            )
        self._names = [spec.name for spec in specs]

    @property
    def variable_names(self):
        """The TF1 names (``autoencoder/encoder/W``) of :attr:`weights`, in order."""
        return list(self._names)

    def call(self, inputs):
        """Runs the builder on ``inputs`` with this layer's weights; returns ``output``."""
        weights = dict(zip(self._names, self.weights, strict=True))

        def layer_weight(getter, name, *args, shape=None, **kwargs):
            if name not in weights:
                raise ScopeError(
                    f"{self.name}: expected the builder to ask only for "
                    f"{sorted(weights)}, found a request for {name}; rebuild the layer "
                    "for these builder arguments"
                )
            weight = weights[name]
            if shape is not None and list(shape) != list(weight.shape):
                raise ShapeError(
                    f"{self.name}: expected {name} with shape {list(weight.shape)}, "
                    f"found a request for {list(shape)}; feed inputs of the width the "
                    "layer was built for"
                )
            return weight.value

        root = tf.compat.v1.get_variable_scope()
        with (
            variable_store().as_default(),
            tf.compat.v1.variable_scope(root, custom_getter=layer_weight),
        ):
            result = self._builder(
                inputs, scope=self.scope, reuse=AUTO_REUSE, **self.builder_kwargs
            )
        if not hasattr(result, self.output_name):
            fields = [f.name for f in dataclasses.fields(result)]
            raise ZooError(
                f"{self.name}: expected output to name a field of the "
                f"{self.model_name} result, found {self.output_name!r}; pick one of "
                f"{fields}"
            )
        return getattr(result, self.output_name)

    def get_config(self):
        """Returns what ``keras.saving`` needs to rebuild the layer."""
        return {
            **super().get_config(),
            "model": self.model_name,
            "output": self.output_name,
            "scope": self.scope,
            **self.builder_kwargs,
        }


_LAYER_ARGS = ("name", "trainable", "dtype", "autocast", "input_dim", "input_shape")
