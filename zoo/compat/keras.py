"""``tf.keras`` as TF1 code reaches it: what :func:`zoo.compat.install` changes.

``keras`` of every ``compat.v1`` namespace (``tf.keras`` after ``import
tensorflow.compat.v1 as tf``) becomes :data:`KERAS`, a module that imports
tf_keras's ``tf.compat.v1.keras`` (Keras 2.21, TF 2.15's tf.keras carried on:
graph-mode layers, ``fit`` with v2 behaviour off, ``backend.get_session``,
``estimator.model_to_estimator`` onto :mod:`zoo.compat.estimator`) on its first
use. ``tf.keras`` of TensorFlow 2 and ``import keras`` stay Keras 3: TF2 code in
the same process is untouched. Once loaded, tf_keras's layer calls,
``Sequential.add`` and functional models refuse Keras 3 objects with a
:class:`~layers.errors.ZooError` naming both Kerases (:func:`guards`). Why and
what was measured: docs/tf1-keras.md.

Usage::

    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
    import zoo.compat
    zoo.compat.install()
    model = tf.keras.Sequential([tf.keras.layers.Dense(10)])  # Keras 2, in graph mode
"""

import functools
import importlib
import sys
import types

from layers.errors import ZooError
from zoo.compat.change import Change
from zoo.compat.namespaces import v1_namespaces

ENGINE = "tf_keras.api._v1.keras"  # tf_keras's tf.compat.v1.keras
INSTALL = "pip install 'scope-zoo[tf1-keras]' (or pip install 'tf_keras>=2.16,<2.22')"


def engine():
    """tf_keras's ``tf.compat.v1.keras`` module (imported on the first call).

    Raises:
        ZooError: tf_keras is not installed.
    """
    try:
        return importlib.import_module(ENGINE)
    except ModuleNotFoundError as error:
        if not (error.name or "").startswith("tf_keras"):
            raise
        raise ZooError(
            "tf.keras (in TF1 code under zoo.compat.install()): expected tf_keras, "
            f"Keras 2, to be installed, found none; {INSTALL}"
        ) from None


def is_keras3(value):
    """Whether ``value`` is a Keras 3 object (a layer, model, symbolic tensor...)."""
    return type(value).__module__.partition(".")[0] == "keras"


def _refusing_keras3(method, owner):
    """``method`` of a tf_keras class, raising a ZooError on a Keras 3 argument."""

    @functools.wraps(method)
    def refusing_keras3(self, *args, **kwargs):
        import tensorflow as tf

        for value in tf.nest.flatten([args, kwargs]):
            if is_keras3(value):
                where = " ".join(filter(None, [owner, getattr(self, "_name", None)]))
                raise ZooError(
                    f"{where}: expected Keras 2 objects (tf.keras in TF1 code, tf_keras), "
                    f"found a Keras 3 {type(value).__name__} (import keras, or TF2's "
                    "tf.keras); make it with tf.compat.v1.keras (tf.keras after `import "
                    "tensorflow.compat.v1 as tf`), or keep the whole model in Keras 3 "
                    "outside TF1 code"
                )
        return method(self, *args, **kwargs)

    return refusing_keras3


@functools.cache
def guards():
    """The changes that make tf_keras refuse Keras 3 objects (imports tf_keras): the
    calls of its layers and models (both base classes), ``Sequential.add``, the
    functional ``Model(inputs, outputs)``. Made once, around the methods as tf_keras
    defines them.

    Returns:
        A list of :class:`~zoo.compat.change.Change`.
    """
    engine()
    from tf_keras.src.engine import base_layer, base_layer_v1, functional, sequential

    targets = [
        (base_layer.Layer, "__call__", "layer"),
        (base_layer_v1.Layer, "__call__", "layer"),
        (sequential.Sequential, "add", "Sequential.add of"),
        (functional.Functional, "__init__", "Model"),
    ]
    return [
        Change(f"{cls.__module__}.{cls.__qualname__}.{name}", cls, name,
               _refusing_keras3(cls.__dict__[name], owner))
        for cls, name, owner in targets
    ]  # fmt: skip


class _Keras2(types.ModuleType):
    """``tf.keras`` for TF1 code: each attribute is :func:`engine`'s, looked up on
    first use (which makes the :func:`guards` changes too)."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        import zoo.compat

        value = getattr(engine(), name)
        zoo.compat.apply(guards())
        setattr(self, name, value)
        return value

    def __dir__(self):
        return dir(engine())


KERAS = _Keras2(
    "tensorflow.compat.v1.keras",
    "tf.keras of TF 1.15 / 2.15 (tf_keras's Keras 2, imported on first use), by zoo.compat",
)


def changes():
    """``<namespace>.keras`` for each ``compat.v1`` namespace, and the :func:`guards`
    when tf_keras is loaded already (else they come with its first use).

    Returns:
        A list of :class:`~zoo.compat.change.Change`.
    """
    loaded = "tf_keras" in sys.modules
    return [
        *(Change(f"{ns.__name__}.keras", ns, "keras", KERAS) for ns in v1_namespaces()),
        *(guards() if loaded else ()),
    ]
