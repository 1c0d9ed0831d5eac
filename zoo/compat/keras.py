"""``tf.keras`` as TF1 code reaches it: what :func:`zoo.compat.install` changes.

``keras`` of every ``compat.v1`` namespace (``tf.keras`` after ``import
tensorflow.compat.v1 as tf``) becomes :data:`KERAS`, a module that imports
tf_keras's ``tf.compat.v1.keras`` (Keras 2.21, TF 2.15's tf.keras carried on:
graph-mode layers, ``fit`` with v2 behaviour off, ``backend.get_session``,
``estimator.model_to_estimator`` onto :mod:`zoo.compat.estimator`) on its first
use. ``tf.keras`` of TensorFlow 2 and ``import keras`` stay Keras 3: TF2 code in
the same process is untouched. Why and what was measured: docs/tf1-keras.md.

Usage::

    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
    import zoo.compat
    zoo.compat.install()
    model = tf.keras.Sequential([tf.keras.layers.Dense(10)])  # Keras 2, in graph mode
"""

import importlib
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


class _Keras2(types.ModuleType):
    """``tf.keras`` for TF1 code: each attribute is :func:`engine`'s, looked up on
    first use."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(engine(), name)
        setattr(self, name, value)
        return value

    def __dir__(self):
        return dir(engine())


KERAS = _Keras2(
    "tensorflow.compat.v1.keras",
    "tf.keras of TF 1.15 / 2.15 (tf_keras's Keras 2, imported on first use), by zoo.compat",
)


def changes():
    """``<namespace>.keras`` for each ``compat.v1`` namespace.

    Returns:
        A list of :class:`~zoo.compat.change.Change`.
    """
    return [Change(f"{ns.__name__}.keras", ns, "keras", KERAS) for ns in v1_namespaces()]
