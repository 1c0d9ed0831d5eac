"""TensorFlow's ``compat.v1`` namespaces: what :func:`zoo.compat.install` changes in
them.

``layers`` of every ``compat.v1`` namespace (``tf.compat.v1``, the module
``import tensorflow.compat.v1 as tf`` binds) becomes :mod:`layers.tf1` (under
Keras 3 it raises "`dense` is not available with Keras 3"), and ``nn.rnn_cell``
:mod:`layers.tf1.rnn_cell` (under Keras 3: "`LSTMCell` is not available with
Keras 3"). TF 2.15's names of ``layers.experimental``, ``data.experimental`` and
``tpu.experimental`` that TensorFlow 2.21 and this package lack raise a
:class:`~zoo.compat.contrib.ContribError` naming the replacement (:data:`REFUSED`).
"""

import functools
import importlib
import re
import sys

from zoo.compat import refused
from zoo.compat.change import Change

# TF 2.15's compat.v1 names TensorFlow 2.21 lacks, by module -> the replacement
_TPU_EMBEDDING = ("tf.compat.v1.train.{}Optimizer on an embedding_column in the "
                  "model_fn (TPU embeddings are not provided)")
REFUSED = {
    "layers.experimental": dict.fromkeys(
        ("keras_style_scope", "set_keras_style"),
        "keras.layers (Keras-style variables, owned by the layer), or tf.layers as "
        "they are (variable_scope-style)"),
    "data.experimental": {
        "CheckpointInputPipelineHook": "tf.data.experimental."
        "make_saveable_from_iterator, added to tf.GraphKeys.SAVEABLE_OBJECTS",
    },
    "tpu.experimental": {
        f"{kind}Parameters": _TPU_EMBEDDING.format(optimizer) for kind, optimizer in (
            ("Adagrad", "Adagrad"), ("Adam", "Adam"), ("Ftrl", "Ftrl"),
            ("StochasticGradientDescent", "GradientDescent"))
    },
}  # fmt: skip
_V1_NAMESPACE = re.compile(r"tensorflow(\._api\.v\d)?(\.compat\.v\d)?\.compat\.v1")


def v1_namespaces():
    """Every loaded module that is a ``compat.v1`` namespace (imports
    ``tensorflow.compat.v1``, as TF1 code does), sorted by name."""
    importlib.import_module("tensorflow.compat.v1")
    names = sorted(name for name in sys.modules if _V1_NAMESPACE.fullmatch(name))
    return [sys.modules[name] for name in names]


@functools.cache
def _layers_experimental():
    """``tf.layers.experimental``: refused names only (made once)."""
    return refused.module("tf.layers.experimental", "tensorflow.compat.v1.layers."
                          "experimental", REFUSED["layers.experimental"])  # fmt: skip


@functools.cache
def _hooks(path, module):
    """``(__getattr__, __dir__)`` refusing ``REFUSED[path]`` in TF's ``module``, made
    once (before install() changes it: its own names are read now)."""
    names = dir(module)
    return refused.hooks(f"tf.{path}", module.__name__, REFUSED[path], lambda: names)


def changes():
    """``<namespace>.layers`` and ``<namespace>.nn.rnn_cell`` for each ``compat.v1``
    namespace, ``layers.experimental`` (refused names only), and the refused names
    of each namespace's ``data.experimental`` and ``tpu.experimental`` (their
    ``__getattr__`` and ``__dir__``, PEP 562).

    Returns:
        A list of :class:`~zoo.compat.change.Change`.
    """
    from layers import tf1

    found = [Change("layers.tf1.experimental", tf1, "experimental", _layers_experimental())]
    modules = {}  # id -> (path, module): the namespaces may share them
    for ns in v1_namespaces():
        found.append(Change(f"{ns.__name__}.layers", ns, "layers", tf1))
        found.append(Change(f"{ns.nn.__name__}.rnn_cell", ns.nn, "rnn_cell", tf1.rnn_cell))
        for path in ("data.experimental", "tpu.experimental"):
            module = functools.reduce(getattr, path.split("."), ns)
            modules.setdefault(id(module), (path, module))
    for path, module in modules.values():
        # TF's lazy-loading wrapper sends a failed lookup and dir() to the module it
        # wraps; its own setattr would list __getattr__ in __all__ (import *)
        plain = getattr(module, "_tfmw_wrapped_module", module)
        for key, value in zip(("__getattr__", "__dir__"), _hooks(path, plain), strict=True):
            found.append(Change(f"{module.__name__}.{key}", vars(plain), key, value))
    return found
