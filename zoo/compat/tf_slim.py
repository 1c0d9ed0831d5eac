"""What tf-slim 1.1.0 needs of TensorFlow's internals that TensorFlow 2.21 changed:
what :func:`zoo.compat.install` changes for it.

* ``tensorflow.python.layers.normalization`` loads ``BatchNormalization`` from
  ``tf_keras.legacy_tf_layers.normalization``, a module neither Keras 3 nor
  tf_keras ships, and tf-slim's default ``batch_norm`` builds that class: the
  module's loader becomes :mod:`layers.tf1`;
* the names tf-slim reads from TensorFlow's internal modules that TensorFlow 2.21
  removed (``ops.Tensor`` in every ``batch_norm`` and ``smart_cond``,
  ``control_flow_ops.cond``, ``array_ops.stack`` ...; see :data:`REMOVED`) come
  back as the public function or class they were; a name that still exists is
  left alone;
* a weight regularizer of TensorFlow's own legacy layers (what tf-slim's
  ``conv2d`` and ``fully_connected`` build, ``weights_regularizer=``) is applied
  to the stored float32 variable when a precision policy
  (``zoo.training.precision``) hands the layer a cast read, and once per
  variable, as TF1 did (on the cast read it was a bfloat16 loss, which
  ``get_total_loss`` cannot add to a float32 one, and a new loss at each reuse).
"""

import functools
import importlib

from zoo.compat.change import Change

_REGULARIZED = "_zoo_regularized"  # set on a variable a legacy layer regularized


# Internal module -> {name: the public API that replaces it} for what tf-slim 1.1.0
# reads and TensorFlow 2.21 no longer has there.
REMOVED = {
    "tensorflow.python.framework.ops": {
        "Tensor": "Tensor", "IndexedSlices": "IndexedSlices",
    },
    "tensorflow.python.ops.array_ops": {"stack": "stack", "unstack": "unstack"},
    "tensorflow.python.ops.control_flow_ops": {
        "cond": "compat.v1.cond", "case": "compat.v1.case",
        "while_loop": "compat.v1.while_loop", "Assert": "compat.v1.Assert",
    },
    "tensorflow.python.ops.variable_scope": {"variable": "compat.v1.Variable"},
}  # fmt: skip


# TensorFlow's internal Keras 2 base layers, whose ``_handle_weight_regularization``
# its legacy layers call (the v1 one in graph mode, where tf-slim builds).
KERAS2_BASE_LAYERS = (
    "tensorflow.python.keras.engine.base_layer",
    "tensorflow.python.keras.engine.base_layer_v1",
)


@functools.cache
def _regularizing_stored_variables(module_name):
    """``Layer._handle_weight_regularization`` of the module ``module_name`` applied
    to the float32 variable behind a precision policy's cast read, once per variable
    (the same function always, wrapping the method as TensorFlow defines it)."""
    from layers.variables import stored_variable

    handle = importlib.import_module(module_name).Layer._handle_weight_regularization

    @functools.wraps(handle)
    def regularize_stored(layer, name, variable, regularizer):
        stored = stored_variable(variable)
        if stored is not variable:
            if getattr(stored, _REGULARIZED, False):
                return None  # a reuse: TF1 regularized a variable when it was made
            setattr(stored, _REGULARIZED, True)
        return handle(layer, name, stored, regularizer)

    return regularize_stored


def changes():
    """The internal names tf-slim reads (each a test names: tests/zoo/test_compat.py).

    Returns:
        A list of :class:`~zoo.compat.change.Change`.
    """
    import tensorflow as tf

    from layers import tf1

    normalization = importlib.import_module("tensorflow.python.layers.normalization")
    found = [Change(normalization.__name__, normalization, "normalization", tf1)]
    for module_name in KERAS2_BASE_LAYERS:
        method = "_handle_weight_regularization"
        layer_class = importlib.import_module(module_name).Layer
        regularize = _regularizing_stored_variables(module_name)
        name = f"{module_name}.Layer.{method}"
        found.append(Change(name, layer_class, method, regularize))
    for module_name, names in REMOVED.items():
        module = importlib.import_module(module_name)
        for attribute, public in names.items():
            value = functools.reduce(getattr, public.split("."), tf)
            name = f"{module_name}.{attribute}"
            found.append(Change(name, module, attribute, value, replace=False))
    return found
